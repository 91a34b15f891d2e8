"""Off-policy experience (DQN, SAC, TD3): a fixed-size ring buffer of transitions on the learner's device.

Observations keep their own dtype (Atari's uint8 frames stay bytes; the nets scale them). Frame-stacked
observations have a leaner form in frame_replay.py, which stores each frame once."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

#: A sampled minibatch: (obs, actions, rewards, next obs, terminated), each with the batch as its first axis; from
#: an env with action masks also the actions allowed at each next obs.
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
        #: the actions allowed at each next obs, for an env that offers action masks (allocated on its first add)
        self.next_masks: torch.Tensor | None = None

    def add(
        self,
        obs: torch.Tensor,
        action: torch.Tensor,
        reward: torch.Tensor,
        next_obs: torch.Tensor,
        terminated: torch.Tensor,
        next_mask: torch.Tensor | None = None,
    ) -> None:
        """Append N transitions (tensors on the buffer's device); `next_mask`: the actions allowed at next_obs,
        for an env that offers action masks (kept from the first such add on, and sampled as a sixth array)."""
        storage = [self.obs, self.actions, self.rewards, self.next_obs, self.terminated]
        values = [obs, action, reward, next_obs, terminated]
        if next_mask is not None:
            if self.next_masks is None:
                self.next_masks = torch.ones((self.capacity, next_mask.shape[1]), dtype=torch.bool, device=self.obs.device)
            storage.append(self.next_masks)
            values.append(next_mask)
        self._write(tuple(storage), *values)

    def add_arrays(
        self, obs: np.ndarray, action: np.ndarray, reward: np.ndarray, next_obs: np.ndarray, terminated: np.ndarray
    ) -> None:
        """Append N transitions given as numpy arrays (a buffer on the CPU): written into numpy views of the
        storage, a fraction of a microsecond per array where a tensor copy costs a few."""
        if self._arrays is None:
            self._arrays = tuple(t.numpy() for t in (self.obs, self.actions, self.rewards, self.next_obs, self.terminated))
        self._write(self._arrays, obs, action, reward, next_obs, terminated)

    def _write(self, storage: tuple, *values) -> None:
        n = values[0].shape[0]
        if n > self.capacity:  # only the newest `capacity` survive: write those where a row-by-row ring puts them
            values = tuple(t[-self.capacity :] for t in values)
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
            for target, value in zip(storage, values, strict=True):
                target[start : start + count] = value[rows]
        self.pos = (self.pos + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> Batch:
        return self.sample_rows(torch.randint(0, self.size, (batch_size,), device=self.obs.device, generator=generator))

    def sample_rows(self, rows: torch.Tensor) -> Batch:
        """The transitions at `rows`, each array a new tensor."""
        # index_select: one call per array, half the cost of advanced indexing's generic path on small batches
        arrays = (self.obs, self.actions, self.rewards, self.next_obs, self.terminated)
        if self.next_masks is not None:
            arrays = (*arrays, self.next_masks)
        return tuple(array.index_select(0, rows) for array in arrays)

    def state_dict(self) -> dict:
        return {
            "obs": self.obs[: self.size],
            "next_obs": self.next_obs[: self.size],
            "actions": self.actions[: self.size],
            "rewards": self.rewards[: self.size],
            "terminated": self.terminated[: self.size],
            "pos": self.pos,
            "size": self.size,
        } | ({} if self.next_masks is None else {"next_masks": self.next_masks[: self.size]})

    def load_state_dict(self, state: dict) -> None:
        n = state["size"]
        for key in ("obs", "next_obs", "actions", "rewards", "terminated"):
            getattr(self, key)[:n] = state[key]
        if "next_masks" in state:
            self.next_masks = torch.ones(
                (self.capacity, state["next_masks"].shape[1]), dtype=torch.bool, device=self.obs.device
            )
            self.next_masks[:n] = state["next_masks"]
        self.pos = state["pos"]
        self.size = n
