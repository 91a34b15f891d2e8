"""Hindsight Experience Replay (Andrychowicz et al., 2017) for goal envs: SB3's `HerReplayBuffer`.

A goal env (gymnasium-robotics' GoalEnv) observes a Dict with `observation`, `achieved_goal` and
`desired_goal`, which Thrust flattens into one vector (envs/pipeline.py), and rewards through
`compute_reward(achieved_goal, desired_goal, info)`. An episode that missed its goal still shows how to
reach the goals it did achieve, so when sampling, a share k / (k + 1) of each minibatch (k =
n_sampled_goal) is relabelled, transition t of an episode of length T taking the goal

    g' = achieved_goal(s_{j+1}),  j ~ U{t, ..., T-1} ("future"), j = T-1 ("final"), j ~ U{0, ..., T-1} ("episode")

into its observation and next observation, and the reward r' = compute_reward(achieved_goal(s_{t+1}), g', {}).
`terminated` stays as stored. Only finished episodes are sampled; when the ring overwrites an episode's
first transition, the rest of that episode leaves the sample too (as in SB3).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..config import ConfigError
from .replay import Batch, ReplayBuffer

#: The Dict keys a goal env observes, as the parts of the flat vector are named (envs/pipeline.py).
ACHIEVED, DESIRED = "obs.achieved_goal", "obs.desired_goal"


@dataclass
class GoalSpace:
    """Where the goals sit in a goal env's flat observation, and the env's reward for a goal."""

    achieved: slice  #: achieved_goal's stretch of the flat vector
    desired: slice  #: desired_goal's
    #: the env's `compute_reward(achieved_goals, desired_goals, infos)`, over a batch (numpy arrays in and out)
    compute_reward: Callable[[np.ndarray, np.ndarray, Any], np.ndarray]


def goal_space(env_id: str, parts: Sequence[Any] | None, env: Any) -> GoalSpace:
    """The GoalSpace of `env` (one instance of `env_id`, kept for its `compute_reward`) whose flat observation
    is made of `parts`; a ConfigError in one line when it is not a goal env."""
    names = [part.name for part in parts or ()]
    compute_reward = getattr(env.unwrapped, "compute_reward", None)
    if ACHIEVED not in names or DESIRED not in names or not callable(compute_reward):
        raise ConfigError(
            f"replay_buffer_class=HerReplayBuffer needs a goal env (a Dict observation with achieved_goal and "
            f"desired_goal, and a compute_reward method, as gymnasium-robotics' Fetch envs); {env_id} observes "
            f"{', '.join(name.removeprefix('obs.') for name in names) or 'no Dict'}: drop replay_buffer_class"
        )
    offsets = np.cumsum([0] + [part.size for part in parts])
    where = {name: slice(int(offsets[i]), int(offsets[i + 1])) for i, name in enumerate(names)}
    return GoalSpace(where[ACHIEVED], where[DESIRED], compute_reward)


class HerReplayBuffer(ReplayBuffer):
    """ReplayBuffer with episodes kept per env and goals relabelled when sampling (module docstring).

    N envs add one transition each per `add` (add number g fills slot g mod S, rows slot * N + env, S =
    capacity / N slots; capacity is rounded up to a multiple of N), and `close_episodes(done)` after each
    step marks which episodes ended there."""

    def __init__(
        self,
        capacity: int,
        obs_shape: Sequence[int],
        action_shape: Sequence[int],
        action_dtype: torch.dtype,
        device: torch.device,
        num_envs: int,
        goals: GoalSpace,
        n_sampled_goal: int = 4,
        strategy: str = "future",
    ) -> None:
        self.num_envs = num_envs
        self.slots = -(-capacity // num_envs)
        super().__init__(self.slots * num_envs, obs_shape, action_shape, action_dtype, device)
        self.goals = goals
        self.her_ratio = 1 - 1 / (n_sampled_goal + 1)  # k relabelled per real transition
        self.strategy = strategy
        self.added = 0  #: adds so far (the next add's number)
        self.ep_start = np.zeros((self.slots, num_envs), dtype=np.int64)  #: add number of the episode's first step
        self.ep_length = np.zeros((self.slots, num_envs), dtype=np.int64)  #: its length; 0: unfinished or dropped
        self.current_start = np.zeros(num_envs, dtype=np.int64)  #: add number each env's running episode began at

    def _write(self, storage: tuple, *values) -> None:
        if values[0].shape[0] != self.num_envs:
            raise ValueError(f"HerReplayBuffer takes one transition per env ({self.num_envs}), got {values[0].shape[0]}")
        slot = self.added % self.slots
        for env in np.flatnonzero(self.ep_length[slot] > 0):  # an episode loses its first step: drop all of it
            start, length = self.ep_start[slot, env], self.ep_length[slot, env]
            self.ep_length[np.arange(start, start + length) % self.slots, env] = 0
        self.ep_length[slot] = 0
        super()._write(storage, *values)
        self.added += 1

    def close_episodes(self, done: Any) -> None:
        """After a step: the episodes of the envs where `done` (terminated or truncated) ended with it."""
        done = done.cpu().numpy() if isinstance(done, torch.Tensor) else np.asarray(done)
        for env in np.flatnonzero(done):
            start = max(int(self.current_start[env]), self.added - self.slots)  # its steps still in the ring
            slots = np.arange(start, self.added) % self.slots
            self.ep_start[slots, env] = start
            self.ep_length[slots, env] = self.added - start
            self.current_start[env] = self.added

    def restart_episodes(self) -> None:
        """The envs started fresh episodes (a resumed run's gymnasium envs): the interrupted ones never end, so
        their transitions stay out of the sample; new episodes start at the next add."""
        self.current_start[:] = self.added

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> Batch:
        """A minibatch of finished episodes' transitions, the first her_ratio of it relabelled."""
        filled = min(self.added, self.slots)  # the slots written so far: the rest hold no episode
        valid = np.flatnonzero(self.ep_length[:filled].ravel() > 0)  # row index = slot * N + env
        if valid.size == 0:
            raise RuntimeError(
                "HerReplayBuffer: no episode has ended yet, so there is nothing to sample: raise learning_starts "
                "above the env's episode length"
            )
        picks = torch.randint(0, valid.size, (batch_size,), generator=generator, device=self.obs.device)
        rows = torch.from_numpy(valid).to(self.obs.device)[picks]
        batch = list(self.sample_rows(rows))
        virtual = int(self.her_ratio * batch_size)
        if virtual:
            self.relabel(batch, rows[:virtual].cpu().numpy(), generator)
        return tuple(batch)

    def relabel(self, batch: list[torch.Tensor], rows: np.ndarray, generator: torch.Generator | None) -> None:
        """New goals and rewards for the first len(rows) transitions of `batch` (obs, actions, rewards, next obs, ...)."""
        slot, env = rows // self.num_envs, rows % self.num_envs
        start, length = self.ep_start[slot, env], self.ep_length[slot, env]
        step = slot + self.slots * ((self.added - 1 - slot) // self.slots)  # the add number the slot holds now
        u = torch.rand(len(rows), generator=generator, dtype=torch.float64, device=self.obs.device).cpu().numpy()
        index = step - start  # t: the transition's place in its episode
        if self.strategy == "future":
            chosen = index + np.floor(u * (length - index)).astype(np.int64)  # j ~ U{t, ..., T-1}
        elif self.strategy == "final":
            chosen = length - 1
        else:  # "episode"
            chosen = np.floor(u * length).astype(np.int64)  # j ~ U{0, ..., T-1}
        goal_rows = torch.from_numpy(((start + chosen) % self.slots) * self.num_envs + env).to(self.obs.device)
        goals = self.next_obs.index_select(0, goal_rows)[:, self.goals.achieved]  # achieved_goal(s_{j+1})
        n, (obs, _, rewards, next_obs) = len(rows), batch[:4]  # the sample's own copies: changed in place
        obs[:n, self.goals.desired] = goals
        next_obs[:n, self.goals.desired] = goals
        achieved = next_obs[:n, self.goals.achieved].cpu().numpy()
        relabelled = self.goals.compute_reward(achieved, goals.cpu().numpy(), [{} for _ in range(n)])
        rewards[:n] = torch.as_tensor(np.asarray(relabelled, dtype=np.float32), device=self.obs.device)

    def state_dict(self) -> dict:
        used = min(self.added, self.slots)  # tensors: a checkpoint holds tensors and plain values only
        episodes = {key: torch.from_numpy(getattr(self, key)[:used].copy()) for key in ("ep_start", "ep_length")}
        return (
            super().state_dict()
            | episodes
            | {"current_start": torch.from_numpy(self.current_start.copy()), "added": self.added}
        )

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        used = len(state["ep_start"])
        self.ep_start[:used], self.ep_length[:used] = state["ep_start"].numpy(), state["ep_length"].numpy()
        self.current_start[:] = state["current_start"].numpy()
        self.added = int(state["added"])
