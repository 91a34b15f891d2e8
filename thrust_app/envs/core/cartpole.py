"""CartPole in plain Python: gymnasium's CartPole-v1 dynamics and 500-step limit, step for step.

Every constant and every line of the update follow gymnasium's `CartPoleEnv` (Barto, Sutton and
Anderson, 1983), in float64 as there; observations are the same four numbers.
"""

from __future__ import annotations

import math
from typing import Any

from .base import Box, CoreEnv, Discrete
from .pcg64 import NumpyRandom

GRAVITY = 9.8
MASS_CART = 1.0
MASS_POLE = 0.1
TOTAL_MASS = MASS_POLE + MASS_CART
HALF_POLE_LENGTH = 0.5
POLE_MASS_LENGTH = MASS_POLE * HALF_POLE_LENGTH
FORCE_MAG = 10.0
TAU = 0.02
THETA_LIMIT = 12 * 2 * math.pi / 360
X_LIMIT = 2.4
RESET_BOUND = 0.05
#: float32's largest value: gymnasium's bound for the unbounded velocities.
FLOAT32_MAX = 3.4028234663852886e38


class CartPole(CoreEnv):
    """Push a cart left (0) or right (1) to keep its pole upright; +1 per step, up to 500 steps.

    Observation: cart position, cart velocity, pole angle (rad), pole angular velocity.
    """

    id = "thrust/CartPole-v0"
    observation_space = Box(
        low=(-X_LIMIT * 2, -FLOAT32_MAX, -THETA_LIMIT * 2, -FLOAT32_MAX),
        high=(X_LIMIT * 2, FLOAT32_MAX, THETA_LIMIT * 2, FLOAT32_MAX),
        shape=(4,),
    )
    action_space = Discrete(2)
    max_episode_steps = 500
    generator = NumpyRandom  # gymnasium's draws: reset(seed=s) starts where gymnasium's env starts

    def __init__(self) -> None:
        super().__init__()
        self.state = [0.0, 0.0, 0.0, 0.0]
        self.last_action: int | None = None

    def _reset(self, rng: NumpyRandom) -> list[float]:
        self.state = [rng.uniform(-RESET_BOUND, RESET_BOUND) for _ in range(4)]
        self.last_action = None
        return list(self.state)

    def _step(self, action: int) -> tuple[list[float], float, bool, bool]:
        x, x_dot, theta, theta_dot = self.state
        force = FORCE_MAG if action == 1 else -FORCE_MAG
        costheta = math.cos(theta)
        sintheta = math.sin(theta)
        temp = (force + POLE_MASS_LENGTH * theta_dot**2 * sintheta) / TOTAL_MASS
        thetaacc = (GRAVITY * sintheta - costheta * temp) / (
            HALF_POLE_LENGTH * (4.0 / 3.0 - MASS_POLE * costheta**2 / TOTAL_MASS)
        )
        xacc = temp - POLE_MASS_LENGTH * thetaacc * costheta / TOTAL_MASS
        x = x + TAU * x_dot
        x_dot = x_dot + TAU * xacc
        theta = theta + TAU * theta_dot
        theta_dot = theta_dot + TAU * thetaacc
        self.state = [x, x_dot, theta, theta_dot]
        self.last_action = action
        terminated = x < -X_LIMIT or x > X_LIMIT or theta < -THETA_LIMIT or theta > THETA_LIMIT
        return list(self.state), 1.0, terminated, False

    def render_state(self) -> dict[str, Any]:
        x, _, theta, _ = self.state
        return {
            "x": x,
            "theta": theta,
            "x_limit": X_LIMIT,
            "pole_length": 2 * HALF_POLE_LENGTH,
            "last_action": self.last_action,
        }
