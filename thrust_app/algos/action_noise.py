"""Exploration noise for deterministic policies (TD3, DDPG), with Stable-Baselines3's semantics: added to
the policy's action in [-1, 1] units, the sum clipped to [-1, 1]; one process per env, drawn from the
algorithm's generator.

- `normal`: eps ~ N(0, std^2), independent every step.
- `ornstein-uhlenbeck`: x <- x + theta (0 - x) dt + std sqrt(dt) N(0, 1), theta 0.15, dt 0.01 (SB3's
  `OrnsteinUhlenbeckActionNoise`), restarted at 0 when the env's episode ends.
- `none`: the policy's own action.
"""

from __future__ import annotations

import math
from typing import Literal

import torch

NoiseType = Literal["normal", "ornstein-uhlenbeck", "none"]
OU_THETA, OU_DT = 0.15, 1e-2


class ActionNoise:
    """The noise of `n_envs` envs, each with `action_dim` components."""

    def __init__(
        self, kind: NoiseType, std: float, n_envs: int, action_dim: int, generator: torch.Generator, device: torch.device
    ) -> None:
        self.kind, self.std, self.generator = kind, std, generator
        self.state = torch.zeros((n_envs, action_dim), device=device)  # the OU process's x per env

    def sample(self) -> torch.Tensor:
        """The next step's noise for every env, shape (n_envs, action_dim)."""
        if self.kind == "none":
            return torch.zeros_like(self.state)
        normal = torch.randn(self.state.shape, generator=self.generator, device=self.state.device)
        if self.kind == "normal":
            return self.std * normal
        # x_{t+1} = x_t + theta (mu - x_t) dt + sigma sqrt(dt) N(0, 1), mu = 0
        self.state += OU_THETA * (0.0 - self.state) * OU_DT + self.std * math.sqrt(OU_DT) * normal
        return self.state.clone()

    def reset(self, done: torch.Tensor) -> None:
        """Restart the process of the envs whose episode just ended."""
        if self.kind == "ornstein-uhlenbeck":
            self.state[torch.as_tensor(done, device=self.state.device)] = 0.0

    def state_dict(self) -> dict:
        return {"state": self.state.clone()}

    def load_state_dict(self, state: dict) -> None:
        self.state.copy_(state["state"])
