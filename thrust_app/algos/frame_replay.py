"""A replay buffer for frame-stacked observations that stores each frame once.

A stack of k frames shifts by one frame per step, so a transition's observation is its newest frame
and the k - 1 frames before it in the same env's stream, and its next observation is the following
time's. This buffer keeps one frame per env step (a 100,000-transition Atari buffer: 0.7 GB of
uint8 instead of 5.6 GB for every obs and next obs stacked) and rebuilds the stacks when sampling.
What the stream cannot give is kept whole: the stack an episode starts from (its padding frames) and
the stack an episode ends on (the next observation before the reset). Samples are exactly those of
`ReplayBuffer` given the same transitions and random stream (tests/algos/test_frame_replay.py).

Layout: N envs add one transition each per `add`; add number g fills slot g mod S (S = capacity / N
slots of N rows), and its newest frame goes to frame slot g mod (S + k), so the k frames before the
oldest transition are still there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .replay import Batch


class FrameSharingReplay:
    """ReplayBuffer's interface (add, add_arrays, sample, state_dict) for observations of shape
    (k, *frame_shape) that are stacks of the last k frames. Held on the host (numpy); samples move to
    `device`. Capacity is rounded up to a multiple of the env count."""

    def __init__(
        self,
        capacity: int,
        obs_shape: Sequence[int],
        action_shape: Sequence[int],
        action_dtype: torch.dtype,
        device: torch.device,
        obs_dtype: torch.dtype,
        num_envs: int,
    ) -> None:
        self.stack, *frame_shape = obs_shape
        self.num_envs = num_envs
        self.slots = -(-capacity // num_envs)
        self.capacity = self.slots * num_envs
        self.frame_slots = self.slots + self.stack
        self.device = device
        dtype = torch.empty((), dtype=obs_dtype).numpy().dtype
        self.frames = np.zeros((self.frame_slots, num_envs, *frame_shape), dtype=dtype)
        #: True where a frame starts a stream the frames before it do not continue (an episode's first)
        self.first = np.ones((self.frame_slots, num_envs), dtype=bool)
        self.times = np.zeros(self.slots, dtype=np.int64)  #: the add number each slot holds
        self.actions = torch.zeros((self.capacity, *action_shape), dtype=action_dtype)
        self.rewards = torch.zeros(self.capacity, dtype=torch.float32)
        self.terminated = torch.zeros(self.capacity, dtype=torch.float32)
        self.done = np.zeros((self.slots, num_envs), dtype=bool)  #: the next obs is a kept end-of-episode stack
        self.padding: dict[tuple[int, int], np.ndarray] = {}  #: (frame slot, env) -> the k - 1 frames before a first
        self.ends: dict[tuple[int, int], np.ndarray] = {}  #: (slot, env) -> the next obs of an episode's last step
        self.added = 0  #: adds so far (the next add's number)
        self.size = 0
        self._previous_next: np.ndarray | None = None  #: the last add's next obs, (N, k, *frame)
        self._previous_done = np.ones(num_envs, dtype=bool)

    def add(self, obs, action, reward, next_obs, terminated, next_mask=None) -> None:
        if next_mask is not None:
            raise ValueError("the frame-sharing replay buffer keeps no action masks: set share_frames=false")
        self.add_arrays(*(t.cpu().numpy() for t in (obs, action, reward, next_obs, terminated)))

    def add_arrays(self, obs, action, reward, next_obs, terminated) -> None:
        """Append one transition per env. A next obs that is not the obs shifted by one frame is kept whole;
        so is one whose following obs does not continue it (an episode's end, found at the next add)."""
        n = self.num_envs
        if obs.shape[0] != n:
            raise ValueError(f"this buffer takes {n} transitions per add (one per env), got {obs.shape[0]}")
        g, slot = self.added, self.added % self.slots
        now, after = g % self.frame_slots, (g + 1) % self.frame_slots
        ends = ~(next_obs[:, :-1] == obs[:, 1:]).reshape(n, -1).all(1)
        if self._previous_next is None:
            continues = np.zeros(n, dtype=bool)
        else:
            continues = ~self._previous_done & (obs == self._previous_next).reshape(n, -1).all(1)
        previous_slot = (g - 1) % self.slots
        for env in range(n):
            self.padding.pop((now, env), None)
            self.padding.pop((after, env), None)
            self.ends.pop((slot, env), None)
            if not continues[env]:
                self.padding[(now, env)] = obs[env, :-1].copy()
                if self._previous_next is not None and not self._previous_done[env]:  # it ended after all
                    self.ends[(previous_slot, env)] = self._previous_next[env].copy()
                    self.done[previous_slot, env] = True
            if ends[env]:
                self.ends[(slot, env)] = next_obs[env].copy()
        self.frames[now] = obs[:, -1]
        self.first[now] = ~continues
        self.frames[after] = next_obs[:, -1]
        self.first[after] = False
        self.done[slot] = ends
        self.times[slot] = g
        rows = slice(slot * n, (slot + 1) * n)
        self.actions[rows] = torch.as_tensor(action).reshape(self.actions[rows].shape)
        self.rewards[rows] = torch.as_tensor(reward, dtype=torch.float32)
        self.terminated[rows] = torch.as_tensor(terminated, dtype=torch.float32)
        self._previous_next, self._previous_done = next_obs.copy(), ends
        self.added += 1
        self.size = min(self.size + n, self.capacity)

    def stacks(self, times: np.ndarray, envs: np.ndarray) -> np.ndarray:
        """The observations at add numbers `times` of `envs`: each time's frame and the k - 1 before it in
        its stream; a stream's first frame brings its kept padding."""
        k = self.stack
        out = np.empty((len(times), k, *self.frames.shape[2:]), dtype=self.frames.dtype)
        cur = times.copy()
        walked = np.zeros(len(times), dtype=np.int64)  # frames taken from the stream before its first
        at_first = np.zeros(len(times), dtype=bool)
        for position in range(k - 1, -1, -1):
            out[:, position] = self.frames[cur % self.frame_slots, envs]
            if position == 0:
                break
            at_first |= self.first[cur % self.frame_slots, envs]
            walked += ~at_first
            cur = np.where(at_first, cur, cur - 1)
        for row in np.flatnonzero(at_first):
            missing = k - 1 - walked[row]
            padding = self.padding[(int(cur[row] % self.frame_slots), int(envs[row]))]
            out[row, :missing] = padding[k - 1 - missing :]
        return out

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> Batch:
        rows = torch.randint(0, self.size, (batch_size,), generator=generator)
        slots, envs = (rows // self.num_envs).numpy(), (rows % self.num_envs).numpy()
        times = self.times[slots]
        obs = self.stacks(times, envs)
        next_obs = self.stacks(times + 1, envs)
        for index in np.flatnonzero(self.done[slots, envs]):
            next_obs[index] = self.ends[(int(slots[index]), int(envs[index]))]
        device = self.device
        return (
            torch.from_numpy(obs).to(device),
            self.actions.index_select(0, rows).to(device),
            self.rewards.index_select(0, rows).to(device),
            torch.from_numpy(next_obs).to(device),
            self.terminated.index_select(0, rows).to(device),
        )

    def state_dict(self) -> dict:
        """The filled part only, as tensors and plain values (checkpoints load with weights_only)."""
        used_frames, used_slots = min(self.added + 1, self.frame_slots), min(self.added, self.slots)
        return {
            "frames": torch.from_numpy(self.frames[:used_frames].copy()),
            "first": torch.from_numpy(self.first[:used_frames].copy()),
            "times": torch.from_numpy(self.times[:used_slots].copy()),
            "done": torch.from_numpy(self.done[:used_slots].copy()),
            **_kept("padding", self.padding, self.frames),
            **_kept("ends", self.ends, self.frames),
            "actions": self.actions[: self.size].clone(),
            "rewards": self.rewards[: self.size].clone(),
            "terminated": self.terminated[: self.size].clone(),
            "added": self.added,
            "size": self.size,
            "previous_next": None if self._previous_next is None else torch.from_numpy(self._previous_next.copy()),
            "previous_done": torch.from_numpy(self._previous_done.copy()),
        }

    def load_state_dict(self, state: dict) -> None:
        for key in ("frames", "first", "times", "done"):
            saved = state[key].numpy()
            getattr(self, key)[: len(saved)] = saved
        for key in ("actions", "rewards", "terminated"):
            getattr(self, key)[: len(state[key])] = state[key]
        self.padding = _unkept(state, "padding")
        self.ends = _unkept(state, "ends")
        self.added, self.size = state["added"], state["size"]
        previous = state["previous_next"]
        self._previous_next = None if previous is None else previous.numpy().copy()
        self._previous_done = state["previous_done"].numpy().copy()


def _kept(name: str, kept: dict[tuple[int, int], np.ndarray], frames: np.ndarray) -> dict[str, torch.Tensor]:
    """A dict of kept stacks as two tensors: its (slot, env) keys and its stacks in the same order."""
    keys = torch.tensor(list(kept), dtype=torch.int64).reshape(-1, 2)
    values = torch.from_numpy(np.stack(list(kept.values()))) if kept else torch.empty((0, *frames.shape[2:]))
    return {f"{name}_keys": keys, name: values}


def _unkept(state: dict, name: str) -> dict[tuple[int, int], np.ndarray]:
    keys, values = state[f"{name}_keys"].tolist(), state[name].numpy()
    return {(slot, env): values[index].copy() for index, (slot, env) in enumerate(keys)}
