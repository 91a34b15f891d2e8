"""Off-policy experience (DQN, SAC): a fixed-size ring buffer of transitions on the learner's device."""

from __future__ import annotations

from collections.abc import Sequence

import torch


class ReplayBuffer:
    """Stores (obs, action, reward, next_obs, terminated) for N envs per `add`; samples uniformly.

    `next_obs` is the observation the step reached before any auto-reset, and `terminated` (not
    truncated) decides whether the target bootstraps, so time limits do not look like deaths.
    """

    def __init__(
        self,
        capacity: int,
        obs_shape: Sequence[int],
        action_shape: Sequence[int],
        action_dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        self.capacity = capacity
        self.obs = torch.zeros((capacity, *obs_shape), dtype=torch.float32, device=device)
        self.next_obs = torch.zeros_like(self.obs)
        self.actions = torch.zeros((capacity, *action_shape), dtype=action_dtype, device=device)
        self.rewards = torch.zeros(capacity, dtype=torch.float32, device=device)
        self.terminated = torch.zeros(capacity, dtype=torch.float32, device=device)
        self.pos = 0
        self.size = 0

    def add(
        self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor, next_obs: torch.Tensor, terminated: torch.Tensor
    ) -> None:
        n = obs.shape[0]
        idx = (torch.arange(n, device=obs.device) + self.pos) % self.capacity
        self.obs[idx] = obs
        self.actions[idx] = action
        self.rewards[idx] = reward
        self.next_obs[idx] = next_obs
        self.terminated[idx] = terminated.float()
        self.pos = (self.pos + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> tuple[torch.Tensor, ...]:
        idx = torch.randint(0, self.size, (batch_size,), device=self.obs.device, generator=generator)
        return self.obs[idx], self.actions[idx], self.rewards[idx], self.next_obs[idx], self.terminated[idx]

    def state_dict(self) -> dict:
        return {
            "obs": self.obs[: self.size],
            "next_obs": self.next_obs[: self.size],
            "actions": self.actions[: self.size],
            "rewards": self.rewards[: self.size],
            "terminated": self.terminated[: self.size],
            "pos": self.pos,
            "size": self.size,
        }

    def load_state_dict(self, state: dict) -> None:
        n = state["size"]
        for key in ("obs", "next_obs", "actions", "rewards", "terminated"):
            getattr(self, key)[:n] = state[key]
        self.pos = state["pos"]
        self.size = n
