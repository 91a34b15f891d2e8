"""DQN (Mnih et al., 2015), with double-Q targets (van Hasselt et al., 2016) as an option.

Epsilon-greedy exploration on a linear schedule moved every env step, a replay buffer, a target network
copied every `target_update_interval` env steps, and a Huber (SB3, the default) or squared (CleanRL) TD
loss. Defaults are Stable-Baselines3's (tests/algos/test_sb3_defaults.py), so a zoo preset means what it
means in SB3.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from ..config import param
from ..envs.core import Discrete
from ..nets.flat_params import clip_grad_norm_
from ..nets.policies import QNetwork, masked
from .off_policy import OffPolicyAlgorithm, OffPolicyConfig, polyak, uniform_allowed
from .replay import Batch


@dataclass
class DQNConfig(OffPolicyConfig):
    learning_rate: float = param(1e-4, "Adam step size at the start of training", gt=0)
    batch_size: int = param(32, "minibatch size", ge=1)
    train_freq: int = param(4, "env steps (per env) between learning phases", ge=1)
    tau: float = param(1.0, "target update weight (1.0 = hard copy)", gt=0, le=1)
    target_update_interval: int = param(10_000, "env steps between target network updates", ge=1)
    exploration_fraction: float = param(0.1, "fraction of training over which epsilon decays", gt=0, le=1)
    exploration_initial_eps: float = param(1.0, "epsilon at the start", ge=0, le=1)
    exploration_final_eps: float = param(0.05, "epsilon after the decay", ge=0, le=1)
    double_dqn: bool = param(
        False,
        "double DQN: pick the next action with the online net, value it with the target net. Off, as in SB3's "
        "DQN, which the zoo's presets are tuned for",
    )
    max_grad_norm: float = param(10.0, "gradient norm clip", gt=0)
    loss: Literal["huber", "mse"] = param(
        "huber",
        "TD loss: huber (SB3, the Nature DQN's clipped error) or mse (CleanRL). Huber's gradient is capped "
        "at 1 per sample, so with few, small updates (CleanRL's lr 2.5e-4, one step per 10 env steps) the Q-values "
        "settle near 1/(1-gamma) instead of the returns, and the policy collapses: use mse with CleanRL's settings",
    )


def dqn_loss(
    q_net: QNetwork, target_net: QNetwork, batch: Batch, gamma: float, double: bool, loss: str = "huber"
) -> torch.Tensor:
    """The TD loss between Q(s, a) and the (double) DQN target y = r + gamma * (1 - terminated) * Q'(s', a'),
    the max (or double-Q argmax) over the actions allowed at s' where the batch carries action masks."""
    obs, actions, rewards, next_obs, terminated, *next_mask = batch
    allowed = next_mask[0] if next_mask else None
    with torch.no_grad():
        next_q = masked(target_net(next_obs), allowed)
        if double:
            next_q = next_q.gather(1, masked(q_net(next_obs), allowed).argmax(1, keepdim=True)).squeeze(1)
        else:
            next_q = next_q.max(1).values
        target = rewards + gamma * (1.0 - terminated) * next_q
    q = q_net(obs).gather(1, actions.unsqueeze(1)).squeeze(1)
    if loss == "mse":
        return nn.functional.mse_loss(q, target)
    return nn.functional.smooth_l1_loss(q, target)


def uniform_action(v: torch.Tensor, n_actions: int) -> torch.Tensor:
    """floor(v * n) for v ~ U[0, 1): each of the n actions equally likely (clamped: v * n can round up to n)."""
    return (v * n_actions).long().clamp_(max=n_actions - 1)


class DQN(OffPolicyAlgorithm):
    name = "dqn"
    Config = DQNConfig
    config: DQNConfig
    supports = (Discrete,)
    uses_masks = True

    def __init__(self, obs_shape, action_space, config: DQNConfig, device, seed, obs_dtype="float32", obs_parts=None):
        super().__init__(obs_shape, action_space, config, device, seed, obs_dtype, obs_parts)
        self.q_net = QNetwork(obs_shape, action_space.n, config.hidden, obs_parts, config.activation).to(device)
        self.target_net = copy.deepcopy(self.q_net).requires_grad_(False)
        self.optimizer = torch.optim.Adam([self.q_net.flat], lr=config.learning_rate, fused=True)
        self.exploration_rate = config.exploration_initial_eps
        self._last_target_update = 0

    @property
    def policy(self) -> QNetwork:
        return self.q_net

    def stateful_parts(self):
        return {**super().stateful_parts(), "q_net": self.q_net, "target_net": self.target_net, "optimizer": self.optimizer}

    def state_dict(self):
        return {**super().state_dict(), "last_target_update": self._last_target_update}

    def load_state_dict(self, state):
        super().load_state_dict(state)
        self._last_target_update = state["last_target_update"]

    def apply_schedules(self, progress_remaining: float) -> None:
        """The learning rate at `progress_remaining` (the progress when the iteration learns); epsilon at the step the
        run is at, where the next action is drawn (it then moves every env step: `after_env_step`)."""
        super().apply_schedules(progress_remaining)
        now = progress_remaining if not self.total_timesteps else max(0.0, 1.0 - self.num_timesteps / self.total_timesteps)
        self.set_exploration_rate(now)

    def set_exploration_rate(self, progress_remaining: float) -> None:
        """Epsilon falls linearly from its initial to its final value over the first exploration_fraction
        of training, then stays (SB3's schedule): eps = eps_0 + min(1, (1 - p) / fraction) * (eps_final - eps_0)."""
        config = self.config
        decayed = min(1.0, (1.0 - progress_remaining) / config.exploration_fraction)
        self.exploration_rate = config.exploration_initial_eps + decayed * (
            config.exploration_final_eps - config.exploration_initial_eps
        )

    def explore(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Epsilon-greedy: per env, u and v ~ U[0, 1) in one draw; where u < epsilon a uniform random action
        floor(v * n_actions), else argmax_a Q(s, a); both among the allowed actions where `mask` says."""
        greedy = masked(self.q_net(obs), mask).argmax(1)
        u, v = torch.rand((2, obs.shape[0]), generator=self.generator, device=self.device)
        random = uniform_action(v, self.action_space.n) if mask is None else uniform_allowed(v, mask)
        return torch.where(u < self.exploration_rate, random, greedy)

    @torch.no_grad()
    def sampled_action(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Epsilon-greedy at the current exploration rate, as SB3's DQN predicts when not deterministic."""
        return self.explore(obs, mask)

    def update(self, batch: Batch) -> dict[str, torch.Tensor]:
        """One gradient step on the TD loss, its gradient clipped to max_grad_norm; returns the loss."""
        config = self.config
        loss = dqn_loss(self.q_net, self.target_net, batch, config.gamma, config.double_dqn, config.loss)
        self.q_net.zero_grad()
        loss.backward()
        clip_grad_norm_(self.q_net.flat, config.max_grad_norm)
        self.optimizer.step()
        return {"q_loss": loss.detach()}

    def extra_stats(self) -> dict[str, float]:
        return {"epsilon": self.exploration_rate}

    def after_env_step(self, done) -> None:
        """After every vec-env step, as SB3 does: epsilon for the next step, and the target copied once
        target_update_interval env steps have passed since the last copy."""
        super().after_env_step(done)
        if self.total_timesteps:
            self.set_exploration_rate(max(0.0, 1.0 - self.num_timesteps / self.total_timesteps))
        if self.num_timesteps - self._last_target_update >= self.config.target_update_interval:
            polyak(self.target_net, self.q_net, self.config.tau)
            self._last_target_update = self.num_timesteps
