"""What the compiled updates (`update="numba"`, numba_kernels.py) read the nets through: numpy
views of a module's nn.Linear layers, the one-thread limit of the BLAS they call, and when they can serve.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np
import threadpoolctl
import torch
from torch import nn

from .mlp_backward import LinearStack, linear_layers, linear_stack

#: One numpy view per layer, in forward order: weights (out, in), biases, and their gradients' views.
Arrays = tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...], tuple[np.ndarray, ...], tuple[np.ndarray, ...]]


def unsupported_reason(device: torch.device, dtype: torch.dtype, stacks: Sequence[nn.Module] = ()) -> str | None:
    """Why the compiled update cannot serve nets on this device with this dtype, or None when it can; each of
    `stacks` (SAC's actor encoder) must have a linear layer."""
    if device.type != "cpu":
        return f"numba compiles for the CPU, and the nets are on {device}; the written-out torch update runs instead"
    if dtype != torch.float32:
        return f"the compiled kernels take float32 parameters, these are {dtype}"
    if not all(linear_layers(stack) for stack in stacks):
        return "a net has no hidden layer (hidden=()), which the compiled kernels do not cover"
    return None


class ArrayStack:
    """numpy views of a module's nn.Linear layers (weights, biases, weight and bias gradients), made again
    whenever its LinearStack was gathered again (the parameters moved or were copied)."""

    def __init__(self, stack: LinearStack) -> None:
        self.stack = stack
        self.source: list | None = None
        self.arrays: Arrays = ((), (), (), ())

    def current(self) -> Arrays:
        tensors = self.stack.current()
        if tensors is not self.source:
            weights, _, biases, weight_grads, bias_grads = zip(*tensors, strict=True)
            groups = (weights, biases, weight_grads, bias_grads)
            self.arrays = tuple(tuple(tensor.detach().numpy() for tensor in group) for group in groups)
            self.source = tensors
        return self.arrays


_ARRAY_STACKS: weakref.WeakKeyDictionary[nn.Module, ArrayStack] = weakref.WeakKeyDictionary()


def layer_arrays(module: nn.Module) -> Arrays:
    """(weights, biases, weight gradients, bias gradients) of the module's layers as numpy views."""
    arrays = _ARRAY_STACKS.get(module)
    if arrays is None:
        arrays = _ARRAY_STACKS[module] = ArrayStack(linear_stack(module))
    return arrays.current()


def limit_blas_threads(threads: int) -> None:
    """Hold the BLAS that numba calls (SciPy's) to `threads`: threadpoolctl limits only the libraries
    loaded when it is called, and SciPy's BLAS loads with numba's first product."""
    import scipy.linalg.cython_blas  # noqa: F401  (loads the library, so that the limit reaches it)

    threadpoolctl.threadpool_limits(threads, user_api="blas")
