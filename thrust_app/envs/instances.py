"""Env objects a user made (`gymnasium.make(...)` with wrappers, their own `gymnasium.Env`, a vector env),
turned into an id Thrust makes its copies from, as it does for every env it trains on.

- An env made by `gymnasium.make` whose wrappers all record their arguments (gymnasium's own do) is
  known by its `EnvSpec`: the registered id itself when nothing was added (the presets apply), else the
  spec under a derived id `instance/<name>.<wrappers>-<hash>-v<N>`. Its JSON goes into the run's
  config.json, so another process (`thrust train --resume`, `thrust eval`) registers it again.
- Any other env object (a class of the user's, a wrapper that records nothing) is copied: the id
  `instance/<Class>-<n>-v0` makes `copy.deepcopy` of the object as it was handed over. Such an id lives
  in this process only: loading the model elsewhere needs the env passed again.
- A vector env gives its single env (as above) and its `num_envs` as the run's `n_envs`.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
from typing import Any

INSTANCE_NAMESPACE = "instance"
#: What `gymnasium.make_vec` adds to a vector env's spec kwargs (the single env takes none of them).
MAKE_VEC_KWARGS = ("num_envs", "vectorization_mode", "vector_kwargs", "wrappers", "max_episode_steps")
_copies = itertools.count(1)


@dataclasses.dataclass(frozen=True)
class EnvChoice:
    """What a user's env argument comes to: the id to make copies from, the copies a vector env asks for,
    and the gymnasium spec (JSON) that registers a derived id in another process."""

    env_id: str
    n_envs: int | None = None
    spec_json: str | None = None


def env_choice(env: Any) -> EnvChoice:
    """The EnvChoice for `env`: an id string as it is, an env or vector env object as the module says."""
    import gymnasium as gym

    if isinstance(env, str):
        return EnvChoice(env)
    n_envs = getattr(env, "num_envs", None) if is_vector_env(env) else None
    single = single_env(env) if n_envs is not None else env
    if not isinstance(single, gym.Env):
        raise TypeError(
            f"env must be an id string, a gymnasium.Env or a vector env, got {type(env).__name__}; "
            "e.g. PPO('CartPole-v1') or PPO(gymnasium.make('CartPole-v1'))"
        )
    spec = portable_spec(single)
    if spec is None:
        return EnvChoice(register_copy(single), n_envs)
    if spec.id in gym.registry and _same_spec(gym.registry[spec.id], spec):
        return EnvChoice(spec.id, n_envs)
    derived = derived_id(spec)
    spec_json = dataclasses.replace(spec, id=derived).to_json()
    register_spec_json(derived, spec_json)
    return EnvChoice(derived, n_envs, spec_json)


def is_vector_env(env: Any) -> bool:
    """gymnasium's VectorEnv, or any object with `num_envs` and its envs or their makers (SB3's DummyVecEnv)."""
    import gymnasium as gym

    return isinstance(env, gym.vector.VectorEnv) or (
        hasattr(env, "num_envs") and (hasattr(env, "envs") or hasattr(env, "env_fns"))
    )


def single_env(vector_env: Any) -> Any:
    """One env of `vector_env`: its first copy, a new one from its first maker, or one made from its spec."""
    import gymnasium as gym

    if getattr(vector_env, "envs", None):
        return vector_env.envs[0]
    if getattr(vector_env, "env_fns", None):
        return vector_env.env_fns[0]()
    spec = getattr(vector_env, "spec", None)
    if spec is not None:  # gymnasium.make_vec's own vectorised forms (CartPoleVectorEnv): the spec, less make_vec's keys
        kwargs = {key: value for key, value in spec.kwargs.items() if key not in MAKE_VEC_KWARGS}
        steps = spec.kwargs.get("max_episode_steps", spec.max_episode_steps)
        return gym.make(dataclasses.replace(spec, kwargs=kwargs, max_episode_steps=steps))
    raise TypeError(f"{type(vector_env).__name__} shows none of its envs (no envs, env_fns or spec): pass one env instead")


def portable_spec(env: Any) -> Any:
    """`env`'s gymnasium EnvSpec when it re-creates the env in any process (entry points importable by
    name, every wrapper's arguments recorded), without its render mode (training renders nothing); else None."""
    spec = env.spec
    if spec is None or not isinstance(spec.entry_point, str) or spec.entry_point.startswith("__main__"):
        return None
    for wrapper in spec.additional_wrappers:
        if wrapper.kwargs is None or wrapper.entry_point.startswith("__main__"):
            return None
    kwargs = {key: value for key, value in spec.kwargs.items() if key != "render_mode"}
    spec = dataclasses.replace(spec, kwargs=kwargs)
    try:
        spec.to_json()
    except (ValueError, TypeError):  # a kwarg JSON cannot hold
        return None
    return spec


def _same_spec(registered: Any, spec: Any) -> bool:
    fields = ("entry_point", "kwargs", "max_episode_steps", "additional_wrappers", "order_enforce", "disable_env_checker")
    return all(getattr(registered, name) == getattr(spec, name) for name in fields)


def derived_id(spec: Any) -> str:
    """`instance/<name>.<wrapper names>-<8 hex of the spec>-v<version>`: readable, and one id per spec."""
    digest = hashlib.sha256(spec.to_json().encode()).hexdigest()[:8]
    name = ".".join([spec.name, *(wrapper.name for wrapper in spec.additional_wrappers)])
    return f"{INSTANCE_NAMESPACE}/{name}-{digest}-v{spec.version or 0}"


def register_spec_json(env_id: str, spec_json: str) -> None:
    """Register the gymnasium spec `spec_json` (from a run's config.json) under `env_id`, once per process."""
    import gymnasium as gym

    if env_id in gym.registry:
        return
    spec = gym.envs.registration.EnvSpec.from_json(spec_json)
    fields = {field.name: getattr(spec, field.name) for field in dataclasses.fields(spec) if field.init}
    gym.register(**{**fields, "id": env_id})


def register_copy(env: Any, env_id: str | None = None) -> str:
    """Register copies of the object `env` (deep copies of it as it is now) under `env_id` or a new
    `instance/<Class>-<n>-v0`; returns the id. gymnasium adds no wrapper: `env` keeps its own."""
    import gymnasium as gym

    pristine = copy.deepcopy(env)
    base = type(env.unwrapped).__name__
    env_id = env_id or f"{INSTANCE_NAMESPACE}/{base}-{next(_copies)}-v0"

    def make_copy(**kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"{env_id} is a copy of an env object and takes no options, got {sorted(kwargs)}")
        return copy.deepcopy(pristine)

    gym.registry.pop(env_id, None)  # the same id handed a new object (a model loaded with its env again)
    gym.register(id=env_id, entry_point=make_copy, disable_env_checker=True, order_enforce=False)
    return env_id


def is_instance_id(env_id: str) -> bool:
    return env_id.startswith(f"{INSTANCE_NAMESPACE}/")


__all__ = ["EnvChoice", "env_choice", "is_instance_id", "register_copy", "register_spec_json"]
