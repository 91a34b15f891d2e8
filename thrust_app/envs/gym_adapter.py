"""Thrust's cores as gymnasium environments (`thrust/Bandit-v0`, `thrust/CartPole-v0`, ...).

One adapter serves all four: it turns the core's flat observation lists into float32 arrays of the
right shape and its spaces into gymnasium spaces. Seeds pass straight through, so
`env.reset(seed=s)` starts the same episode as the core (and the browser player) with seed `s`; a twin of a
gymnasium env (CartPole, Pendulum, Acrobot, the MountainCars) starts where that env starts (core/pcg64.py).
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from . import core as cores
from .core.hidden_velocity import VELOCITY_INDICES, no_velocity_id


def to_gym_space(space: cores.Box | cores.Discrete) -> gym.Space:
    if isinstance(space, cores.Discrete):
        return gym.spaces.Discrete(space.n)
    low = np.asarray(space.low, dtype=np.float32).reshape(space.shape)
    high = np.asarray(space.high, dtype=np.float32).reshape(space.shape)
    return gym.spaces.Box(low=low, high=high, dtype=np.float32)


class ThrustEnv(gym.Env):
    """A gymnasium env around one pure-Python core; subclasses name the core."""

    core_cls: type[cores.CoreEnv]
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, render_mode: str | None = None, **core_kwargs: Any) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not supported; use one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self.core = self.core_cls(**core_kwargs)
        self.observation_space = to_gym_space(self.core.observation_space)
        #: a core whose flat observation is a Dict's (`observation_parts`): gymnasium sees the Dict
        self._dict_space = dict_space(self.core_cls.observation_parts) if hasattr(self.core_cls, "observation_parts") else None
        self.observation_space = self._dict_space or self.observation_space
        self.action_space = to_gym_space(self.core.action_space)
        self._shape = self.core.observation_space.shape

    def _obs(self, flat: list[float]) -> Any:
        array = np.asarray(flat, dtype=np.float32).reshape(self._shape)
        return gym.spaces.unflatten(self._dict_space, array) if self._dict_space is not None else array

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        return self._obs(self.core.reset(seed=seed)), {}

    def step(self, action: Any):
        result = self.core.step(action)
        return self._obs(result.obs), float(result.reward), result.terminated, result.truncated, {}

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        from .render import render_rgb

        return render_rgb(self.core.id, self.core.render_state())


def dict_space(parts: tuple[tuple[str, str, int], ...]) -> gym.spaces.Dict:
    """The gymnasium Dict of a core's `observation_parts` ((key, kind, size): multi_binary or discrete)."""
    kinds = {"multi_binary": gym.spaces.MultiBinary, "discrete": gym.spaces.Discrete}
    return gym.spaces.Dict({key: kinds[kind](size) for key, kind, size in parts})


class MaskedThrustEnv(ThrustEnv):
    """A core that offers action masks (`action_masks()`), offered the way sb3-contrib's MaskablePPO reads them."""

    def action_masks(self) -> np.ndarray:
        return np.asarray(self.core.action_masks(), dtype=bool)


class BanditEnv(ThrustEnv):
    core_cls = cores.SimpleBandit


class CartPoleEnv(ThrustEnv):
    core_cls = cores.CartPole
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 50}


class PendulumEnv(ThrustEnv):
    core_cls = cores.Pendulum
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 20}


class SnakeEnv(ThrustEnv):
    core_cls = cores.Snake
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 10}


class MountainCarEnv(ThrustEnv):
    core_cls = cores.MountainCar


class MountainCarContinuousEnv(ThrustEnv):
    core_cls = cores.MountainCarContinuous


class AcrobotEnv(ThrustEnv):
    core_cls = cores.Acrobot
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 15}


class MinAtarBreakoutEnv(ThrustEnv):
    core_cls = cores.MinAtarBreakout
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 10}


class MinAtarSpaceInvadersEnv(MinAtarBreakoutEnv):
    core_cls = cores.MinAtarSpaceInvaders


class CardsEnv(MaskedThrustEnv):
    core_cls = cores.Cards


class CartPoleNoVelEnv(CartPoleEnv):
    core_cls = cores.CartPoleNoVel


class PendulumNoVelEnv(PendulumEnv):
    core_cls = cores.PendulumNoVel


_ADAPTERS = (BanditEnv, CartPoleEnv, PendulumEnv, SnakeEnv, CartPoleNoVelEnv, PendulumNoVelEnv, CardsEnv)
GYM_ENVS: dict[str, type[ThrustEnv]] = {
    cls.core_cls.id: cls
    for cls in (*_ADAPTERS, MountainCarEnv, MountainCarContinuousEnv, AcrobotEnv, MinAtarBreakoutEnv, MinAtarSpaceInvadersEnv)
}


def make_no_velocity(base_id: str, **kwargs: Any) -> gym.Env:
    """The zoo's `*NoVel` env: gymnasium's `base_id` with its velocity entries multiplied by zero."""
    env = gym.make(base_id, **kwargs)
    keep = np.ones(env.observation_space.shape, env.observation_space.dtype)
    keep[list(VELOCITY_INDICES[base_id])] = 0
    return gym.wrappers.TransformObservation(env, lambda obs: obs * keep, env.observation_space)


def register_envs() -> None:
    """Register every Thrust env with gymnasium (idempotent): the cores, the zoo's velocity-free envs, and the
    small tasks with known answers (tasks.py, registered on import)."""
    from . import tasks  # noqa: F401

    for env_id, cls in GYM_ENVS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=f"{__name__}:{cls.__name__}")
    for base_id in VELOCITY_INDICES:  # the zoo's memory tests, under the zoo's ids; their limits are the base env's
        if no_velocity_id(base_id) not in gym.registry and base_id in gym.registry:
            gym.register(id=no_velocity_id(base_id), entry_point=functools.partial(make_no_velocity, base_id))
