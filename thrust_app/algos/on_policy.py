"""The part A2C and PPO share: their common settings, an actor-critic, a rollout with GAE, and one
optimizer step on a loss the algorithm file writes."""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Callable
from typing import Literal

import torch

from ..config import ON_POLICY_UPDATE_HELP, AlgoConfig, ConfigError, check_memory, param
from ..envs.core import Box, Discrete, MultiDiscrete
from ..nets.flat_params import clip_grad_norm_
from ..nets.policies import ActorCritic
from .base import Algorithm, Iteration
from .rollout import CollectedSteps, Rollout, collect_steps, compute_gae, make_rollout

#: `loss_fn(log_prob, entropy, value) -> (loss, logs)`: what `optimize` minimises (a2c_loss, ppo_loss).
ActorCriticLoss = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


@dataclasses.dataclass
class OnPolicyConfig(AlgoConfig):
    """Settings A2C and PPO share (each redeclares the defaults it changes)."""

    n_envs: int = param(8, "environment copies stepped together", ge=1)
    n_steps: int = param(128, "steps per env in each rollout (a rollout is n_steps * n_envs transitions)", ge=1)
    gae_lambda: float = param(0.95, "GAE lambda: bias/variance trade-off of the advantages (1.0 = n-step returns)", ge=0, le=1)
    normalize_advantage: bool = param(True, "normalise advantages (PPO: per minibatch, A2C: per rollout)")
    ent_coef: float = param(0.0, "entropy bonus weight", ge=0)
    vf_coef: float = param(
        0.5,
        "value loss weight; the value loss is mean((V - R)^2) as in SB3 (CleanRL's is 0.5 * mean((V - R)^2), "
        "so CleanRL's vf_coef 0.5 is 0.25 here)",
        ge=0,
    )
    max_grad_norm: float = param(0.5, "gradient norm clip", gt=0)
    activation: Literal["tanh", "relu"] = param("tanh", "MLP activation")
    vf_hidden: tuple[int, ...] = param(
        (), "the value MLP's layer sizes where they differ from the policy's `hidden` (SB3's net_arch=dict(pi, vf))"
    )
    log_std_init: float = param(0.0, "initial log std of the Gaussian policy (Box actions)")
    ortho_init: bool = param(
        True, "orthogonal initialisation of the layers and heads (SB3's ortho_init; false: torch's defaults)"
    )
    use_sde: bool = param(
        False,
        "gSDE, generalised state-dependent exploration (Box actions): the Gaussian's noise a learned linear function "
        "of the policy's features, its weights drawn anew every sde_sample_freq steps (nets/policies.py ActionHead)",
    )
    sde_sample_freq: int = param(-1, "gSDE: steps between new exploration weights (-1: once per rollout)", ge=-1)
    update: Literal["handwritten", "numba", "reference"] = param("handwritten", ON_POLICY_UPDATE_HELP)

    def validate(self) -> None:
        super().validate()
        if any(size < 1 for size in self.vf_hidden):
            raise ConfigError(f"vf_hidden sizes must be >= 1, got {self.vf_hidden}")
        if self.sde_sample_freq == 0:
            raise ConfigError("sde_sample_freq must be -1 (once per rollout) or >= 1, got 0")

    def sde(self) -> int | None:
        """The nets' `sde_sample_freq` argument: None without gSDE."""
        return self.sde_sample_freq if self.use_sde else None

    def check_fits(self, timesteps: int, obs_bytes: int) -> None:
        """One rollout must fit the budget and the machine's memory."""
        rollout = self.n_steps * self.n_envs
        if rollout > timesteps:
            raise ConfigError(
                f"one rollout is n_steps x n_envs = {rollout:,} steps, more than the whole budget of "
                f"{timesteps:,}; lower n_steps or n_envs, or raise --timesteps"
            )
        # per step: observation (in its dtype), action, log-prob, value, reward, ends, returns (float32), kept
        # twice over; and the towers' activations for as many rows at once (A2C's update takes the whole rollout)
        storage = rollout * (obs_bytes + 8 * 4) * 2
        activations = rollout * 2 * sum(self.hidden) * 4 * 4
        check_memory(storage + activations, f"a rollout of {rollout:,} steps", "lower n_steps or n_envs")


