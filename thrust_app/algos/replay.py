"""Off-policy experience (DQN, SAC, TD3): a fixed-size ring buffer of transitions on the learner's device.

Observations keep their own dtype (Atari's uint8 frames stay bytes; the nets scale them). Frame-stacked
observations have a leaner form in frame_replay.py, which stores each frame once."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

#: A sampled minibatch: (obs, actions, rewards, next obs, terminated), each with the batch as its first axis.
Batch = tuple[torch.Tensor, ...]


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
        obs_dtype: torch.dtype = torch.float32,
    ) -> None:
        self.capacity = capacity
        self.obs = torch.zeros((capacity, *obs_shape), dtype=obs_dtype, device=device)
        self.next_obs = torch.zeros_like(self.obs)
        self.actions = torch.zeros((capacity, *action_shape), dtype=action_dtype, device=device)
        self.rewards = torch.zeros(capacity, dtype=torch.float32, device=device)
        self.terminated = torch.zeros(capacity, dtype=torch.float32, device=device)
        self.pos = 0
        self.size = 0
        #: numpy views of the storage, made on the first `add_arrays` (CPU buffers only)
        self._arrays: tuple[np.ndarray, ...] | None = None

    def add(
        self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor, next_obs: torch.Tensor, terminated: torch.Tensor
    ) -> None:
        """Append N transitions (tensors on the buffer's device)."""
        self._write(
            (self.obs, self.actions, self.rewards, self.next_obs, self.terminated), obs, action, reward, next_obs, terminated
        )

    def add_arrays(
        self, obs: np.ndarray, action: np.ndarray, reward: np.ndarray, next_obs: np.ndarray, terminated: np.ndarray
    ) -> None:
        """Append N transitions given as numpy arrays (a buffer on the CPU): written into numpy views of the
        storage, a fraction of a microsecond per array where a tensor copy costs a few."""
        if self._arrays is None:
            self._arrays = tuple(t.numpy() for t in (self.obs, self.actions, self.rewards, self.next_obs, self.terminated))
        self._write(self._arrays, obs, action, reward, next_obs, terminated)

    def _write(self, storage: tuple, obs, action, reward, next_obs, terminated) -> None:
        n = obs.shape[0]
        if n > self.capacity:  # only the newest `capacity` survive: write those where a row-by-row ring puts them
            obs, action, reward, next_obs, terminated = (
                t[-self.capacity :] for t in (obs, action, reward, next_obs, terminated)
            )
            self.pos = (self.pos + n - self.capacity) % self.capacity
            self.size = self.capacity
            n = self.capacity
        # Contiguous slices, not an index tensor: a slice copy is one cheap op per array, and an acting step
        # writes one row. A write that runs past the end wraps as two slices.
        first = min(n, self.capacity - self.pos)
        for start, rows in ((self.pos, slice(0, first)), (0, slice(first, n))):
            count = rows.stop - rows.start
            if count == 0:
                continue
            for target, values in zip(storage, (obs, action, reward, next_obs, terminated), strict=True):
                target[start : start + count] = values[rows]
        self.pos = (self.pos + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> Batch:
        rows = torch.randint(0, self.size, (batch_size,), device=self.obs.device, generator=generator)
        # index_select: one call per array, half the cost of advanced indexing's generic path on small batches
        return tuple(
            array.index_select(0, rows) for array in (self.obs, self.actions, self.rewards, self.next_obs, self.terminated)
        )

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
