"""Acrobot in plain Python: gymnasium's Acrobot-v1 dynamics (Sutton and Barto's book equations, fourth-order
Runge-Kutta over dt = 0.2) and time limit, step for step.

Two links hang from a fixed pivot; the torque at the joint between them is -1, 0 or +1. The episode ends when
the free end rises above one link's length over the pivot (-cos(t1) - cos(t1 + t2) > 1): reward 0 then, -1 for
every other step, up to 500 steps. Every constant and every operation follows gymnasium's `AcrobotEnv`, in the
same order (float64, as numpy computes it), so the states agree bit for bit; the start state is drawn as float32.
"""

from __future__ import annotations

import math
from typing import Any

from .base import Box, CoreEnv, Discrete
from .mountain_car import f32
from .pcg64 import NumpyRandom

DT = 0.2
LINK_LENGTH_1 = LINK_MASS_1 = LINK_MASS_2 = LINK_MOI = 1.0
LINK_COM_POS_1 = LINK_COM_POS_2 = 0.5
GRAVITY = 9.8
MAX_VEL_1, MAX_VEL_2 = 4 * math.pi, 9 * math.pi
TORQUES = (-1.0, 0.0, 1.0)


def derivatives(state: list[float], torque: float) -> list[float]:
    """d/dt of (theta1, theta2, dtheta1, dtheta2) under `torque` at the joint (the book's equations)."""
    m1, m2, l1, lc1, lc2, i1, i2, g = (
        LINK_MASS_1,
        LINK_MASS_2,
        LINK_LENGTH_1,
        LINK_COM_POS_1,
        LINK_COM_POS_2,
        1.0,
        1.0,
        GRAVITY,
    )
    theta1, theta2, dtheta1, dtheta2 = state
    d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * math.cos(theta2)) + i1 + i2
    d2 = m2 * (lc2**2 + l1 * lc2 * math.cos(theta2)) + i2
    phi2 = m2 * lc2 * g * math.cos(theta1 + theta2 - math.pi / 2.0)
    phi1 = (
        -m2 * l1 * lc2 * dtheta2**2 * math.sin(theta2)
        - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * math.sin(theta2)
        + (m1 * lc1 + m2 * l1) * g * math.cos(theta1 - math.pi / 2)
        + phi2
    )
    # ddtheta2 = (a + d2/d1 phi1 - m2 l1 lc2 dtheta1^2 sin(theta2) - phi2) / (m2 lc2^2 + I2 - d2^2/d1)
    ddtheta2 = (torque + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * math.sin(theta2) - phi2) / (
        m2 * lc2**2 + i2 - d2**2 / d1
    )
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return [dtheta1, dtheta2, ddtheta1, ddtheta2]


def rk4_step(state: list[float], torque: float) -> list[float]:
    """One Runge-Kutta step of DT: y + dt/6 (k1 + 2 k2 + 2 k3 + k4), each operation as gymnasium's `rk4` does it."""
    half = DT / 2.0
    k1 = derivatives(state, torque)
    k2 = derivatives([y + half * k for y, k in zip(state, k1, strict=True)], torque)
    k3 = derivatives([y + half * k for y, k in zip(state, k2, strict=True)], torque)
    k4 = derivatives([y + DT * k for y, k in zip(state, k3, strict=True)], torque)
    return [y + DT / 6.0 * (a + 2 * b + 2 * c + d) for y, a, b, c, d in zip(state, k1, k2, k3, k4, strict=True)]


def wrap(x: float, low: float, high: float) -> float:
    """x moved by whole turns into [low, high] (gymnasium's `wrap`)."""
    while x > high:
        x = x - (high - low)
    while x < low:
        x = x + (high - low)
    return x


class Acrobot(CoreEnv):
    """Torque -1 (0), none (1) or +1 (2) at the joint; observed as (cos t1, sin t1, cos t2, sin t2, dt1, dt2)."""

    id = "thrust/Acrobot-v0"
    observation_space = Box(
        low=(-1.0, -1.0, -1.0, -1.0, -MAX_VEL_1, -MAX_VEL_2), high=(1.0, 1.0, 1.0, 1.0, MAX_VEL_1, MAX_VEL_2), shape=(6,)
    )
    action_space = Discrete(3)
    max_episode_steps = 500
    generator = NumpyRandom  # gymnasium's draws: reset(seed=s) starts where gymnasium's env starts

    def __init__(self) -> None:
        super().__init__()
        self.state = [0.0, 0.0, 0.0, 0.0]
        self.last_torque = 0.0

    def _observe(self) -> list[float]:
        theta1, theta2, dtheta1, dtheta2 = self.state
        return [math.cos(theta1), math.sin(theta1), math.cos(theta2), math.sin(theta2), dtheta1, dtheta2]

    def _reset(self, rng: NumpyRandom) -> list[float]:
        self.state, self.last_torque = [f32(rng.uniform(-0.1, 0.1)) for _ in range(4)], 0.0
        return self._observe()

    def _step(self, action: int) -> tuple[list[float], float, bool, bool]:
        self.last_torque = TORQUES[action]
        theta1, theta2, dtheta1, dtheta2 = rk4_step(self.state, self.last_torque)
        self.state = [
            wrap(theta1, -math.pi, math.pi),
            wrap(theta2, -math.pi, math.pi),
            min(max(dtheta1, -MAX_VEL_1), MAX_VEL_1),
            min(max(dtheta2, -MAX_VEL_2), MAX_VEL_2),
        ]
        terminated = -math.cos(self.state[0]) - math.cos(self.state[1] + self.state[0]) > 1.0
        return self._observe(), -1.0 if not terminated else 0.0, terminated, False

    def render_state(self) -> dict[str, Any]:
        return {"theta1": self.state[0], "theta2": self.state[1], "torque": self.last_torque}
