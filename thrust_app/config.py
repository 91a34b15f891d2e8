"""Typed algorithm configs: a docstring per field, `key=value` overrides checked against the fields.

Each algorithm declares a dataclass whose fields use `param(default, "what it means")`. Overrides
from `--set key=value`, presets and the dashboard all pass through `apply_overrides`, which parses
each value to the field's type and rejects an unknown key by naming the valid ones.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import os
import typing
from typing import Any, Literal, get_args, get_origin


class ConfigError(ValueError):
    """A config key or value that does not fit the algorithm's config."""


def param(default: Any, help: str, *, ge: float | None = None, gt: float | None = None, le: float | None = None) -> Any:
    """A config field with its default, its one-line meaning, and the range its value must lie in
    (`ge`: >=, `gt`: >, `le`: <=); `AlgoConfig.validate` checks every field against its own range."""
    if isinstance(default, (list, dict, set)):
        raise TypeError("use tuples for sequence defaults")
    return dataclasses.field(default=default, metadata={"help": help, "ge": ge, "gt": gt, "le": le})


def check_range(name: str, value: float, ge: float | None, gt: float | None, le: float | None) -> None:
    """Raise ConfigError unless `value` is finite and within the bounds given."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number, got {value}")
    low_ok = (ge is None or value >= ge) and (gt is None or value > gt)
    if low_ok and (le is None or value <= le):
        return
    low = f"[{ge}" if ge is not None else f"({gt}" if gt is not None else None
    if low is not None and le is not None:
        raise ConfigError(f"{name} must be in {low}, {le}], got {value}")
    bound = f">= {ge}" if ge is not None else f"> {gt}" if gt is not None else f"<= {le}"
    raise ConfigError(f"{name} must be {bound}, got {value}")


# The speed settings (thrust_app/speed/switches.py resolves them): their help, one text each.
#: `update` of A2C and PPO: what computes the gradient step.
ON_POLICY_UPDATE_HELP = (
    "how an update's gradients are computed: handwritten (speed/actor_critic_backward.py, the chain rule written "
    "out; vector observations), numba (speed/numba_actor_critic.py, the same steps compiled by numba; CPU, "
    "compiles once per machine) or reference (autograd: loss.backward()); all give the same gradients"
)
#: `update` of DQN and SAC: what computes the whole update.
OFF_POLICY_UPDATE_HELP = (
    "how an update's gradients are computed: handwritten (speed/dqn_backward.py / sac_backward.py, written out in "
    "torch; vector observations), numba (speed/numba_dqn.py / numba_sac.py, the same steps compiled by numba; CPU, "
    "compiles once per machine) or reference (autograd: the losses, then loss.backward()); all give the same gradients"
)
#: `cuda_graphs` of PPO, DQN and SAC.
CUDA_GRAPHS_HELP = (
    "capture the update as a CUDA graph after its first step and replay it (speed/cuda_graphs.py; needs --device cuda, "
    "update=handwritten and constant schedules; otherwise a note says why and the update runs eagerly); PPO also "
    "captures each rollout's collection when the env's arrays are on the GPU (--env-backend torch)"
)
#: Speed settings under their earlier names, still read wherever settings are (saved configs, sweep files,
#: presets, `--set`): old key -> (key, {old value: value}).
EARLIER_NAMES = {
    "backward": ("update", {"fast": "handwritten", "compiled": "numba", "autograd": "reference"}),
    "acting": ("acting", {"fast": "numpy"}),
}


@dataclasses.dataclass
class AlgoConfig:
    """Fields every algorithm has."""

    n_envs: int = param(1, "environment copies stepped together", ge=1)
    learning_rate: float = param(3e-4, "optimizer step size at the start of training", gt=0)
    lr_schedule: Literal["constant", "linear"] = param("constant", "learning rate over training: constant, or linear to 0")
    gamma: float = param(0.99, "discount factor", ge=0, le=1)
    hidden: tuple[int, ...] = param((64, 64), "hidden layer sizes of the MLPs (image observations use a CNN)")
    features_extractor: str = param(
        "", "a feature extractor of your own in front of the MLPs, 'package.module:Class' (SB3's features_extractor_class)"
    )
    features_extractor_kwargs: str = param("{}", "its keyword arguments, a JSON object (SB3's features_extractor_kwargs)")
    acting: Literal["numpy", "torch"] = param(
        "numpy",
        "how the policy acts while collecting experience: numpy (speed/numpy_acting.py: its forward in numpy, an "
        "iteration's noise drawn at once; vector observations, numpy env, CPU) or torch (the reference); both act alike",
    )

    normalize: bool = param(
        False,
        "running mean/std normalisation of observations and rewards while training, SB3's VecNormalize (the zoo's "
        "`normalize: true`); frozen for evaluation and folded into the exported policy",
    )
    norm_obs: bool = param(True, "with normalize: normalise observations")
    norm_reward: bool = param(True, "with normalize: scale rewards by the std of the discounted return")
    clip_obs: float = param(10.0, "with normalize: bound of the normalised observations", gt=0)
    clip_reward: float = param(10.0, "with normalize: bound of the scaled rewards", gt=0)
    norm_epsilon: float = param(1e-8, "with normalize: added to the variances before the square root", gt=0)
    env_wrapper: Literal["none", "atari", "minatar"] = param(
        "none",
        "observation pipeline around the env (envs/pipeline.py), the zoo's key: atari = gymnasium's AtariPreprocessing "
        "as the zoo's AtariWrapper sets it up (noop reset, frame skip 4, 84x84 grey; a lost life ends the episode and "
        "rewards become their sign for training only); minatar = MinAtar's grids channels first",
    )
    frame_stack: int = param(1, "the last N observations stacked as one (the zoo's frame_stack; 1 = none)", ge=1)
    vec_env: Literal["sync", "async", "envpool"] = param(
        "sync",
        "how a gymnasium env's copies step: sync (one after another in the training process), async (each in a "
        "worker process, gymnasium's AsyncVectorEnv: for envs whose step is slow, Atari's or MuJoCo's) or envpool "
        "(EnvPool's C++ threads: Atari games with the atari pipeline, MuJoCo and its other ids)",
    )

    def validate(self) -> None:
        """Raise ConfigError on values no run could use: each field against the range it declares;
        subclasses add checks that relate several fields."""
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                check_range(field.name, value, field.metadata.get("ge"), field.metadata.get("gt"), field.metadata.get("le"))
        if not self.hidden or any(size < 1 for size in self.hidden):
            raise ConfigError(f"hidden sizes must be >= 1, got {self.hidden}")
        check_extractor(self.features_extractor, self.features_extractor_kwargs)

    def check_fits(self, timesteps: int, obs_bytes: int) -> None:
        """Refuse settings that cannot fit a run of `timesteps` steps on an env whose observations take
        `obs_bytes` bytes each (the budget, this machine's memory); the on- and off-policy configs say how."""


def check_extractor(path: str, kwargs_json: str) -> None:
    """`features_extractor` names a class as 'package.module:Class' and its kwargs are a JSON object (the class
    itself is loaded when a net is built: nets/extractor.py)."""
    if not path:
        return
    if ":" not in path:
        raise ConfigError(f"features_extractor {path!r}: give it as 'package.module:Class'")
    try:
        kwargs = json.loads(kwargs_json or "{}")
    except json.JSONDecodeError as err:
        raise ConfigError(f"features_extractor_kwargs is not JSON ({err.msg}): give a JSON object") from None
    if not isinstance(kwargs, dict):
        raise ConfigError("features_extractor_kwargs must be a JSON object of keyword arguments")


def available_memory_bytes() -> int:
    """Memory this machine can still give a new run (MemAvailable on Linux, else physical memory)."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_memory(needed: float, what: str, fix: str) -> None:
    """Refuse a run whose buffers would not fit in memory, before it allocates anything."""
    available = available_memory_bytes()
    if needed > 0.8 * available:
        raise ConfigError(
            f"{what} needs about {needed / 2**30:.1f} GiB, more than the {available / 2**30:.1f} GiB "
            f"this machine has free; {fix}"
        )


def field_help(config_cls: type) -> dict[str, str]:
    """Each field's one-line meaning, by name."""
    return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(config_cls)}


