"""N pure-Python env cores behind one call per step, for the browser's training loop (Pyodide).

Each call to `CoreVec.step` advances every copy, resets the copies whose episode ended in the same
call ("same-step" auto-reset, as the desktop's vec envs and SB3 do) and returns flat lists, so the
JavaScript side crosses into Python once per vector step instead of once per env. Copy i is reset with
`seed + i` first, as `thrust_app.envs.vec.LoopVecEnv` does.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from . import make_core
from .base import CoreEnv, Discrete


class VecStep(NamedTuple):
    """One step of every copy; per-copy values in env order, observations flattened row-major."""

    obs: list[float]  #: N x obs_size, already reset where an episode ended
    rewards: list[float]
    terminated: list[bool]
    truncated: list[bool]
    #: (copy index, its final observation) for every truncated copy: what bootstrapping a cut episode needs
    truncated_obs: list[tuple[int, list[float]]]
    #: (return, length) of every episode that ended in this step
    finished: list[tuple[float, int]]


class CoreVec:
    """`num_envs` copies of the core env `name` (an id or alias) stepped together."""

    def __init__(self, name: str, num_envs: int, seed: int) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.envs: list[CoreEnv] = [make_core(name) for _ in range(num_envs)]
        self.num_envs = num_envs
        self.seed = seed
        self.discrete = isinstance(self.envs[0].action_space, Discrete)
        self.action_size = 1 if self.discrete else self.envs[0].action_space.size
        self.obs_size = self.envs[0].observation_space.size

    def reset(self) -> list[float]:
        """Reset copy i with seed + i; returns the observations, flattened."""
        obs: list[float] = []
        for index, env in enumerate(self.envs):
            obs.extend(env.reset(self.seed + index))
        return obs

    def step(self, actions: Any) -> VecStep:
        """`actions`: N ints (discrete) or N x action_size floats, flattened (a list or anything `list()` takes)."""
        actions = list(actions)
        expected = self.num_envs * self.action_size
        if len(actions) != expected:
            raise ValueError(
                f"expected {expected} action values ({self.num_envs} envs x {self.action_size}), got {len(actions)}"
            )
        obs: list[float] = []
        rewards, terminated, truncated = [], [], []
        truncated_obs: list[tuple[int, list[float]]] = []
        finished: list[tuple[float, int]] = []
        size = self.action_size
        for index, env in enumerate(self.envs):
            action = int(actions[index]) if self.discrete else actions[index * size : (index + 1) * size]
            result = env.step(action)
            rewards.append(result.reward)
            terminated.append(result.terminated)
            truncated.append(result.truncated)
            next_obs = result.obs
            if result.terminated or result.truncated:
                finished.append((env.episode_return, env.steps))
                if result.truncated and not result.terminated:
                    truncated_obs.append((index, next_obs))
                next_obs = env.reset()
            obs.extend(next_obs)
        return VecStep(obs, rewards, terminated, truncated, truncated_obs, finished)
