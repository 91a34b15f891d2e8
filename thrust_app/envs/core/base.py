"""What every pure-Python environment core shares: spaces, the step result, errors, episode bookkeeping.

Standard library only. The cores are the code the browser player runs under Pyodide, where numpy
cannot be loaded, and the same source the desktop side wraps for gymnasium and training.
"""

from __future__ import annotations

import math
import operator
import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from .pcg64 import NumpyRandom


class EnvError(Exception):
    """Base class of every error an environment raises on bad use."""


class InvalidActionError(EnvError, ValueError):
    """The action does not belong to the environment's action space."""


class EpisodeOverError(EnvError, RuntimeError):
    """`step` was called on an episode that already ended (or was never started)."""


@dataclass(frozen=True)
class Discrete:
    """`n` actions numbered 0 .. n-1."""

    n: int

    def check(self, action: Any) -> int:
        """Return `action` as a plain int, or raise InvalidActionError saying what is wrong."""
        if isinstance(action, bool):
            raise InvalidActionError(f"action {action!r} is a bool; expected an int in [0, {self.n - 1}]")
        if isinstance(action, (list, tuple)):
            if len(action) != 1:
                raise InvalidActionError(f"action has shape ({len(action)},); expected a single int in [0, {self.n - 1}]")
            action = action[0]
        try:
            value = operator.index(action)
        except TypeError:
            if isinstance(action, float) and action.is_integer():
                value = int(action)
            else:
                raise InvalidActionError(
                    f"action {action!r} ({type(action).__name__}) is not an integer; expected an int in [0, {self.n - 1}]"
                ) from None
        if not 0 <= value < self.n:
            raise InvalidActionError(f"action {value} is out of range; expected an int in [0, {self.n - 1}]")
        return value


@dataclass(frozen=True)
class Box:
    """A box of numbers: flat `low`/`high` bounds (row-major), the array `shape` they fill, and the dtype
    arrays of it have ("float32"; "uint8" for image frames, which are stored and exported as bytes)."""

    low: tuple[float, ...]
    high: tuple[float, ...]
    shape: tuple[int, ...]
    dtype: str = "float32"

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def check(self, action: Any) -> list[float]:
        """Return `action` as a flat list of floats inside the bounds, or raise InvalidActionError."""
        if hasattr(action, "tolist"):  # numpy arrays and torch tensors, without importing either
            action = action.tolist()
        if isinstance(action, (int, float)) and self.size == 1:
            action = [action]
        if not isinstance(action, Sequence) or isinstance(action, str):
            raise InvalidActionError(f"action {action!r} is not a sequence of floats; expected shape {self.shape}")
        flat = list(_flatten(action))
        if len(flat) != self.size:
            raise InvalidActionError(f"action has {len(flat)} values; expected shape {self.shape}")
        values = []
        for i, (v, lo, hi) in enumerate(zip(flat, self.low, self.high, strict=True)):
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise InvalidActionError(f"action[{i}] = {v!r} is not a number") from None
            if not math.isfinite(v):
                raise InvalidActionError(f"action[{i}] = {v} is not finite")
            if not lo <= v <= hi:
                raise InvalidActionError(f"action[{i}] = {v} is out of range [{lo}, {hi}]; clip it to the action space bounds")
            values.append(v)
        return values


def _flatten(items: Sequence[Any]):
    for item in items:
        if isinstance(item, (list, tuple)):
            yield from _flatten(item)
        else:
            yield item


@dataclass(frozen=True)
class MultiDiscrete:
    """Several independent choices in one action: component i takes one of `nvec[i]` values, 0 .. nvec[i] - 1
    (gymnasium's MultiDiscrete; its MultiBinary is the case of all 2s). No Thrust core acts in one; gymnasium
    envs do."""

    nvec: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.nvec),)


Space = Discrete | Box | MultiDiscrete


class StepResult(NamedTuple):
    """One transition, gymnasium's order: observation (flat list), reward, terminated, truncated."""

    obs: list[float]
    reward: float
    terminated: bool
    truncated: bool


class CoreEnv(ABC):
    """A seeded, single-instance environment in plain Python.

    Subclasses define the spaces, `_reset(rng)` (draw a start state, return the observation) and
    `_step(action)` (advance, return observation, reward, terminated, truncated). This class owns the
    random generator, the step counter and time limit, and refuses bad use with a clear error.
    Observations are flat lists of floats in row-major order of `observation_space.shape`.
    """

    id: str = ""
    observation_space: Box
    action_space: Space
    #: Steps after which an episode is truncated (gymnasium's TimeLimit); None for no limit.
    max_episode_steps: int | None = None
    #: The generator `_reset` draws from: a gymnasium env's twin takes NumpyRandom (pcg64.py), so that a seed
    #: starts the episode gymnasium's env starts with it.
    generator: type[random.Random] | type[NumpyRandom] = random.Random

    def __init__(self) -> None:
        self._rng = self.generator()
        self._running = False
        self.steps = 0
        self.episode_return = 0.0

    def reset(self, seed: int | None = None) -> list[float]:
        """Start a new episode. A seed makes it reproducible; without one the generator continues."""
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise TypeError(f"seed must be an int or None, got {seed!r}")
            self._rng.seed(seed)
        self.steps = 0
        self.episode_return = 0.0
        self._running = True
        return self._reset(self._rng)

    def step(self, action: Any) -> StepResult:
        """Apply one action. Raises EpisodeOverError after the episode ended: call reset() first."""
        if not self._running:
            raise EpisodeOverError(
                f"{self.id}: step() called but the episode is over (or reset() was never called); "
                "call reset() to start a new episode"
            )
        checked = self.action_space.check(action)
        obs, reward, terminated, truncated = self._step(checked)
        self.steps += 1
        self.episode_return += reward
        if self.max_episode_steps is not None and self.steps >= self.max_episode_steps:
            truncated = True  # as gymnasium's TimeLimit: set even when the last step also terminated
        if terminated or truncated:
            self._running = False
        return StepResult(obs, reward, terminated, truncated)

    @property
    def running(self) -> bool:
        """True between reset() and the step that ends the episode."""
        return self._running

    @abstractmethod
    def _reset(self, rng: random.Random | NumpyRandom) -> list[float]: ...

    @abstractmethod
    def _step(self, action: Any) -> tuple[list[float], float, bool, bool]: ...

    @abstractmethod
    def render_state(self) -> dict[str, Any]:
        """What a renderer needs to draw the current frame, as JSON-friendly values."""
