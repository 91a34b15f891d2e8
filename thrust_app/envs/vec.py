"""The vectorized-environment interface trainers use, and its plain form: N cores stepped in a loop.

A `VecEnv` steps `num_envs` copies at once and resets each copy the moment its episode ends
("same-step" auto-reset, as SB3 does). `BatchStep.final_obs` keeps the observation the episode
ended on, which is what bootstrapping a truncated episode needs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, NamedTuple

from .arrays import Backend, BackendName, make_backend
from .core import Box, CoreEnv, Discrete


class BatchStep(NamedTuple):
    """One step of every copy. Arrays have the vec env's backend type; the leading axis is the env."""

    obs: Any  #: (N, *obs_shape) float32, already reset where an episode ended
    reward: Any  #: (N,) float32
    terminated: Any  #: (N,) bool
    truncated: Any  #: (N,) bool
    final_obs: Any  #: (N, *obs_shape) float32, the observation each copy reached before any reset
    episode_return: Any  #: (N,) float64, return of the episode that just ended (valid where done)
    episode_length: Any  #: (N,) int64, length of the episode that just ended (valid where done)


class VecEnv(ABC):
    """N copies of one environment behind one `reset` / `step`."""

    env_id: str
    num_envs: int
    observation_space: Box
    action_space: Discrete | Box
    backend: Backend

    @property
    def xp(self) -> Any:
        """The array namespace of this env's arrays (numpy or torch, through array_api_compat)."""
        return self.backend.xp

    @abstractmethod
    def reset(self, seed: int | None = None) -> Any:
        """Reset every copy; returns observations (N, *obs_shape)."""

    @abstractmethod
    def step(self, actions: Any) -> BatchStep:
        """Step every copy with its action; copies whose episode ends are reset in the same call."""

    def close(self) -> None:
        """Release resources (nothing for the built-in envs)."""


class CoreLoopVecEnv(VecEnv):
    """N pure-Python cores stepped one after another, with arrays at the boundary.

    Used where an env's state does not fit fixed-size arrays (Snake's growing body). Copy i is
    seeded with `seed + i`, so copy i replays exactly what a single core with that seed would do.
    """

    def __init__(
        self,
        make_core: Callable[[], CoreEnv],
        num_envs: int,
        seed: int | None = None,
        backend: BackendName = "numpy",
        device: str = "cpu",
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.cores = [make_core() for _ in range(num_envs)]
        first = self.cores[0]
        self.env_id = first.id
        self.num_envs = num_envs
        self.observation_space = first.observation_space
        self.action_space = first.action_space
        self.backend = make_backend(backend, seed, device)
        self._seed = seed

    def _array(self, rows: list[list[float]]) -> Any:
        arr = self.backend.asarray(rows, dtype=self.xp.float32)
        return self.xp.reshape(arr, (self.num_envs, *self.observation_space.shape))

    def reset(self, seed: int | None = None) -> Any:
        seed = self._seed if seed is None else seed
        self._seed = None  # later resets continue each core's own generator
        return self._array(
            [core.reset(None if seed is None else seed + i) for i, core in enumerate(self.cores)]
        )

    def step(self, actions: Any) -> BatchStep:
        actions = actions.tolist() if hasattr(actions, "tolist") else list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions (one per env), got {len(actions)}")
        obs, final, rewards, terms, truncs, returns, lengths = [], [], [], [], [], [], []
        for core, action in zip(self.cores, actions):
            result = core.step(action)
            returns.append(core.episode_return)
            lengths.append(core.steps)
            final.append(result.obs)
            obs.append(core.reset() if result.terminated or result.truncated else result.obs)
            rewards.append(result.reward)
            terms.append(result.terminated)
            truncs.append(result.truncated)
        xp, asarray = self.xp, self.backend.asarray
        return BatchStep(
            obs=self._array(obs),
            reward=asarray(rewards, dtype=xp.float32),
            terminated=asarray(terms, dtype=xp.bool),
            truncated=asarray(truncs, dtype=xp.bool),
            final_obs=self._array(final),
            episode_return=asarray(returns, dtype=xp.float64),
            episode_length=asarray(lengths, dtype=xp.int64),
        )
