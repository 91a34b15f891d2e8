"""The written-out forward and backward of a plain MLP (nn.Linear layers with one activation between
them), and Adam's step on one flat parameter: the pieces the written-out updates share
(actor_critic_backward.py for A2C/PPO, dqn_backward.py for DQN, sac_backward.py for SAC). The activation
also serves a seed batch's stacked forward under autograd (`Activation`, stacked_seeds.py).

A forward keeps every layer's output; the backward walks them in reverse and writes each layer's
gradient into its `.grad` (a view into the net's flat gradient buffer, flat_params.py) with `out=`.
Both read the layers through a `LinearStack`, gathered once per module: looking each weight, bias and
gradient up through the module on every pass cost 5% of the zoo DQN's update and 8% of SAC's.

`matmul` hands one kind of product to numpy's BLAS: on CPU, MKL (which torch calls) takes a slow path
when the right operand is row-major with 2 to 8 columns. In these updates that is the first layer's
weight gradient dL/dz^T x of a net with a few inputs (CartPole's 4, Pendulum's 3) and, in SAC, the
gradient through each critic's first layer to (obs, action).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

#: A CPU product whose right operand is row-major with at most this many columns (and at least 2) is
#: computed by numpy's BLAS: MKL takes 75 us for 256x256 by 256x4 on this AMD CPU, numpy 6-8 us with
#: the tensor-to-array views (`python benches/update_floor.py` prints both for an update's products).
#: With one column both use a matrix-vector kernel; a column-major right operand (a transposed weight,
#: as every forward passes it) takes MKL's fast path.
NARROW_COLUMNS = 8
_NUMPY_DTYPES = (torch.float32, torch.float64)


def numpy_computes(left: torch.Tensor, right: torch.Tensor) -> bool:
    """Whether `matmul(left, right)` goes through numpy: a CPU product whose right operand is row-major
    with 2 to NARROW_COLUMNS columns."""
    return (  # the shape first: it settles the wide products, most of an update's, in a third of the time
        2 <= right.shape[1] <= NARROW_COLUMNS
        and right.device.type == "cpu"
        and right.stride(1) == 1
        and right.dtype in _NUMPY_DTYPES
        and left.dtype == right.dtype
    )


def matmul(left: torch.Tensor, right: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """left @ right of two matrices (into `out` when given), by numpy's BLAS on the tensors' own memory
    where `numpy_computes` says so, else by torch. Called under no_grad, as the written-out passes are
    (numpy reads a parameter only outside autograd)."""
    if numpy_computes(left, right):
        if out is None:
            out = left.new_empty((left.shape[0], right.shape[1]))
        numpy_matmul(left.numpy(), right.numpy(), out.numpy())
        return out
    return torch.mm(left, right) if out is None else torch.mm(left, right, out=out)


def numpy_matmul(left: np.ndarray, right: np.ndarray, out: np.ndarray) -> None:
    """numpy's product into `out`: the one call `matmul` makes to numpy, which benches/update_floor.py
    records to count these products in an update's matmul floor."""
    np.matmul(left, right, out=out)


def activate_(z: torch.Tensor, activation: str) -> torch.Tensor:
    """The activation applied in place. On a large CPU tensor tanh is computed as 2 * sigmoid(2z) - 1:
    the same function to within 2e-7, and faster than torch.tanh on the CPUs measured (about twice on an
    AVX2 Xeon; on an AVX-512 EPYC torch.tanh takes 2.7 ns an element on one thread, sigmoid 0.4), where tanh
    is the costliest op of a small tanh MLP's update. Small tensors and GPU tensors get the one-op tanh."""
    if activation == "relu":
        return z.relu_()
    if z.numel() < 4096 or z.device.type != "cpu":
        return z.tanh_()
    return z.mul_(2.0).sigmoid_().mul_(2.0).sub_(1.0)


