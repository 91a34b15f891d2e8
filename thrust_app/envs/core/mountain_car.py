"""MountainCar in plain Python: gymnasium's MountainCar-v0 (3 pushes) and MountainCarContinuous-v0 (a force in
[-1, 1]) dynamics and time limits, step for step.

An underpowered car in a valley must rock back and forth to reach the flag at x = 0.5 (Moore, 1990). Every
constant and line follows gymnasium's `MountainCarEnv` and `Continuous_MountainCarEnv`: MountainCar-v0 in
float64; the continuous one keeps its state as float32 between steps, as gymnasium's does (`f32` rounds where
numpy's float32 arithmetic rounds).
"""

from __future__ import annotations

import math
import struct
from typing import Any

from .base import Box, CoreEnv, Discrete
from .pcg64 import NumpyRandom

MIN_POSITION, MAX_POSITION, MAX_SPEED, GOAL_POSITION = -1.2, 0.6, 0.07, 0.5
FORCE, GRAVITY, POWER = 0.001, 0.0025, 0.0015
RESET_LOW, RESET_HIGH = -0.6, -0.4
OBSERVATION = Box(low=(MIN_POSITION, -MAX_SPEED), high=(MAX_POSITION, MAX_SPEED), shape=(2,))


def f32(value: float) -> float:
    """`value` rounded to float32, as numpy's float32 arithmetic leaves each result."""
    return struct.unpack("f", struct.pack("f", value))[0]


def height(x: float) -> float:
    """The valley's height at x (what the renderers draw)."""
    return math.sin(3 * x) * 0.45 + 0.55


class Valley(CoreEnv):
    """What both cars share: the state (position, velocity), the start at rest in [-0.6, -0.4], the last push
    for the renderers; each car's `_step` is its own."""

    observation_space = OBSERVATION
    generator = NumpyRandom  # gymnasium's draws: reset(seed=s) starts where gymnasium's env starts

    def __init__(self) -> None:
        super().__init__()
        self.state = [0.0, 0.0]
        self.last_push = 0.0

    def _reset(self, rng: NumpyRandom) -> list[float]:
        self.state, self.last_push = [rng.uniform(RESET_LOW, RESET_HIGH), 0.0], 0.0
        return [f32(value) for value in self.state]  # gymnasium observes the float64 start as float32

    def render_state(self) -> dict[str, Any]:
        return {"position": self.state[0], "height": height(self.state[0]), "push": self.last_push, "goal": GOAL_POSITION}


class MountainCar(Valley):
    """Push left (0), not at all (1) or right (2); -1 per step until the flag, up to 200 steps."""

    id = "thrust/MountainCar-v0"
    action_space = Discrete(3)
    max_episode_steps = 200

    def _step(self, action: int) -> tuple[list[float], float, bool, bool]:
        position, velocity = self.state
        velocity += (action - 1) * FORCE + math.cos(3 * position) * (-GRAVITY)
        velocity = min(max(velocity, -MAX_SPEED), MAX_SPEED)
        position = min(max(position + velocity, MIN_POSITION), MAX_POSITION)
        if position == MIN_POSITION and velocity < 0:
            velocity = 0.0
        self.state, self.last_push = [position, velocity], float(action - 1)
        return list(self.state), -1.0, position >= GOAL_POSITION and velocity >= 0, False


class MountainCarContinuous(Valley):
    """A force in [-1, 1]: 100 for reaching the flag, minus 0.1 force^2 per step, up to 999 steps."""

    id = "thrust/MountainCarContinuous-v0"
    action_space = Box(low=(-1.0,), high=(1.0,), shape=(1,))
    max_episode_steps = 999

    def _step(self, action: list[float]) -> tuple[list[float], float, bool, bool]:
        # gymnasium's arithmetic under numpy's rules: the state is float64 at the first step, float32 from then
        # on, and a Python number meeting a float32 is made float32 first (`cast`); a bound assigned by a clip is a
        # Python float. The action is float32 and within its bounds (the space checks it).
        position, velocity = self.state
        cast = f32 if self.steps > 0 else float
        pushed = f32(action[0] * f32(POWER))
        delta = f32(pushed - f32(GRAVITY * math.cos(cast(3 * position))))  # force * power - 0.0025 cos(3 x)
        velocity = cast(velocity + delta)
        if velocity > cast(MAX_SPEED):
            velocity = MAX_SPEED
        if velocity < cast(-MAX_SPEED):
            velocity = -MAX_SPEED
        position = cast(position + cast(velocity))
        if position > cast(MAX_POSITION):
            position = MAX_POSITION
        if position < cast(MIN_POSITION):
            position = MIN_POSITION
        if cast(position) == cast(MIN_POSITION) and velocity < 0:
            velocity = 0.0
        terminated = position >= GOAL_POSITION and velocity >= 0
        reward = (100.0 if terminated else 0.0) - action[0] ** 2 * 0.1
        self.state, self.last_push = [f32(position), f32(velocity)], action[0]
        return list(self.state), reward, terminated, False
