"""The bundle manifest's schema: what every reader of a `manifest.json` may rely on.

Standard library only: the browser player runs this same module under Pyodide (it is in the core
wheel, `thrust_app/web/core_wheel.py`) to check a dropped bundle, so Python and the page accept and
refuse exactly the same manifests, with the same sentences.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

BUNDLE_FORMAT = "thrust-policy-bundle"
BUNDLE_VERSION = 1
READABLE_BUNDLE_VERSIONS = (1,)


class BundleError(ValueError):
    """A bundle that is missing, inconsistent, or does not fit its environment."""


def check_manifest(manifest: Any, where: Path) -> None:
    """Every field a reader relies on is there and of its type, or one BundleError naming the field."""
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{where} is not a Thrust bundle manifest (format must be '{BUNDLE_FORMAT}')")
    if manifest.get("version") not in READABLE_BUNDLE_VERSIONS:
        raise BundleError(
            f"{where} is bundle version {manifest.get('version')!r}; this Thrust reads version(s) "
            f"{', '.join(map(str, READABLE_BUNDLE_VERSIONS))} (a newer Thrust wrote it: upgrade Thrust)"
        )

    def field(dotted: str, kind: type | tuple[type, ...]) -> Any:
        value: Any = manifest
        for key in dotted.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if not isinstance(value, kind) or isinstance(value, bool) or (isinstance(value, (str, list)) and not value):
            expected = getattr(kind, "__name__", "a number")
            raise BundleError(
                f"{where}: field '{dotted}' is {'missing' if value is None else repr(value)}; "
                f"expected a non-empty {expected}; re-export the bundle or fix the manifest"
            )
        return value

    for name in ("env_id", "algo", "action_output", "sha256"):
        field(name, str)
    shape = field("observation.shape", list)
    if not all(isinstance(size, int) and size > 0 for size in shape):
        raise BundleError(f"{where}: field 'observation.shape' must list positive integers, got {shape}")
    check_action_space(field, where)
    outputs = [output.get("name") for output in field("outputs", list) if isinstance(output, dict)]
    if manifest["action_output"] not in outputs:
        raise BundleError(f"{where}: action_output '{manifest['action_output']}' is not among the outputs {outputs}")
    if "memory" in manifest:  # a recurrent policy: its memory goes in and comes out each step
        if field("memory.size", int) < 1:
            raise BundleError(f"{where}: field 'memory.size' must be >= 1")
        field("memory.input", str)
        if field("memory.output", str) not in outputs:
            raise BundleError(f"{where}: memory.output '{manifest['memory']['output']}' is not among the outputs {outputs}")


def check_action_space(field: Any, where: Path) -> None:
    """The manifest's action space is one a reader knows, its fields complete (`field` reads one, checked)."""
    kind = field("action_space.type", str)
    if kind == "discrete":
        if field("action_space.n", int) < 1:
            raise BundleError(f"{where}: field 'action_space.n' must be >= 1")
    elif kind == "multi_discrete":
        nvec = field("action_space.nvec", list)
        if not all(isinstance(n, int) and n >= 1 for n in nvec):
            raise BundleError(f"{where}: field 'action_space.nvec' must list integers >= 1, got {nvec}")
    elif kind == "box":
        size = math.prod(field("action_space.shape", list))
        for bound in ("low", "high"):
            values = field(f"action_space.{bound}", list)
            if len(values) != size or not all(isinstance(v, (int, float)) for v in values):
                raise BundleError(f"{where}: field 'action_space.{bound}' must hold {size} numbers")
    else:
        raise BundleError(f"{where}: field 'action_space.type' is {kind!r}; expected 'discrete', 'multi_discrete' or 'box'")


def split_observation(flat: list[float], parts: list[dict[str, Any]]) -> list[Any]:
    """One flat observation (gymnasium's flatten of a Dict or Tuple) as each part's value as the env gives it,
    for a bundle that takes one input per part (`observation.parts`): a Box or MultiBinary part its numbers
    (row-major), a Discrete part its integer (the one-hot's index), a MultiDiscrete part its integers. Python and
    the player (under Pyodide) feed bundles through this one function."""
    values, start = [], 0
    for part in parts:
        stretch = list(flat[start : start + part["size"]])
        start += part["size"]
        if part["kind"] in ("box", "multi_binary"):
            values.append(stretch)
            continue
        integers, offset = [], 0
        for n in part["nvec"]:
            hot = stretch[offset : offset + n]
            integers.append(max(range(n), key=hot.__getitem__))
            offset += n
        values.append(integers[0] if part["kind"] == "discrete" else integers)
    return values


def manifest_problem(text: str, where: str = "manifest.json") -> str:
    """The one-line reason a manifest's text is refused, or "" when it is fine (for the player)."""
    try:
        check_manifest(json.loads(text), Path(where))
    except json.JSONDecodeError as err:
        return f"{where} is not valid JSON: {err}"
    except BundleError as err:
        return str(err)
    return ""
