"""Pendulum in plain Python: gymnasium's Pendulum-v1 dynamics, reward and 200-step limit.

Swing a frictionless pendulum up and hold it: torque in [-2, 2], reward
-(angle^2 + 0.1 * speed^2 + 0.001 * torque^2), observation (cos angle, sin angle, angular speed).
"""

from __future__ import annotations

import math
from typing import Any

from .base import Box, CoreEnv
from .pcg64 import NumpyRandom

MAX_SPEED = 8.0
MAX_TORQUE = 2.0
DT = 0.05
GRAVITY = 10.0
MASS = 1.0
LENGTH = 1.0


def angle_normalize(x: float) -> float:
    """Wrap an angle to [-pi, pi) the way gymnasium does (floor modulo)."""
    return ((x + math.pi) % (2 * math.pi)) - math.pi


def clip(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


class Pendulum(CoreEnv):
    """Pendulum-v1: start at a random angle and speed, swing up, stay up."""

    id = "thrust/Pendulum-v0"
    observation_space = Box(low=(-1.0, -1.0, -MAX_SPEED), high=(1.0, 1.0, MAX_SPEED), shape=(3,))
    action_space = Box(low=(-MAX_TORQUE,), high=(MAX_TORQUE,), shape=(1,))
    max_episode_steps = 200
    generator = NumpyRandom  # gymnasium's draws: reset(seed=s) starts where gymnasium's env starts

    def __init__(self) -> None:
        super().__init__()
        self.state = [math.pi, 0.0]
        self.last_torque: float | None = None

    def _reset(self, rng: NumpyRandom) -> list[float]:
        self.state = [rng.uniform(-math.pi, math.pi), rng.uniform(-1.0, 1.0)]
        self.last_torque = None
        return self._obs()

    def _obs(self) -> list[float]:
        theta, theta_dot = self.state
        return [math.cos(theta), math.sin(theta), theta_dot]

    def _step(self, action: list[float]) -> tuple[list[float], float, bool, bool]:
        theta, theta_dot = self.state
        u = clip(action[0], -MAX_TORQUE, MAX_TORQUE)
        costs = angle_normalize(theta) ** 2 + 0.1 * theta_dot**2 + 0.001 * (u**2)
        new_theta_dot = theta_dot + (3 * GRAVITY / (2 * LENGTH) * math.sin(theta) + 3.0 / (MASS * LENGTH**2) * u) * DT
        new_theta_dot = clip(new_theta_dot, -MAX_SPEED, MAX_SPEED)
        self.state = [theta + new_theta_dot * DT, new_theta_dot]
        self.last_torque = u
        return self._obs(), -costs, False, False

    def render_state(self) -> dict[str, Any]:
        return {"theta": self.state[0], "theta_dot": self.state[1], "torque": self.last_torque, "max_torque": MAX_TORQUE}
