"""Typed algorithm configs: a docstring per field, `key=value` overrides checked against the fields.

Each algorithm declares a dataclass whose fields use `param(default, "what it means")`. Overrides
from `--set key=value`, presets and the dashboard all pass through `apply_overrides`, which parses
each value to the field's type and rejects an unknown key by naming the valid ones.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from typing import Any, Literal, get_args, get_origin


class ConfigError(ValueError):
    """A config key or value that does not fit the algorithm's config."""


def param(default: Any, help: str) -> Any:
    """A config field with its default and its one-line meaning."""
    if isinstance(default, (list, dict, set)):
        raise TypeError("use tuples for sequence defaults")
    return dataclasses.field(default=default, metadata={"help": help})


@dataclasses.dataclass
class AlgoConfig:
    """Fields every algorithm has."""

    n_envs: int = param(1, "environment copies stepped together")
    learning_rate: float = param(3e-4, "optimizer step size at the start of training")
    lr_schedule: Literal["constant", "linear"] = param("constant", "learning rate over training: constant, or linear to 0")
    gamma: float = param(0.99, "discount factor")
    hidden: tuple[int, ...] = param((64, 64), "hidden layer sizes of the MLPs (image observations use a CNN)")

    def validate(self) -> None:
        """Raise ConfigError on values no run could use; subclasses add their own checks."""
        positive = [f.name for f in dataclasses.fields(self)
                    if f.name in ("n_envs", "n_steps", "batch_size", "n_epochs", "buffer_size", "train_freq",
                                  "gradient_steps", "target_update_interval")]
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ConfigError(f"gamma must be in [0, 1], got {self.gamma}")
        if self.learning_rate <= 0:
            raise ConfigError(f"learning_rate must be > 0, got {self.learning_rate}")
        if not self.hidden or any(h < 1 for h in self.hidden):
            raise ConfigError(f"hidden sizes must be >= 1, got {self.hidden}")


def field_help(config_cls: type) -> dict[str, str]:
    """Each field's one-line meaning, by name."""
    return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(config_cls)}


def _parse(name: str, raw: Any, hint: Any) -> Any:
    origin = get_origin(hint)
    if not isinstance(raw, str):
        if origin is tuple and isinstance(raw, (list, tuple)):
            return tuple(int(v) for v in raw)
        if hint is float and isinstance(raw, int) and not isinstance(raw, bool):
            return float(raw)
        if origin is Literal and raw in get_args(hint):
            return raw
        if isinstance(hint, type) and isinstance(raw, hint):
            return raw
        raise ConfigError(f"{name}: {raw!r} is not a {getattr(hint, '__name__', hint)}")
    text = raw.strip()
    try:
        if hint is bool:
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if hint is int:  # accepts 100000 and 1e5
            number = float(text)
            if not number.is_integer():
                raise ValueError
            return int(number)
        if hint is float:
            return float(text)
        if origin is Literal:
            if text in get_args(hint):
                return text
            raise ConfigError(f"{name}: {text!r} is not one of {', '.join(map(str, get_args(hint)))}")
        if origin is tuple:
            parts = [p for p in text.strip("()[] ").replace(",", " ").split() if p]
            return tuple(int(p) for p in parts)
        if hint is str:
            return text
    except ConfigError:
        raise
    except ValueError:
        pass
    kind = {bool: "true or false", int: "an integer", float: "a number"}.get(hint, "e.g. 64,64" if origin is tuple else str(hint))
    raise ConfigError(f"{name}: cannot read {text!r}; expected {kind}")


def apply_overrides(config: Any, overrides: dict[str, Any] | list[str] | None, algo: str = "") -> Any:
    """A copy of `config` with overrides applied; `overrides` is a dict or a list of 'key=value'."""
    if not overrides:
        return config
    if isinstance(overrides, list):
        pairs = {}
        for item in overrides:
            if "=" not in item:
                raise ConfigError(f"--set expects key=value, got {item!r}")
            key, value = item.split("=", 1)
            pairs[key.strip()] = value
        overrides = pairs
    hints = typing.get_type_hints(type(config))
    valid = [f.name for f in dataclasses.fields(config)]
    changes = {}
    for key, raw in overrides.items():
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1)
            hint = f" did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"unknown {algo + ' ' if algo else ''}config key {key!r};{hint} valid keys: {', '.join(valid)}")
        changes[key] = _parse(key, raw, hints[key])
    new = dataclasses.replace(config, **changes)
    new.validate()
    return new


def schedule(value: float, kind: str, progress_remaining: float) -> float:
    """A value scheduled over training: `constant`, or `linear` from `value` at the start to 0 at the end."""
    return value * progress_remaining if kind == "linear" else value
