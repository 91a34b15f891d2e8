"""Read the plain data out of a pickle file without running any code from it.

Stable-Baselines3 saves `VecNormalize` statistics only as a pickle. Unpickling runs whatever
callables the file names, so Thrust never unpickles a foreign file directly. This reader builds only
numpy arrays, dtypes and scalars for real; every class from the few packages such files refer to
(SB3, gymnasium, numpy's random generators, collections) becomes an inert `Stub` that keeps the
arguments and state it was given; any other name the file asks for is refused with one line. The
result is a tree of stubs whose attributes are the saved values (`stub.obs_rms.mean`, ...).
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

#: Callables built for real: numpy's own array, dtype and scalar reconstruction, nothing else.
REAL = {
    ("numpy", "dtype"),
    ("numpy", "ndarray"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy.core.numeric", "_frombuffer"),
}
#: Packages whose classes and functions become stubs.
STUB_PACKAGES = ("stable_baselines3", "sb3_contrib", "gymnasium", "gym", "numpy.random", "collections")


class UnsafePickleError(ValueError):
    """The file asks for something the safe reader will not build."""


class Stub:
    """Stands in for a class or function from the file; remembers how it was called and its state."""

    qualname = "?"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict):  # (dict, slots)
            state = {**(state[0] or {}), **state[1]}
        if isinstance(state, dict):
            self.__dict__.update(state)
        else:
            self.state = state

    def __repr__(self) -> str:
        return f"<stub {self.qualname}>"


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in REAL:
            import importlib

            return getattr(importlib.import_module(module), name)
        if any(module == package or module.startswith(package + ".") for package in STUB_PACKAGES):
            return type(name, (Stub,), {"qualname": f"{module}.{name}"})
        raise UnsafePickleError(f"{module}.{name}")


def safe_load(path: str | Path) -> Any:
    """The pickle at `path` as stubs and numpy values; UnsafePickleError names what it would not build."""
    with open(path, "rb") as file:
        return _SafeUnpickler(file).load()
