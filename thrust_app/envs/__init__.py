"""Thrust's environments: pure-Python cores, their gymnasium form, and batched forms for training.

`make_env(name)` gives a gymnasium env for a Thrust alias or id, or for any gymnasium id.
Importing this package needs only the standard library; the gymnasium and array parts load on use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core import ALIASES, CORE_ENVS, Box, Discrete, UnknownEnvError, make_core, resolve_env_id, valid_names

#: gymnasium envs whose dynamics Thrust's cores reproduce exactly (tests/envs/test_gym_adapter.py), so a
#: policy trained on one runs on the other: where the player (Pyodide, Thrust's cores only) can run it.
GYMNASIUM_TWINS = {
    "CartPole-v1": "thrust/CartPole-v0",
    "Pendulum-v1": "thrust/Pendulum-v0",
    "CartPoleNoVel-v1": "thrust/CartPoleNoVel-v0",
    "PendulumNoVel-v1": "thrust/PendulumNoVel-v0",
    "MountainCar-v0": "thrust/MountainCar-v0",
    "MountainCarContinuous-v0": "thrust/MountainCarContinuous-v0",
    "Acrobot-v1": "thrust/Acrobot-v0",
}

if TYPE_CHECKING:
    from .pipeline import ObservationPart, Pipeline


def make_env(name: str, pipeline: Pipeline | None = None, training: bool = False, **kwargs: Any) -> Any:
    """A gymnasium env: Thrust's by alias or id (`snake`, `thrust/Snake-v0`), else any gymnasium id (Atari's
    and MinAtar's registered on first use), its observations one flat vector where they are Discrete,
    MultiDiscrete, MultiBinary, Tuple or Dict (`pipeline.flattened`), inside `pipeline` (envs/pipeline.py;
    `training` adds its training-only steps).

    Unknown names raise UnknownEnvError listing Thrust's envs.
    """
    import gymnasium as gym

    from .gym_adapter import register_envs
    from .pipeline import Pipeline, flattened, register_on_demand

    register_envs()
    try:
        env_id = resolve_env_id(name)
    except UnknownEnvError:
        env_id = name
    pipeline = pipeline or Pipeline()
    try:
        register_on_demand(env_id)
        return pipeline.wrap(flattened(gym.make(env_id, **pipeline.make_kwargs(env_id), **kwargs)), training)
    except gym.error.Error as err:
        if env_id in CORE_ENVS:
            raise
        raise UnknownEnvError(
            f"unknown environment {name!r} ({err}); valid Thrust names: {valid_names()}, "
            "or any registered gymnasium id such as CartPole-v1"
        ) from None


__all__ = [
    "ALIASES",
    "CORE_ENVS",
    "GYMNASIUM_TWINS",
    "UnknownEnvError",
    "env_observation_parts",
    "env_parted_space",
    "env_spaces",
    "make_env",
    "resolve_env_id",
    "valid_names",
]


def env_spaces(name: str, pipeline: Pipeline | None = None) -> tuple[Box, Discrete | Box]:
    """An env's observation and action spaces in Thrust's form (inside `pipeline`), without stepping it:
    Thrust's from the core, a gymnasium env's from one instance made and closed. Spaces Thrust cannot
    train on (a non-Box observation, say) raise ValueError naming them."""
    if pipeline is None or (pipeline.wrapper == "none" and pipeline.frame_stack == 1):
        try:
            core = make_core(name)
            return core.observation_space, core.action_space
        except UnknownEnvError:
            pass
    from .vec import from_gym_space

    env = make_env(name, pipeline)
    try:
        env_id = env.spec.id if env.spec is not None else name
        return (
            from_gym_space(env.observation_space, "observation", env_id),
            from_gym_space(env.action_space, "action", env_id),
        )
    finally:
        env.close()


def env_parted_space(env_id: str, pipeline: Pipeline | None = None) -> Any:
    """The Dict or Tuple space `env_id`'s flat observations are made from (pipeline.parted_space), else None."""
    from .pipeline import parted_space

    env = make_env(env_id, pipeline)
    try:
        return parted_space(env)
    finally:
        env.close()


def env_observation_parts(env_id: str, pipeline: Pipeline | None = None) -> list[ObservationPart] | None:
    """The parts of `env_id`'s Dict or Tuple observation (pipeline.observation_parts), else None."""
    from .pipeline import observation_parts

    env = make_env(env_id, pipeline)
    try:
        return observation_parts(env)
    finally:
        env.close()