class OnPolicyAlgorithm(Algorithm):
    """Collect `n_steps` per env with the current policy, compute GAE, call `update`."""

    config: OnPolicyConfig
    uses_masks = True
    supports = (Discrete, Box, MultiDiscrete)

    def __init__(self, obs_shape, action_space, config: OnPolicyConfig, device, seed, obs_dtype="float32", obs_parts=None):
        super().__init__(obs_shape, action_space, config, device, seed, obs_dtype, obs_parts)
        self.net = self.make_net().to(device)
        self.optimizer = self.make_optimizer()

    def make_net(self) -> ActorCritic:
        """The actor-critic this algorithm trains (recurrent PPO builds one with memory)."""
        config = self.config
        return ActorCritic(
            self.obs_shape,
            self.action_space,
            config.hidden,
            config.activation,
            config.log_std_init,
            self.obs_parts,
            config.ortho_init,
            config.vf_hidden,
            config.sde(),
        )

    @abstractmethod
    def make_optimizer(self) -> torch.optim.Optimizer:
        """The optimizer of `self.net.flat`, the one buffer that holds all of the net's parameters."""

    @abstractmethod
    def update(self, rollout: Rollout, advantages: torch.Tensor, returns: torch.Tensor) -> dict[str, float]:
        """Learn from one rollout; returns the losses to log."""

    @property
    def policy(self) -> ActorCritic:
        return self.net

    @torch.no_grad()
    def sampled_action(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """A draw from pi(.|s) (among the allowed actions), as the env receives it (Box actions clipped)."""
        return self.net.env_action(self.net.sample(obs, mask)[0])

    def stateful_parts(self):
        return {"net": self.net, "optimizer": self.optimizer}

    def optimize(
        self, obs: torch.Tensor, actions: torch.Tensor, loss_fn: ActorCriticLoss, masks: torch.Tensor | None = None
    ) -> torch.Tensor:
        """One optimizer step on `loss_fn(log_prob, entropy, value)` at (obs, actions) (under the action `masks`
        the samples were drawn with), gradients clipped to `max_grad_norm`; returns the logs `loss_fn` reports.
        `obs` is what the net's `evaluate_actions` reads: a batch of observations (a recurrent net's Sequences)."""
        logs = self.backward(obs, actions, loss_fn) if masks is None else self.backward(obs, actions, loss_fn, masks)
        clip_grad_norm_(self.net.flat, self.config.max_grad_norm)
        self.optimizer_step()
        return logs.detach()

    def backward(
        self, obs: torch.Tensor, actions: torch.Tensor, loss_fn: ActorCriticLoss, masks: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The net's gradients of `loss_fn(log_prob, entropy, value)` at (obs, actions), by autograd; the logs."""
        self.net.zero_grad()
        loss, logs = loss_fn(*self.net.evaluate_actions(obs, actions, masks))
        loss.backward()
        return logs

    def optimizer_step(self) -> None:
        self.optimizer.step()

    def collect(self, env, env_io, obs) -> tuple[Rollout, torch.Tensor]:
        """`n_steps` of every env with the current policy; the rollout and the observation to go on from."""
        steps, last_values, obs = self.collect_steps((env, env_io, obs))
        return make_rollout(steps, last_values), obs

    def collect_steps(self, inputs: tuple) -> CollectedSteps:
        """`rollout.collect_steps` from (env, env_io, obs) with this policy (one tuple: a step a CUDA graph can wrap)."""
        env, env_io, obs = inputs
        return collect_steps(env, env_io, obs, self.net, self.config.n_steps, self.config.gamma)

    def iteration_steps(self, num_envs: int) -> int:
        return self.config.n_steps * num_envs

    def iteration(self, env, env_io, obs) -> Iteration:
        config = self.config
        rollout, obs = self.collect(env, env_io, obs)
        advantages, returns = compute_gae(
            rollout.rewards, rollout.values, rollout.dones, rollout.last_values, config.gamma, config.gae_lambda
        )
        stats = self.update(rollout, advantages, returns)
        steps = self.iteration_steps(env.num_envs)
        self.num_timesteps += steps
        return Iteration(obs, steps, rollout.episode_returns, rollout.episode_lengths, stats)
