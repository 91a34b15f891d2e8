"""Pure-Python environment cores (standard library only), shared by the desktop side and the browser.

`make_core(name)` builds one by id or short alias. Nothing here may import numpy, gymnasium or
torch: this package runs under Pyodide in the browser player.
"""

from __future__ import annotations

from typing import Any

from .acrobot import Acrobot
from .bandit import SimpleBandit
from .base import Box, CoreEnv, Discrete, EnvError, EpisodeOverError, InvalidActionError, MultiDiscrete, StepResult
from .cards import Cards
from .cartpole import CartPole
from .hidden_velocity import CartPoleNoVel, PendulumNoVel
from .minatar import MinAtarBreakout, MinAtarSpaceInvaders
from .mountain_car import MountainCar, MountainCarContinuous
from .pendulum import Pendulum
from .snake import Snake

#: Thrust's environments by registered id.
CORE_ENVS: dict[str, type[CoreEnv]] = {
    cls.id: cls
    for cls in (
        SimpleBandit,
        CartPole,
        Pendulum,
        Snake,
        CartPoleNoVel,
        PendulumNoVel,
        Cards,
        MountainCar,
        MountainCarContinuous,
        Acrobot,
        MinAtarBreakout,
        MinAtarSpaceInvaders,
    )
}

#: Short names a user may type instead of the full id.
ALIASES: dict[str, str] = {
    "bandit": SimpleBandit.id,
    "cartpole": CartPole.id,
    "pendulum": Pendulum.id,
    "snake": Snake.id,
    "cartpole-novel": CartPoleNoVel.id,
    "pendulum-novel": PendulumNoVel.id,
    "cards": Cards.id,
    "mountaincar": MountainCar.id,
    "mountaincar-continuous": MountainCarContinuous.id,
    "acrobot": Acrobot.id,
    "minatar-breakout": MinAtarBreakout.id,
    "minatar-space-invaders": MinAtarSpaceInvaders.id,
}


class UnknownEnvError(EnvError, ValueError):
    """The name is neither a Thrust env id nor an alias."""


def resolve_env_id(name: str) -> str:
    """Map an alias or id (any case) to Thrust's env id, or raise UnknownEnvError listing the valid ones."""
    key = name.strip()
    if key.lower() in ALIASES:
        return ALIASES[key.lower()]
    for env_id in CORE_ENVS:
        if key.lower() == env_id.lower():
            return env_id
    raise UnknownEnvError(f"unknown environment {name!r}; valid names: {valid_names()}")


def valid_names() -> str:
    return ", ".join(f"{alias} ({env_id})" for alias, env_id in ALIASES.items())


def make_core(name: str, **kwargs: Any) -> CoreEnv:
    """Build a pure-Python env core by id or alias, e.g. `make_core("snake", width=8, height=8)`."""
    return CORE_ENVS[resolve_env_id(name)](**kwargs)


__all__ = [
    "ALIASES",
    "CORE_ENVS",
    "Acrobot",
    "Box",
    "Cards",
    "CartPole",
    "CartPoleNoVel",
    "CoreEnv",
    "Discrete",
    "EnvError",
    "EpisodeOverError",
    "InvalidActionError",
    "MountainCar",
    "MountainCarContinuous",
    "MultiDiscrete",
    "Pendulum",
    "PendulumNoVel",
    "SimpleBandit",
    "Snake",
    "StepResult",
    "UnknownEnvError",
    "make_core",
    "resolve_env_id",
    "valid_names",
]
