"""Work captured once as a CUDA graph and replayed: the `cuda_graphs` switch of DQN, SAC (one gradient
step on a replay batch) and PPO (one minibatch step, and a whole rollout's collection when the env's
arrays live on the GPU). LeanRL's approach to small nets on a GPU, where every op is a kernel launch
and the launches, not the arithmetic, take the time.

Capture records the kernels of one call of `step(inputs)` (the written-out gradients, the clip, the
Adam steps, SAC's Polyak step) into a graph; each later call copies the new inputs into the captured
input tensors and replays the graph: one launch instead of a hundred or more. Everything the step
touches lives at fixed addresses (the nets' flat buffers, the optimizers' state), which is what makes
replay valid. The warm-up calls capture needs are undone, so a captured run takes the same steps as an
eager one. `unavailable_reason` says in one line why a run cannot use it.

A collection (`CapturedCollection`) is captured the same way: every step's policy sample, env step and
record, with the env's state arrays and its random generator at fixed places, so that one launch
replays n_steps steps of every env.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..envs.batched import ArrayBatchedEnv

#: What is captured: an update on a tuple of input tensors (a replay batch, a PPO minibatch), returning what
#: it logs, or a collection from (env, env_io, obs), returning rollout.CollectedSteps.
Step = Callable[[Sequence[Any]], Any]

#: Eager calls before capture: they let cuBLAS and the allocator settle on a side stream (PyTorch's rule).
WARMUP_CALLS = 3


def same_device(first: torch.device, second: torch.device) -> bool:
    """Whether two devices are one: the same type and, for CUDA, the same index (no index: the current one)."""
    if first.type != second.type:
        return False
    if first.type != "cuda" or first.index == second.index:
        return True
    current = torch.cuda.current_device() if torch.cuda.is_available() else 0
    return (current if first.index is None else first.index) == (current if second.index is None else second.index)


def collection_unavailable_reason(env: Any, device: torch.device) -> str | None:
    """Why a rollout on `env` cannot be captured on `device`, or None when it can."""
    if not isinstance(env, ArrayBatchedEnv) or env.backend.name != "torch" or env.backend.device.type != device.type:
        return "the env's arrays are not on the GPU (--env-backend torch puts Thrust's batched envs there)"
    if not same_device(env.backend.device, device):
        return f"the env's arrays are on {env.backend.device} and the learner on {device}; one graph takes one device"
    if env.check_actions:
        return "the env checks every action on the host (check_actions=True)"
    return None


def warm_up(step: Step, inputs: Any, calls: int) -> None:
    """Call `step(inputs)` `calls` times on a side stream: what PyTorch asks before a capture (it lets cuBLAS
    and the allocator settle); the caller undoes what the calls changed."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(calls):
            step(inputs)
    torch.cuda.current_stream().wait_stream(side)


def unavailable_reason(device: torch.device, handwritten: bool, schedules: dict[str, str]) -> str | None:
    """Why this run cannot capture its update, or None when it can. `schedules` are the run's schedule
    settings by name (`lr_schedule`, PPO's `clip_schedule`): a graph keeps the values it was captured with."""
    if device.type != "cuda":
        return f"the run is on {device.type}; CUDA graphs need a CUDA device (--device cuda), so the update runs eagerly"
    if not handwritten:
        return "it needs update=handwritten (the autograd path's optimizer step is not capturable here); running eagerly"
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
        warm_up(step, self.inputs, WARMUP_CALLS)
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
        self.captured: CapturedUpdate | CapturedCollection | None = None
        self.eager_calls = 0

    def __call__(self, inputs: Sequence[Any]) -> Any:
        if self.captured is not None and self.captured.fits(inputs):
            return self.captured(inputs)
        if self.enabled and self.captured is None and self.eager_calls > 0:
            self.captured = self.capture(inputs)
            return self.captured(inputs)
        self.eager_calls += 1
        return self.step(inputs)

    def capture(self, inputs: Sequence[Any]) -> CapturedUpdate:
        """The graph of `step` on inputs like these."""
        return CapturedUpdate(self.step, inputs, self.state())

    def forget(self) -> None:
        """Drop the graph (loading a checkpoint replaced the optimizers' state tensors): capture again."""
        self.captured = None


class CapturedCollection:
    """`collect((env, env_io, obs))` captured on one batched env on the GPU; call it with that env and new
    observations of the same shape. `collect` is rollout.collect_steps with the policy bound.

    The graph reads the env's state arrays and the observations from fixed input tensors and, as its last
    kernels, writes the state after the last step back into them; the env's attributes point at those
    inputs between calls. The env's generator is registered with the graph, so each replay draws the
    numbers the eager steps would have drawn, as the policy's draws from torch's default generator do."""

    def __init__(self, collect: Step, example: Sequence[Any]) -> None:
        env, env_io, obs = example
        self.env = env
        self.state = {name: getattr(env, name).clone() for name in env.state_arrays}
        self.obs = obs.clone()
        rngs = torch.cuda.get_rng_state(), env.backend.get_state()
        self._point_env_at_inputs()
        warm_up(collect, (env, env_io, self.obs), 1)
        self._point_env_at_inputs()  # the warm-up replaced the env's arrays (never changing them in place)
        torch.cuda.set_rng_state(rngs[0])
        env.backend.set_state(rngs[1])
        self.graph = torch.cuda.CUDAGraph()
        self.graph.register_generator_state(env.backend.generator)
        with torch.cuda.graph(self.graph):
            self.steps, self.last_values, next_obs = collect((env, env_io, self.obs))
            for name, tensor in self.state.items():
                tensor.copy_(getattr(env, name))
            self.obs.copy_(next_obs)
        self._point_env_at_inputs()  # capture ran nothing: the inputs still hold the state before it

    def _point_env_at_inputs(self) -> None:
        for name, tensor in self.state.items():
            setattr(self.env, name, tensor)

    def fits(self, inputs: Sequence[Any]) -> bool:
        """Whether `inputs` are the captured env's, with observations of the captured shape."""
        env, _, obs = inputs
        return env is self.env and obs.shape == self.obs.shape

    def __call__(self, inputs: Sequence[Any]) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
        """Replay from `inputs`' observations and the env's state; returns copies of the graph's outputs
        (the next replay overwrites the graph's own)."""
        env, _, obs = inputs
        for name, tensor in self.state.items():
            current = getattr(env, name)
            if current is not tensor:  # the env was reset or loaded since: its new state goes into the inputs
                tensor.copy_(current)
                setattr(env, name, tensor)
        if obs is not self.obs:
            self.obs.copy_(obs)
        self.graph.replay()
        steps = {key: tensor.clone() for key, tensor in self.steps.items()}
        return steps, self.last_values.clone(), self.obs.clone()


class GraphedCollection(GraphedStep):
    """A rollout's collection (`collect((env, env_io, obs))`) eagerly, or, once `enabled`, captured at its
    second call on a batched env on the GPU and replayed from then on (another env: eager)."""

    def __init__(self, collect: Step) -> None:
        super().__init__(collect, state=lambda: [])  # CapturedCollection keeps the env's arrays itself

    def capture(self, inputs: Sequence[Any]) -> CapturedCollection:
        return CapturedCollection(self.step, inputs)
