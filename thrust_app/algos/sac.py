"""SAC (Haarnoja et al., 2018): twin Q critics (`n_critics`, SB3's policy_kwargs field) with Polyak targets, a
tanh-squashed Gaussian actor rescaled to the env's bounds, and automatic entropy tuning. Defaults follow
Stable-Baselines3."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
from torch import nn

from ..config import param
from ..envs.core import Box
from ..nets.policies import QCritics, SquashedGaussianActor, TwinQ
from .off_policy import OffPolicyAlgorithm, OffPolicyConfig, polyak
from .replay import Batch


@dataclass
class SACConfig(OffPolicyConfig):
    """Learning rates of actor, critics and temperature all follow learning_rate and lr_schedule (as SB3's)."""

    hidden: tuple[int, ...] = param((256, 256), "hidden layer sizes of actor and critics")
    init_alpha: float = param(1.0, "initial entropy temperature", gt=0)
    auto_alpha: bool = param(True, "tune the temperature towards the target entropy")
    target_entropy: float = param(0.0, "target entropy; 0 means -(action dimensions), SB3's choice")
    n_critics: int = param(2, "critics; the target and the actor take their minimum (SB3's policy_kwargs field)", ge=1)


class SAC(OffPolicyAlgorithm):
    name = "sac"
    Config = SACConfig
    config: SACConfig
    supports = (Box,)

    def __init__(self, obs_shape, action_space: Box, config: SACConfig, device, seed, obs_dtype="float32", obs_parts=None):
        super().__init__(obs_shape, action_space, config, device, seed, obs_dtype, obs_parts)
        self.actor = SquashedGaussianActor(obs_shape, action_space, config.hidden, obs_parts, config.activation).to(device)
        # two critics: TwinQ, the layout the written-out and compiled updates know; other counts: the reference's
        critics = (
            TwinQ(obs_shape, action_space, config.hidden, obs_parts, config.activation)
            if config.n_critics == 2
            else QCritics(obs_shape, action_space, config.hidden, config.n_critics, obs_parts, config.activation)
        )
        self.critic = critics.to(device)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.log_alpha = torch.tensor([math.log(config.init_alpha)], device=device, requires_grad=True)
        self.target_entropy = config.target_entropy or -float(math.prod(action_space.shape))
        lr = config.learning_rate
        self.actor_opt = torch.optim.Adam([self.actor.flat], lr=lr, fused=True)
        self.critic_opt = torch.optim.Adam([self.critic.flat], lr=lr, fused=True)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=lr, fused=True)

    @property
    def policy(self) -> SquashedGaussianActor:
        return self.actor

    def stateful_parts(self):
        return {
            **super().stateful_parts(),
            "actor": self.actor,
            "critic": self.critic,
            "critic_target": self.critic_target,
            "actor_opt": self.actor_opt,
            "critic_opt": self.critic_opt,
            "alpha_opt": self.alpha_opt,
        }

    def state_dict(self):
        return {**super().state_dict(), "log_alpha": self.log_alpha.detach().clone()}

    def load_state_dict(self, state):
        super().load_state_dict(state)
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])

    def explore(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor.sample(obs)[0]

    @torch.no_grad()
    def sampled_action(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """A draw from the squashed Gaussian, in the env's bounds."""
        return self.explore(obs)

    def update(self, batch: Batch) -> dict[str, torch.Tensor]:
        """The three optimizer steps on `batch`, then the critics' targets follow (Polyak); returns the logs."""
        logs = self.optimize(batch)
        polyak(self.critic_target, self.critic, self.config.tau)
        return logs

    def optimize(self, batch: Batch) -> dict[str, torch.Tensor]:
        """The temperature, critic and actor steps on `batch`, each loss through autograd."""
        config = self.config
        obs, actions, rewards, next_obs, terminated = batch
        new_actions, log_prob = self.actor.sample(obs)
        alpha = self.log_alpha.detach().exp()  # the temperature before its own step serves this update (as SB3's)
        if config.auto_alpha:
            alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
            self.alpha_opt.zero_grad(set_to_none=True)
            alpha_loss.backward()
            self.alpha_opt.step()

        with torch.no_grad():
            next_actions, next_log_prob = self.actor.sample(next_obs)
            next_q = self.critic_target.smallest(next_obs, next_actions) - alpha * next_log_prob
            target = rewards + config.gamma * (1.0 - terminated) * next_q  # y = r + gamma (min_i Q'_i - alpha log pi)
        # L_Q = 1/2 sum_i mse(Q_i, y), SB3's form (CleanRL's has no 1/2): under Adam the two differ only where a
        # gradient is near Adam's eps, and in the logged loss
        critic_loss = 0.5 * sum(nn.functional.mse_loss(q, target) for q in self.critic(obs, actions))
        self.critic.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()

        actor_loss = (alpha * log_prob - self.critic.smallest(obs, new_actions)).mean()
        # Gradients for the actor only: the critics' weight gradients would be two of the largest
        # matmuls of the step, computed to be thrown away (SB3 computes them).
        self.actor.zero_grad()
        actor_loss.backward(inputs=list(self.actor.parameters()))
        self.actor_opt.step()
        return {"critic_loss": critic_loss.detach(), "actor_loss": actor_loss.detach(), "alpha": alpha[0]}
