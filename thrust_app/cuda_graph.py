"""An off-policy update captured once as a CUDA graph and replayed: the `cuda_graphs` switch of DQN
and SAC (LeanRL's approach to small-net updates on a GPU, where every op is a kernel launch).

Capture records the kernels of one call of `update(batch)` (the written-out gradients, the clip, the
Adam steps, SAC's Polyak step) into a graph; each later update copies the new batch into the
captured batch tensors and replays the graph: one launch instead of a few hundred. Everything the
update touches lives at fixed addresses (the nets' flat buffers, the optimizers' state), which is what
makes replay valid. The warm-up steps capture needs are undone, so a captured run takes the same
steps as an eager one. `unavailable_reason` says in one line why a run cannot use it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .replay import Batch

Update = Callable[[Batch], dict[str, torch.Tensor]]

#: Eager calls before capture: they let cuBLAS and the allocator settle on a side stream (PyTorch's rule).
WARMUP_CALLS = 3


def unavailable_reason(device: torch.device, fast_backward: bool, lr_schedule: str) -> str | None:
    """Why this run cannot capture its update, or None when it can."""
    if device.type != "cuda":
        return f"the run is on {device.type}; CUDA graphs need a CUDA device (--device cuda), so the update runs eagerly"
    if not fast_backward:
        return "it needs backward=fast (the autograd path's optimizer step is not capturable here); running eagerly"
    if lr_schedule != "constant":
        return "it needs lr_schedule=constant (a graph keeps the learning rate it was captured with); running eagerly"
    return None


class CapturedUpdate:
    """`update` captured on `example` (a sampled batch: its shapes and dtypes are the graph's);
    call it with each new batch of the same shapes. Capture after one eager update, so that the
    optimizers' state exists (it is part of what the graph reads and writes)."""

    def __init__(self, update: Update, example: Batch, state: list[torch.Tensor]) -> None:
        """`state` is every tensor the update changes in place (parameters, optimizer moments and step
        counts, SAC's temperature): saved before warm-up and capture, restored after."""
        saved = [tensor.detach().clone() for tensor in state]
        rng = torch.cuda.get_rng_state()  # SAC's sampling noise: the warm-up's draws are undone too
        self.batch = tuple(tensor.clone() for tensor in example)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_CALLS):
                update(self.batch)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.logs = update(self.batch)
        with torch.no_grad():
            for tensor, value in zip(state, saved, strict=True):
                tensor.copy_(value)
        torch.cuda.set_rng_state(rng)

    def __call__(self, batch: Batch) -> dict[str, torch.Tensor]:
        for captured, new in zip(self.batch, batch, strict=True):
            captured.copy_(new)
        self.graph.replay()
        return self.logs
