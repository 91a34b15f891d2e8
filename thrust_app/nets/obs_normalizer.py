"""Observation normalisation as a module: the one formula for training (training/normalization.py), the policy a
run evaluates and exports, and SB3 `VecNormalize` files brought in by `thrust import`."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class ObsNormalizer(nn.Module):
    """VecNormalize's observation step: clip((obs - mean) / sqrt(var + eps), -clip, clip)."""

    def __init__(self, mean: np.ndarray, var: np.ndarray, epsilon: float, clip: float) -> None:
        super().__init__()
        self.epsilon, self.clip = float(epsilon), float(clip)
        self.register_buffer("mean", torch.zeros(np.shape(mean), dtype=torch.float32))
        self.register_buffer("std", torch.ones(np.shape(mean), dtype=torch.float32))
        self.set_statistics(mean, var)

    def set_statistics(self, mean: np.ndarray, var: np.ndarray) -> None:
        """Take new running statistics (in place: a module holding this one sees them). std = sqrt(var + eps) is
        taken in float64, then stored in float32. Written through numpy views of the buffers, a few microseconds
        (the training env calls this every step), so for a normaliser still on the CPU: every caller's is (a
        copy on another device comes from `.to` or `load_state_dict`)."""
        np.copyto(self.mean.numpy(), mean, casting="same_kind")
        np.sqrt(np.asarray(var, dtype=np.float64) + self.epsilon, out=self.std.numpy(), casting="same_kind")

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.clamp((obs - self.mean) / self.std, -self.clip, self.clip)

    def normalize_array(self, obs: np.ndarray) -> np.ndarray:
        """`forward` on a numpy batch, in float32 as forward computes it (the same operations, so the same bits), for
        a normaliser on the CPU: what the training env calls on every step's observations."""
        return np.clip((np.asarray(obs, np.float32) - self.mean.numpy()) / self.std.numpy(), -self.clip, self.clip)


class NormalizedPolicy(nn.Module):
    """A policy trained on normalised observations, acting on raw ones: act(obs) = policy.act(normalizer(obs))."""

    def __init__(self, policy: nn.Module, normalizer: ObsNormalizer) -> None:
        super().__init__()
        self.policy, self.normalizer = policy, normalizer

    def act(self, obs: torch.Tensor, *mask: torch.Tensor, **state: torch.Tensor):
        return self.policy.act(self.normalizer(obs), *mask, **state)

    @property
    def state_size(self) -> int:
        """The width of the policy's memory (recurrent policies), 0 without one."""
        return getattr(self.policy, "state_size", 0)

    def forward(self, obs: torch.Tensor):
        return self.act(obs)
