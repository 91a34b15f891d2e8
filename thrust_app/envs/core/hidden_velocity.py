"""Memory tests: classic-control envs with their velocities hidden (the zoo's `*NoVel` envs).

rl-baselines3-zoo's MaskVelocityWrapper multiplies the velocity entries of the observation by zero, so a
policy must infer them from the observations it has seen: what sb3-contrib's recurrent PPO is benchmarked
on. `VELOCITY_INDICES` is the zoo's table, the one definition both forms use: the gymnasium ids
(`CartPoleNoVel-v1`, ...) registered in gym_adapter.py and the cores here, which the browser player runs.
"""

from __future__ import annotations

import random

from .cartpole import CartPole
from .pendulum import Pendulum

#: The observation entries each env's velocity-free twin zeroes (rl_zoo3.wrappers.MaskVelocityWrapper).
VELOCITY_INDICES: dict[str, tuple[int, ...]] = {
    "CartPole-v1": (1, 3),
    "MountainCar-v0": (1,),
    "MountainCarContinuous-v0": (1,),
    "Pendulum-v1": (2,),
    "LunarLander-v3": (2, 3, 5),
    "LunarLanderContinuous-v3": (2, 3, 5),
}


def no_velocity_id(env_id: str) -> str:
    """The zoo's id of an env's velocity-free twin: CartPole-v1 -> CartPoleNoVel-v1."""
    name, version = env_id.rsplit("-v", 1)
    return f"{name}NoVel-v{version}"


def hide(obs: list[float], indices: tuple[int, ...]) -> list[float]:
    """`obs` with the entries at `indices` multiplied by zero, as the zoo's wrapper does."""
    return [value * 0.0 if i in indices else value for i, value in enumerate(obs)]


class CartPoleNoVel(CartPole):
    """CartPole seeing cart position and pole angle only: the twin of the zoo's CartPoleNoVel-v1."""

    id = "thrust/CartPoleNoVel-v0"
    hidden = VELOCITY_INDICES["CartPole-v1"]

    def _reset(self, rng: random.Random) -> list[float]:
        return hide(super()._reset(rng), self.hidden)

    def _step(self, action: int) -> tuple[list[float], float, bool, bool]:
        obs, *rest = super()._step(action)
        return hide(obs, self.hidden), *rest


class PendulumNoVel(Pendulum):
    """Pendulum seeing cos and sin of its angle only: the twin of the zoo's PendulumNoVel-v1."""

    id = "thrust/PendulumNoVel-v0"
    hidden = VELOCITY_INDICES["Pendulum-v1"]

    def _reset(self, rng: random.Random) -> list[float]:
        return hide(super()._reset(rng), self.hidden)

    def _step(self, action: list[float]) -> tuple[list[float], float, bool, bool]:
        obs, *rest = super()._step(action)
        return hide(obs, self.hidden), *rest