class Activation(torch.autograd.Function):
    """`activate_` for autograd: y = f(z) in place of z (an intermediate no other backward reads), and
    dL/dz = `activation_backward` from y. What a stacked forward under autograd uses where the written-out
    passes call `activate_` (stacked_seeds.py)."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, activation: str) -> torch.Tensor:
        ctx.mark_dirty(z)
        out = activate_(z, activation)
        ctx.activation = activation
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (out,) = ctx.saved_tensors
        return activation_backward(grad, out, ctx.activation), None


def activation_backward(grad: torch.Tensor, out: torch.Tensor, activation: str) -> torch.Tensor:
    """dL/dz from dL/d out and out = f(z): tanh' = 1 - out^2, relu' = [out > 0]."""
    if activation == "tanh":
        return torch.ops.aten.tanh_backward(grad, out)
    return torch.ops.aten.threshold_backward(grad, out, 0.0)


def linear_layers(module: nn.Module) -> list[nn.Linear]:
    """The nn.Linear layers of a module, in forward order."""
    return [layer for layer in module.modules() if isinstance(layer, nn.Linear)]


class LinearStack:
    """A module's nn.Linear layers, in forward order, as the written-out passes read them: per layer the
    weight, its transpose, the bias and the two gradient views. Gathered again when the module's
    parameters were re-gathered (FlatParameters moved or copied: every `.grad` is then a new view)."""

    def __init__(self, module: nn.Module) -> None:
        self.layers = linear_layers(module)
        self.gather()

    @torch.no_grad()
    def gather(self) -> None:
        self.tensors = [
            (layer.weight, layer.weight.t(), layer.bias, layer.weight.grad, layer.bias.grad) for layer in self.layers
        ]

    def current(self) -> list[tuple[torch.Tensor, ...]]:
        """[(weight, weight^T, bias, weight.grad, bias.grad)] per layer, gathered again if they moved."""
        if self.layers[0].weight.grad is not self.tensors[0][3]:
            self.gather()
        return self.tensors


_STACKS: weakref.WeakKeyDictionary[nn.Module, LinearStack] = weakref.WeakKeyDictionary()


def linear_stack(module: nn.Module) -> LinearStack:
    """The module's LinearStack, made on first use and kept as long as the module lives."""
    stack = _STACKS.get(module)
    if stack is None:
        stack = _STACKS[module] = LinearStack(module)
    return stack


@torch.no_grad()
def mlp_forward(
    module: nn.Module, x: torch.Tensor, activation: str = "relu", last_activation: bool = False
) -> list[torch.Tensor]:
    """Every layer's output, the input first: [x, f(x W1^T + b1), ..., x_{n-1} Wn^T + bn], the last one
    activated too when `last_activation` (as `nets.mlp` builds it)."""
    tensors = linear_stack(module).current()
    outputs = [x]
    for index, (_, weight_t, bias, _, _) in enumerate(tensors):
        z = torch.addmm(bias, outputs[-1], weight_t)  # what nn.Linear computes, on the cached transpose
        if index < len(tensors) - 1 or last_activation:
            z = z.relu_() if activation == "relu" else z.tanh_()
        outputs.append(z)
    return outputs


@torch.no_grad()
def mlp_backward(
    module: nn.Module,
    outputs: Sequence[torch.Tensor],
    grad: torch.Tensor,
    activation: str = "relu",
    last_activation: bool = False,
    weights: bool = True,
    input_grad: bool = False,
) -> torch.Tensor | None:
    """From `mlp_forward`'s outputs (of the rows the loss saw) and dL/d output: write every layer's
    `.grad` (unless `weights` is False) and return dL/d input when `input_grad`.

    Per layer y = f(x W^T + b): dL/dW = dL/dz^T x, dL/db = sum_batch dL/dz, dL/dx = dL/dz W."""
    tensors = linear_stack(module).current()
    for index in reversed(range(len(tensors))):
        weight, _, _, weight_grad, bias_grad = tensors[index]
        if index < len(tensors) - 1 or last_activation:
            grad = activation_backward(grad, outputs[index + 1], activation)
        if weights:
            matmul(grad.t(), outputs[index], out=weight_grad)
            torch.sum(grad, 0, out=bias_grad)
        if index > 0 or input_grad:
            grad = matmul(grad, weight)
    return grad if input_grad else None


@torch.no_grad()
def adam_step(optimizer: torch.optim.Optimizer) -> None:
    """`optimizer.step()` for an Adam(fused=True) over one flat parameter: the same kernel on the same
    state tensors, without the generic step's per-call bookkeeping (about half of a step's time on a net of
    67k parameters here). Any other optimizer or setting takes its own `step()`. tests/speed/test_mlp_backward.py
    holds it bitwise equal to `optimizer.step()`."""
    group = optimizer.param_groups[0]
    state = optimizer.state[group["params"][0]] if len(optimizer.param_groups) == len(group["params"]) == 1 else None
    generic = not isinstance(optimizer, torch.optim.Adam) or not state  # no state yet: the first step creates it
    if generic or group["amsgrad"] or group["maximize"] or not group["fused"] or torch.is_tensor(group["lr"]):
        optimizer.step()
        return
    (param,) = group["params"]
    beta1, beta2 = group["betas"]
    state["step"].add_(1)
    torch._fused_adam_(
        [param],
        [param.grad],
        [state["exp_avg"]],
        [state["exp_avg_sq"]],
        [],
        [state["step"]],
        amsgrad=False,
        lr=group["lr"],
        beta1=beta1,
        beta2=beta2,
        weight_decay=group["weight_decay"],
        eps=group["eps"],
        maximize=False,
    )
