"""TD3 (Fujimoto et al., 2018) and DDPG (Lillicrap et al., 2016) as Stable-Baselines3 defines them.

TD3: a deterministic actor mu(s) in [-1, 1] rescaled to the env's bounds, explored with action noise
(action_noise.py); twin critics trained towards y = r + gamma (1 - terminated) min_i Q'_i(s', a~'), where
a~' = clip(mu'(s') + clip(eps, -c, c), -1, 1), eps ~ N(0, target_policy_noise^2) (target policy smoothing);
the actor and both targets move every `policy_delay`-th critic step (delayed updates), the targets by
Polyak averaging. DDPG is TD3 with one critic, no smoothing and no delay (SB3's `DDPG` class).

Reference only: torch acting and autograd updates (`acting` and `update` have no faster form here yet).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from ..config import param
from ..envs.core import Box
from ..nets.policies import DeterministicActor, QCritics
from .action_noise import ActionNoise
from .off_policy import OffPolicyAlgorithm, OffPolicyConfig, polyak
from .replay import Batch

REFERENCE_ONLY = "TD3 and DDPG run their reference (torch) form only"


@dataclass
class TD3Config(OffPolicyConfig):
    """Actor and critics share learning_rate and lr_schedule (as SB3's)."""

    learning_rate: float = param(1e-3, "Adam step size of actor and critics at the start of training", gt=0)
    hidden: tuple[int, ...] = param((400, 300), "hidden layer sizes of actor and critics")
    policy_delay: int = param(2, "critic steps per actor step (the targets move with the actor)", ge=1)
    target_policy_noise: float = param(0.2, "std of the smoothing noise on the target action (in [-1, 1] units)", ge=0)
    target_noise_clip: float = param(0.5, "bound of the smoothing noise (0: no smoothing)", ge=0)
    n_critics: int = param(2, "critics; the target takes their minimum", ge=1)
    noise_type: Literal["normal", "ornstein-uhlenbeck", "none"] = param(
        "normal",
        "exploration noise added to the action in [-1, 1] units: normal, ornstein-uhlenbeck or none (the zoo's "
        "noise_type; SB3's own default is none, which explores only through the warm-up)",
    )
    noise_std: float = param(0.1, "std of the exploration noise (the zoo's noise_std)", ge=0)
    acting: Literal["torch"] = param("torch", REFERENCE_ONLY)
    update: Literal["reference"] = param("reference", REFERENCE_ONLY)


@dataclass
class DDPGConfig(TD3Config):
    """TD3's settings at SB3's DDPG values: one critic, no delay, no target smoothing."""

    policy_delay: int = param(1, "critic steps per actor step (the targets move with the actor)", ge=1)
    target_policy_noise: float = param(0.1, "std of the smoothing noise on the target action (unused: clip 0)", ge=0)
    target_noise_clip: float = param(0.0, "bound of the smoothing noise (0: no smoothing)", ge=0)
    n_critics: int = param(1, "critics; the target takes their minimum", ge=1)


def td3_target(
    actor_target: DeterministicActor,
    critic_target: QCritics,
    next_obs: torch.Tensor,
    rewards: torch.Tensor,
    terminated: torch.Tensor,
    gamma: float,
    smoothing: torch.Tensor,
) -> torch.Tensor:
    """y = r + gamma (1 - terminated) min_i Q'_i(s', a~'), a~' = clip(mu'(s') + smoothing, -1, 1) in [-1, 1]
    units (rescaled to the env's bounds for the critics)."""
    next_unit = (actor_target.unit_action(next_obs) + smoothing).clamp(-1.0, 1.0)
    next_q = critic_target.smallest(next_obs, actor_target.scale(next_unit))
    return rewards + gamma * (1.0 - terminated) * next_q


class TD3(OffPolicyAlgorithm):
    name = "td3"
    Config = TD3Config
    config: TD3Config
    supports = (Box,)

    def __init__(self, obs_shape, action_space: Box, config: TD3Config, device, seed, obs_dtype="float32", obs_parts=None):
        super().__init__(obs_shape, action_space, config, device, seed, obs_dtype, obs_parts)
        self.actor = DeterministicActor(obs_shape, action_space, config.hidden, obs_parts, config.activation).to(device)
        self.actor_target = copy.deepcopy(self.actor).requires_grad_(False)
        critics = QCritics(obs_shape, action_space, config.hidden, config.n_critics, obs_parts, config.activation)
        self.critic = critics.to(device)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.actor_opt = torch.optim.Adam([self.actor.flat], lr=config.learning_rate, fused=True)
        self.critic_opt = torch.optim.Adam([self.critic.flat], lr=config.learning_rate, fused=True)
        action_dim = math.prod(action_space.shape)
        self.noise = ActionNoise(config.noise_type, config.noise_std, config.n_envs, action_dim, self.generator, device)
        self.n_updates = 0
        self.actor_loss = torch.zeros((), device=device)  #: the last actor step's loss (logged every step)

    @property
    def policy(self) -> DeterministicActor:
        return self.actor

    def stateful_parts(self):
        return {
            **super().stateful_parts(),
            "actor": self.actor,
            "actor_target": self.actor_target,
            "critic": self.critic,
            "critic_target": self.critic_target,
            "actor_opt": self.actor_opt,
            "critic_opt": self.critic_opt,
            "noise": self.noise,
        }

    def state_dict(self):
        return {**super().state_dict(), "n_updates": self.n_updates}

    def load_state_dict(self, state):
        super().load_state_dict(state)
        self.n_updates = state["n_updates"]

    def explore(self, obs: torch.Tensor) -> torch.Tensor:
        """The behaviour policy: clip(mu(s) + noise, -1, 1), rescaled to the env's bounds."""
        return self.actor.scale((self.actor.unit_action(obs) + self.noise.sample()).clamp(-1.0, 1.0))

    def random_actions(self, n: int, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The warm-up's uniform actions plus the exploration noise, clipped: SB3 adds the action noise to every
        action before learning_starts too (`_sample_action`), so its process runs from the first step."""
        unit = torch.rand((n, *self.action_space.shape), generator=self.generator, device=self.device) * 2.0 - 1.0
        return self.actor.scale((unit + self.noise.sample()).clamp(-1.0, 1.0))

    def after_env_step(self, done) -> None:
        super().after_env_step(done)
        self.noise.reset(done)

    def update(self, batch: Batch) -> dict[str, torch.Tensor]:
        """One critic step; every policy_delay-th call also an actor step and the targets' Polyak step."""
        config = self.config
        obs, actions, rewards, next_obs, terminated = batch
        self.n_updates += 1
        with torch.no_grad():
            smoothing = torch.randn(actions.shape, generator=self.generator, device=self.device)
            smoothing = (config.target_policy_noise * smoothing).clamp(-config.target_noise_clip, config.target_noise_clip)
            target = td3_target(self.actor_target, self.critic_target, next_obs, rewards, terminated, config.gamma, smoothing)
        critic_loss = sum(nn.functional.mse_loss(q, target) for q in self.critic(obs, actions))
        self.critic.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()

        if self.n_updates % config.policy_delay == 0:
            actor_loss = -self.critic(obs, self.actor.act(obs))[0].mean()  # -Q_1(s, mu(s))
            self.actor.zero_grad()
            actor_loss.backward(inputs=list(self.actor.parameters()))  # the critic's gradients are not needed
            self.actor_opt.step()
            polyak(self.critic_target, self.critic, config.tau)
            polyak(self.actor_target, self.actor, config.tau)
            self.actor_loss = actor_loss.detach()
        return {"critic_loss": critic_loss.detach(), "actor_loss": self.actor_loss}


class DDPG(TD3):
    name = "ddpg"
    Config = DDPGConfig
    config: DDPGConfig
