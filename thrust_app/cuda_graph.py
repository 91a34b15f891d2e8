"""An update captured once as a CUDA graph and replayed: the `cuda_graphs` switch of DQN, SAC (one
gradient step on a replay batch) and PPO (one minibatch step). LeanRL's approach to small-net updates
on a GPU, where every op is a kernel launch and the launches, not the arithmetic, take the time.

Capture records the kernels of one call of `step(inputs)` (the written-out gradients, the clip, the
Adam steps, SAC's Polyak step) into a graph; each later call copies the new inputs into the captured
input tensors and replays the graph: one launch instead of a hundred or more. Everything the step
touches lives at fixed addresses (the nets' flat buffers, the optimizers' state), which is what makes
replay valid. The warm-up calls capture needs are undone, so a captured run takes the same steps as an
eager one. `unavailable_reason` says in one line why a run cannot use it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

#: One update on a tuple of input tensors (a replay batch, a PPO minibatch); returns what it logs.
Step = Callable[[Sequence[torch.Tensor]], Any]

#: Eager calls before capture: they let cuBLAS and the allocator settle on a side stream (PyTorch's rule).
WARMUP_CALLS = 3

#: The `cuda_graphs` setting's help, one text for every algorithm that has it.
CUDA_GRAPHS_HELP = (
    "capture the update as a CUDA graph after its first step and replay it (cuda_graph.py; needs --device cuda, "
    "backward=fast and constant schedules; otherwise a note says why and the update runs eagerly)"
)


def unavailable_reason(device: torch.device, fast_backward: bool, schedules: dict[str, str]) -> str | None:
    """Why this run cannot capture its update, or None when it can. `schedules` are the run's schedule
    settings by name (`lr_schedule`, PPO's `clip_schedule`): a graph keeps the values it was captured with."""
    if device.type != "cuda":
        return f"the run is on {device.type}; CUDA graphs need a CUDA device (--device cuda), so the update runs eagerly"
    if not fast_backward:
        return "it needs backward=fast (the autograd path's optimizer step is not capturable here); running eagerly"
    for name, value in schedules.items():
        if value != "constant":
            return f"it needs {name}=constant (a graph keeps the value it was captured with); running eagerly"
    return None


class CapturedUpdate:
    """`step` captured on `example` (its shapes and dtypes are the graph's); call it with new inputs of
    the same shapes. Capture after one eager step, so that the optimizers' state exists (it is part of
    what the graph reads and writes)."""

    def __init__(self, step: Step, example: Sequence[torch.Tensor], state: list[torch.Tensor]) -> None:
        """`state` is every tensor the step changes in place (parameters, optimizer moments and step
        counts, SAC's temperature): saved before warm-up and capture, restored after."""
        saved = [tensor.detach().clone() for tensor in state]
        rng = torch.cuda.get_rng_state()  # SAC's sampling noise: the warm-up's draws are undone too
        self.inputs = tuple(tensor.clone() for tensor in example)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_CALLS):
                step(self.inputs)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.logs = step(self.inputs)
        with torch.no_grad():
            for tensor, value in zip(state, saved, strict=True):
                tensor.copy_(value)
        torch.cuda.set_rng_state(rng)

    def fits(self, inputs: Sequence[torch.Tensor]) -> bool:
        """Whether `inputs` have the captured shapes."""
        return all(captured.shape == new.shape for captured, new in zip(self.inputs, inputs, strict=True))

    def __call__(self, inputs: Sequence[torch.Tensor]) -> Any:
        """Replay on `inputs`; the logs returned are the graph's own tensors, overwritten by the next replay."""
        for captured, new in zip(self.inputs, inputs, strict=True):
            captured.copy_(new)
        self.graph.replay()
        return self.logs


class GraphedStep:
    """`step(inputs)` eagerly, or, once `enabled`, captured at its second call (the first creates the
    optimizers' state) and replayed from then on. Inputs of other shapes than the captured ones (PPO's
    short last minibatch) take the eager step, on the same parameters and optimizer state."""

    def __init__(self, step: Step, state: Callable[[], list[torch.Tensor]]) -> None:
        self.step = step
        self.state = state  #: every tensor the step changes in place, asked for at capture time
        self.enabled = False
        self.captured: CapturedUpdate | None = None
        self.eager_calls = 0

    def __call__(self, inputs: Sequence[torch.Tensor]) -> Any:
        if self.captured is not None and self.captured.fits(inputs):
            return self.captured(inputs)
        if self.enabled and self.captured is None and self.eager_calls > 0:
            self.captured = CapturedUpdate(self.step, inputs, self.state())
            return self.captured(inputs)
        self.eager_calls += 1
        return self.step(inputs)

    def forget(self) -> None:
        """Drop the graph (loading a checkpoint replaced the optimizers' state tensors): capture again."""
        self.captured = None