def _read_bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


def _read_int(text: str) -> int:
    """100000 and 1e5 alike; 2.5 is no integer."""
    number = float(text)
    if not number.is_integer():
        raise ValueError(text)
    return int(number)


def _read_sizes(text: str) -> tuple[int, ...]:
    """'64,64', '64 64', '(64, 64)' or '[64, 64]'."""
    return tuple(int(size) for size in text.strip("()[] ").replace(",", " ").split())


_READERS = {bool: _read_bool, int: _read_int, float: float, str: str}
_EXPECTED = {bool: "true or false", int: "an integer", float: "a number"}


def _parse_value(name: str, raw: Any, hint: Any) -> Any:
    """A value given as its own type (presets, saved configs) checked against the field's type."""
    origin = get_origin(hint)
    if origin is tuple and isinstance(raw, (list, tuple)):
        return tuple(int(size) for size in raw)
    if hint is float and isinstance(raw, int) and not isinstance(raw, bool):
        return float(raw)
    if (origin is Literal and raw in get_args(hint)) or (isinstance(hint, type) and isinstance(raw, hint)):
        return raw
    raise ConfigError(f"{name}: {raw!r} is not a {getattr(hint, '__name__', hint)}")


def _parse(name: str, raw: Any, hint: Any) -> Any:
    """`raw` (text from --set or the dashboard, or a value) as the field's type, or a ConfigError saying
    what was expected."""
    if not isinstance(raw, str):
        return _parse_value(name, raw, hint)
    text = raw.strip()
    origin = get_origin(hint)
    if origin is Literal:
        if text in get_args(hint):
            return text
        raise ConfigError(f"{name}: {text!r} is not one of {', '.join(map(str, get_args(hint)))}")
    reader = _read_sizes if origin is tuple else _READERS.get(hint)
    try:
        return reader(text)
    except ValueError:
        expected = "e.g. 64,64" if origin is tuple else _EXPECTED.get(hint, str(hint))
        raise ConfigError(f"{name}: cannot read {text!r}; expected {expected}") from None


