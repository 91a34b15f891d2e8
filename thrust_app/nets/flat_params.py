"""All of a module's parameters in one contiguous buffer, and all of their gradients in another.

A small net's update pays per tensor, not per number: the gradient clip and the optimizer touch each
parameter tensor with several ops each. With every parameter a view into one buffer and every `.grad`
a view into another, the clip is two ops on one tensor and the optimizer steps one tensor (`flat`),
while the module keeps its usual named parameters for forward passes, state dicts and export.
"""

from __future__ import annotations

import torch
from torch import nn

#: Each parameter starts at a multiple of this many elements (64 bytes in float32), so that every view
#: is as aligned as a tensor of its own would be.
ALIGN = 16


def padded_sizes(params: list[torch.Tensor]) -> list[int]:
    """The room each parameter takes in the flat buffer: its size rounded up to a multiple of ALIGN."""
    return [-(-p.numel() // ALIGN) * ALIGN for p in params]


class FlatParameters(nn.Module):
    """Mixin for a module whose parameters live in one buffer. Call `flatten_parameters()` at the end of
    `__init__`; moving the module (`.to(device)`) or copying it (`copy.deepcopy`) flattens again.

    `flat` is what the optimizer steps and `flat.grad` what the gradient clip scales. Gradients are never
    set to None: `zero_grad()` zeroes the buffer, autograd accumulates into the views, and hand-written
    backward passes write into them with `out=`. Build optimizers after the module is on its device,
    as with any module.
    """

    flat: torch.Tensor

    def flatten_parameters(self) -> None:
        params = list(self.parameters())
        sizes = padded_sizes(params)
        first = params[0]
        flat = torch.zeros(sum(sizes), dtype=first.dtype, device=first.device)
        grad = torch.zeros_like(flat)
        offset = 0
        for p, size in zip(params, sizes, strict=True):
            n = p.numel()
            flat[offset : offset + n].copy_(p.detach().reshape(-1))
            p.data = flat[offset : offset + n].view_as(p)
            p.grad = grad[offset : offset + n].view_as(p)
            offset += size
        flat.grad = grad
        self.flat = flat  # a plain tensor attribute: not a registered parameter, not in the state dict

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Zero the one gradient buffer. Never None, whatever `set_to_none` says: the parameters'
        `.grad` are views into it, and a None would leave the optimizer stepping stale gradients."""
        self.flat.grad.zero_()

    def _apply(self, fn, recurse=True):
        super()._apply(fn, recurse)
        self.flatten_parameters()  # moving replaced each parameter's storage: gather them again
        return self

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        self.flatten_parameters()  # copy.deepcopy clones each parameter on its own: gather the copies


def clip_grad_norm_(flat: torch.Tensor, max_norm: float) -> None:
    """Scale `flat.grad` in place so that its L2 norm is at most `max_norm` (nn.utils.clip_grad_norm_'s
    rule, on the one gradient buffer); of a stack of flat buffers (N, P), each row's by its own norm."""
    grad = flat.grad
    grad.mul_((max_norm / (torch.linalg.vector_norm(grad, dim=-1, keepdim=True) + 1e-6)).clamp_(max=1.0))


def flat_optimizer_state(saved: dict, params: list[torch.Tensor]) -> dict:
    """An optimizer state dict saved per parameter (Thrust checkpoints of version 1, before parameters
    were flat) converted to the one flat parameter of a FlatParameters module whose parameters are
    `params`: each per-parameter tensor (Adam's moments, RMSprop's averages) is laid out as the
    parameters are in `flat`; scalars (the step count) are the same for every parameter."""
    sizes = padded_sizes(params)
    states = [saved["state"].get(i, {}) for i in range(len(params))]
    flat_state: dict = {}
    for key, first in states[0].items():
        if first.dim() == 0:
            flat_state[key] = first
            continue
        flat = torch.zeros(sum(sizes), dtype=first.dtype)
        offset = 0
        for state, p, size in zip(states, params, sizes, strict=True):
            flat[offset : offset + p.numel()] = state[key].reshape(-1).cpu()
            offset += size
        flat_state[key] = flat
    groups = [{**saved["param_groups"][0], "params": [0]}]
    return {"state": {0: flat_state} if flat_state else {}, "param_groups": groups}
