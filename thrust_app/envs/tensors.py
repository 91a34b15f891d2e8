"""The boundary between a vec env's arrays (numpy, or torch on some device) and the learner's tensors."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch

from .vec import BatchStep, VecEnv


class TensorStep(NamedTuple):
    """A BatchStep with every array a tensor on the learner's device."""

    obs: torch.Tensor
    reward: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    final_obs: torch.Tensor
    episode_return: torch.Tensor
    episode_length: torch.Tensor
    episode_end: torch.Tensor | None = None


class EnvIO:
    """Moves arrays between one vec env and one torch device; a no-op when the env already is torch there."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def env_on_device(self, env: VecEnv) -> bool:
        """True when the env's arrays already are torch tensors (on any device): no host copies."""
        return env.backend.name == "torch"

    def tensor(self, x: Any) -> torch.Tensor:
        if isinstance(x, torch.Tensor):
            return x.to(self.device, non_blocking=True)
        t = torch.from_numpy(np.ascontiguousarray(x))
        return t if self.device.type == "cpu" else t.to(self.device)  # skip a no-op call per array per step

    def masks(self, env: VecEnv) -> torch.Tensor | None:
        """The env's action masks at its current observations as a bool tensor here, or None without masks."""
        masks = env.action_masks()
        return None if masks is None else self.tensor(masks)

    def final_masks(self, env: VecEnv) -> torch.Tensor | None:
        """The env's action masks at its last step's final observations, or None without masks."""
        masks = env.final_action_masks()
        return None if masks is None else self.tensor(masks)

    def reset(self, env: VecEnv, seed: int | None = None) -> torch.Tensor:
        return self.tensor(env.reset(seed))

    def step(self, env: VecEnv, actions: torch.Tensor) -> TensorStep:
        if env.backend.name == "numpy":
            actions = actions.cpu().numpy()
        else:
            actions = actions.to(env.backend.device)
        out: BatchStep = env.step(actions)
        return TensorStep(*(None if x is None else self.tensor(x) for x in out))
