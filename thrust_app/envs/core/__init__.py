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
from .locomotion import LOCOMOTION_TASKS, LocomotionCore, LocomotionTask
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


#: gymnasium envs that a core reproduces as Thrust's observation pipeline shows them, (id, env_wrapper) -> the core:
#: MinAtar's v1 games channels first (tests/envs/test_minatar_cores.py).
PIPELINE_TWINS: dict[tuple[str, str], str] = {
    ("MinAtar/Breakout-v1", "minatar"): MinAtarBreakout.id,
    ("MinAtar/SpaceInvaders-v1", "minatar"): MinAtarSpaceInvaders.id,
}


def _pipeline(manifest: dict[str, Any]) -> tuple[str, int]:
    pipeline = manifest.get("observation", {}).get("pipeline") or {}
    return pipeline.get("env_wrapper", "none"), pipeline.get("frame_stack", 1)


def playing_core(manifest: dict[str, Any]) -> str | None:
    """The core a bundle's episodes run on (the player, Python's playback): its env's own core, or the core that
    reproduces its gymnasium env inside its pipeline; None when none does."""
    wrapper, stack = _pipeline(manifest)
    if stack != 1:
        return None
    if wrapper == "none" and manifest["env_id"] in CORE_ENVS:
        return manifest["env_id"]
    return PIPELINE_TWINS.get((manifest["env_id"], wrapper))


def playing_locomotion(manifest: dict[str, Any]) -> LocomotionTask | None:
    """The MuJoCo locomotion task a bundle's episodes run on (the locomotion core over the desktop's or the tab's
    MuJoCo), or None."""
    return LOCOMOTION_TASKS.get(manifest["env_id"]) if _pipeline(manifest) == ("none", 1) else None


def locomotion_core(env_id: str, physics: Any) -> LocomotionCore:
    """gymnasium's `env_id` (a LOCOMOTION_TASKS key) as a core over `physics` (see locomotion.py)."""
    return LocomotionCore(LOCOMOTION_TASKS[env_id], physics)


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
    "LOCOMOTION_TASKS",
    "PIPELINE_TWINS",
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
    "LocomotionCore",
    "LocomotionTask",
    "MountainCar",
    "MountainCarContinuous",
    "MultiDiscrete",
    "Pendulum",
    "PendulumNoVel",
    "SimpleBandit",
    "Snake",
    "StepResult",
    "UnknownEnvError",
    "locomotion_core",
    "make_core",
    "playing_core",
    "playing_locomotion",
    "resolve_env_id",
    "valid_names",
]
