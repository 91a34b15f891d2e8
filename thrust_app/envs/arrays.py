"""Where batched environments get their arrays and random numbers: numpy on the CPU, or torch on any device.

Arithmetic goes through the array API (`array_api_compat`), which numpy and torch both speak, so a
batched env is written once. What the standard leaves out, random numbers and placement on a
device, lives in the two small backends below.
"""

from __future__ import annotations

from typing import Any, Literal

import array_api_compat

BackendName = Literal["numpy", "torch"]


class NumpyBackend:
    """Arrays in numpy, random numbers from a seeded `numpy.random.Generator`."""

    name = "numpy"

    def __init__(self, seed: int | None = None) -> None:
        import numpy as np

        self.xp = array_api_compat.array_namespace(np.zeros(0))
        self.device = "cpu"
        self._rng = np.random.default_rng(seed)

    def seed(self, seed: int) -> None:
        import numpy as np

        self._rng = np.random.default_rng(seed)

    def get_state(self) -> dict:
        return self._rng.bit_generator.state

    def set_state(self, state: dict) -> None:
        self._rng.bit_generator.state = state

    def uniform(self, low: float, high: float, shape: tuple[int, ...], dtype: Any) -> Any:
        return self._rng.uniform(low, high, size=shape).astype(dtype, copy=False)

    def integers(self, high: int, shape: tuple[int, ...]) -> Any:
        return self._rng.integers(0, high, size=shape)

    def asarray(self, values: Any, dtype: Any = None) -> Any:
        import numpy as np

        return np.asarray(values, dtype=dtype)  # numpy's own: the compat layer's adds about 1 µs a call, 8 calls a step


class TorchBackend:
    """Tensors on a torch device (CPU or CUDA), random numbers from a seeded `torch.Generator` there."""

    name = "torch"

    def __init__(self, seed: int | None = None, device: str = "cpu") -> None:
        import torch

        self._torch = torch
        self.device = torch.device(device)
        self.xp = array_api_compat.array_namespace(torch.zeros(0))
        #: Every random number of the env's copies comes from here (a captured rollout registers it with its graph).
        self.generator = torch.Generator(device=self.device)
        if seed is None:
            self.generator.seed()
        else:
            self.generator.manual_seed(seed)

    def seed(self, seed: int) -> None:
        self.generator.manual_seed(seed)

    def get_state(self) -> Any:
        return self.generator.get_state()

    def set_state(self, state: Any) -> None:
        self.generator.set_state(state)

    def uniform(self, low: float, high: float, shape: tuple[int, ...], dtype: Any) -> Any:
        u = self._torch.rand(shape, generator=self.generator, device=self.device, dtype=dtype)
        return u * (high - low) + low

    def integers(self, high: int, shape: tuple[int, ...]) -> Any:
        return self._torch.randint(0, high, shape, generator=self.generator, device=self.device)

    def asarray(self, values: Any, dtype: Any = None) -> Any:
        return self._torch.as_tensor(values, dtype=dtype, device=self.device)


Backend = NumpyBackend | TorchBackend


def make_backend(name: BackendName = "numpy", seed: int | None = None, device: str = "cpu") -> Backend:
    """`numpy` (CPU only) or `torch` (on `device`); anything else is an error naming both."""
    if name == "numpy":
        if str(device) != "cpu":
            raise ValueError(f"the numpy backend runs on the CPU only, not {device!r}; use backend='torch'")
        return NumpyBackend(seed)
    if name == "torch":
        return TorchBackend(seed, device)
    raise ValueError(f"unknown array backend {name!r}; choose 'numpy' or 'torch'")