def apply_overrides(config: Any, overrides: dict[str, Any] | list[str] | None, algo: str = "") -> Any:
    """A copy of `config` with overrides applied; `overrides` is a dict or a list of 'key=value'."""
    if not overrides:
        return config
    overrides = override_pairs(overrides)
    hints = typing.get_type_hints(type(config))
    valid = [f.name for f in dataclasses.fields(config)]
    changes = {}
    for key, raw in (current_name(key, raw) for key, raw in overrides.items()):
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1)
            hint = f" did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"unknown {algo + ' ' if algo else ''}config key {key!r};{hint} valid keys: {', '.join(valid)}")
        changes[key] = _parse(key, raw, hints[key])
    new = dataclasses.replace(config, **changes)
    new.validate()
    return new


def override_pairs(overrides: dict[str, Any] | list[str] | None) -> dict[str, Any]:
    """Overrides as a dict: a dict as it is, a list of 'key=value' texts (the command line's --set) split."""
    if not isinstance(overrides, list):
        return dict(overrides or {})
    pairs = {}
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        key, value = item.split("=", 1)
        pairs[key.strip()] = value
    return pairs


def current_name(key: str, raw: Any) -> tuple[str, Any]:
    """A setting under its current key and value (`EARLIER_NAMES`); any other passes as it is."""
    if key not in EARLIER_NAMES:
        return key, raw
    new_key, values = EARLIER_NAMES[key]
    return new_key, values.get(raw, raw) if isinstance(raw, str) else raw


def schedule(value: float, kind: str, progress_remaining: float) -> float:
    """A value scheduled over training: `constant`, or `linear` from `value` at the start to 0 at the end."""
    return value * progress_remaining if kind == "linear" else value
