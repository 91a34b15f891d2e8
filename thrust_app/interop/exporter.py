"""`thrust export`: a trained run's deterministic policy as an ONNX bundle, checked against torch first.

The graph is the policy ready to act (see `thrust_app.interop.bundle` for inputs, outputs and dtypes). Before
anything is written, onnxruntime runs the exported file side by side with torch on random and on
real observations at batch 1 and a large batch; a bundle that disagrees is refused, with the numbers.
The bundle folder appears whole or not at all: it is built in a temporary folder and renamed into place.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from ..algos.base import NumpyPolicy
from ..envs import env_observation_parts, env_parted_space, env_spaces
from ..envs.batched import make_batched
from ..envs.core import Discrete, MultiDiscrete
from ..envs.pipeline import ObservationPart, Pipeline
from ..nets.obs_normalizer import NormalizedPolicy, ObsNormalizer
from ..nets.policies import ActorCritic
from ..runs.files import CONFIG_FILE, SUMMARY_FILE, RunDirError, read_json
from ..runs.staging import install, staged_folder
from ..training.run_spec import RunSpec, load_spec
from ..training.trainer import load_policy
from ..version import __version__
from .bundle import (
    CONTINUOUS_ACTION_DTYPE,
    DISCRETE_ACTION_DTYPE,
    MANIFEST_FILE,
    MODEL_FILE,
    Bundle,
    BundleError,
    OnnxPolicy,
    check_model_file,
    export_dir,
    load_bundle,
    sha256_file,
)
from .manifest import BUNDLE_FORMAT, BUNDLE_VERSION

#: Largest |torch - onnxruntime| accepted on any float output.
MAX_ABS_DIFF = 1e-4
#: Discrete actions may differ only where torch's two best scores are closer than this (a tie).
TIE_GAP = 1e-5
LARGE_BATCH = 256


class ParityError(BundleError):
    """The exported model does not act like the torch policy."""


class PolicyGraph(nn.Module):
    """What the ONNX graph computes: scores and an int32 action (discrete), or the bounded action."""

    recurrent = False

    def __init__(self, policy: nn.Module, discrete: bool) -> None:
        super().__init__()
        self.policy = policy
        self.discrete = discrete

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None):
        out = self.policy.act(obs) if mask is None else self.policy.act(obs, mask)
        if self.discrete:
            scores, action = out
            return scores, action.to(torch.int32)
        return out


class RecurrentPolicyGraph(PolicyGraph):
    """A policy with memory: PolicyGraph's outputs from (obs, state) (and the action mask), then `next_state`,
    the memory to feed back at the next step (zeros at an episode's start)."""

    recurrent = True

    def forward(self, obs: torch.Tensor, state: torch.Tensor, mask: torch.Tensor | None = None):
        *out, next_state = self.policy.act(obs, state=state) if mask is None else self.policy.act(obs, mask, state=state)
        if self.discrete:
            scores, action = out
            return scores, action.to(torch.int32), next_state
        return out[0], next_state


def flat_part(part: ObservationPart, x: torch.Tensor) -> torch.Tensor:
    """One part as the env gives it -> its stretch of the flat vector (gymnasium's flatten): a Box or MultiBinary
    flattened, a Discrete one-hot, a MultiDiscrete one-hot per component."""
    rows = x.reshape(x.shape[0], -1)
    if part.kind in ("box", "multi_binary"):
        return rows.float()
    hots = [(rows[:, i : i + 1] == torch.arange(n, device=x.device)).float() for i, n in enumerate(part.nvec)]
    return torch.cat(hots, -1)


class PartsGraph(nn.Module):
    """A graph over the flat observation that takes a Dict or Tuple observation as one input per part, each as
    the env gives it (`observation.parts` in the manifest), flattens them inside, and runs `graph` on the flat
    vector with its other inputs (the memory, the action mask)."""

    def __init__(self, graph: PolicyGraph, parts: list[ObservationPart]) -> None:
        super().__init__()
        self.policy_graph, self.parts = graph, parts  # not `graph`: an exported module's own attribute
        self.discrete = graph.discrete

    def forward(self, *inputs: torch.Tensor):
        count = len(self.parts)
        flat = torch.cat([flat_part(part, x) for part, x in zip(self.parts, inputs[:count], strict=True)], -1)
        return self.policy_graph(flat, *inputs[count:])


#: The dtype a part's input takes: the env's integers for discrete parts, float32 for bits; a Box its own.
PART_DTYPES = {"multi_binary": "float32", "discrete": "int64", "multi_discrete": "int64"}


def part_dtype(part: ObservationPart) -> str:
    return PART_DTYPES.get(part.kind, part.dtype)


def policy_graph(policy: nn.Module, discrete: bool) -> PolicyGraph:
    """The graph module of `policy`: with memory (`state_size`) a RecurrentPolicyGraph."""
    return (RecurrentPolicyGraph if getattr(policy, "state_size", 0) else PolicyGraph)(policy, discrete)


#: The memory's input and output in a recurrent policy's graph.
STATE_INPUT, STATE_OUTPUT = "state", "next_state"


def exported_module(policy: nn.Module) -> nn.Module:
    """The module the ONNX file holds: an actor-critic over vector observations as its policy tower alone
    (a plain MLP, no value tower); every other policy as it is. Parity is checked against `policy` itself."""
    if isinstance(policy, NormalizedPolicy):  # the normalisation stays in front, in the graph
        return NormalizedPolicy(exported_module(policy.policy), policy.normalizer)
    if isinstance(policy, ActorCritic) and not policy.uses_cnn and not policy.nvec and policy.combined is None:
        return policy.policy_mlp()
    return policy


def output_specs(algo: str, action_space: Any, state_size: int = 0) -> list[dict[str, Any]]:
    """The manifest's outputs: the scores and the action (the bounded action alone for Box), and a recurrent
    policy's next memory."""
    memory = [
        {
            "name": STATE_OUTPUT,
            "dtype": "float32",
            "shape": ["batch", state_size],
            "meaning": f"the policy's memory after this step: feed it as '{STATE_INPUT}' with the next observation",
        }
    ]
    return action_outputs(algo, action_space) + (memory if state_size else [])


def action_outputs(algo: str, action_space: Any) -> list[dict[str, Any]]:
    if isinstance(action_space, MultiDiscrete):
        logits, components = sum(action_space.nvec), len(action_space.nvec)
        meaning = "each component's logits, side by side"
        return [
            {"name": "logits", "dtype": "float32", "shape": ["batch", logits], "meaning": meaning},
            {
                "name": "action",
                "dtype": DISCRETE_ACTION_DTYPE,
                "shape": ["batch", components],
                "meaning": "argmax per component",
            },
        ]
    if isinstance(action_space, Discrete):
        scores = "q_values" if algo == "dqn" else "logits"
        meaning = "Q-value of each action" if algo == "dqn" else "unnormalised log-probability of each action"
        return [
            {"name": scores, "dtype": "float32", "shape": ["batch", action_space.n], "meaning": meaning},
            {
                "name": "action",
                "dtype": DISCRETE_ACTION_DTYPE,
                "shape": ["batch"],
                "meaning": f"greedy action, argmax of {scores}",
            },
        ]
    return [
        {
            "name": "action",
            "dtype": CONTINUOUS_ACTION_DTYPE,
            "shape": ["batch", *action_space.shape],
            "meaning": "deterministic action, already squashed/clipped and scaled to the env's bounds",
        }
    ]


def export_onnx(
    graph: PolicyGraph,
    obs_shape: tuple[int, ...],
    outputs: list[dict[str, Any]],
    path: Path,
    obs_dtype: str = "float32",
    n_masked: int | None = None,
    state_size: int = 0,
) -> None:
    """The graph as one ONNX file, batch dimension dynamic; `n_masked`: it also takes an (N, n_masked) bool
    action mask, for a policy of an env that offers masks; `state_size`: the (N, state_size) memory of a
    recurrent policy, before the mask. A PartsGraph takes one input per part of the observation instead of `obs`."""
    batch = torch.export.Dim("batch", min=1)
    if isinstance(graph, PartsGraph):
        inputs = [torch.zeros((2, *part.shape), dtype=getattr(torch, part_dtype(part))) for part in graph.parts]
        names = [part.name for part in graph.parts]
    else:  # uint8 frames stay bytes: the graph scales them
        inputs, names = [torch.zeros((2, *obs_shape), dtype=getattr(torch, obs_dtype))], ["obs"]
    if state_size:
        inputs, names = [*inputs, torch.zeros(2, state_size)], [*names, STATE_INPUT]
    if n_masked is not None:
        inputs, names = [*inputs, torch.ones((2, n_masked), dtype=torch.bool)], [*names, "action_mask"]
    if isinstance(graph, PartsGraph):
        dynamic: Any = {"inputs": tuple({0: batch} for _ in inputs)}
    else:
        arguments = ["obs", *(["state"] if state_size else []), *(["mask"] if n_masked is not None else [])]
        dynamic = {argument: {0: batch} for argument in arguments}  # by the graph's forward's argument names
    # The exporter narrates its passes on stdout and warns about torchvision ops no policy uses.
    registration_log = logging.getLogger("torch.onnx._internal.exporter._registration")
    level = registration_log.level
    registration_log.setLevel(logging.ERROR)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.filterwarnings("ignore", message=".*The axis name")  # obs and action mask share their batch axis
        program = torch.onnx.export(
            graph,
            tuple(inputs),
            dynamo=True,
            input_names=names,
            output_names=[o["name"] for o in outputs],
            dynamic_shapes=dynamic,
        )
        program.save(str(path), external_data=False)
    registration_log.setLevel(level)


def random_observations(space: Any, rng: np.random.Generator, n: int) -> np.ndarray:
    """`n` observations uniform within a Box space (N(0, 1) where it is unbounded; sparse 0/1 grids for
    an image of 0/1 cells; any byte for uint8 frames), in the space's dtype."""
    if space.dtype == "uint8":
        return rng.integers(0, 256, (n, *space.shape), dtype=np.uint8)
    low = np.asarray(space.low, dtype=np.float64).reshape(space.shape)
    high = np.asarray(space.high, dtype=np.float64).reshape(space.shape)
    finite = np.isfinite(low) & np.isfinite(high) & (high - low < 1e6)
    shape = (n, *space.shape)
    if low.min() == 0 and high.max() == 1 and len(space.shape) == 3:  # image of 0/1 cells
        return (rng.random(shape) < 0.1).astype(np.float32)
    uniform = rng.uniform(np.where(finite, low, 0), np.where(finite, high, 1), size=shape)
    return np.where(finite, uniform, rng.normal(size=shape)).astype(np.float32)


class Samples(NamedTuple):
    """What parity is checked on, each by source ("random", "env"): observations, and where the policy takes them,
    action masks (random ones, each allowing at least one action, and the env's own) and memories (random
    ones, and those the policy had in the env's episodes)."""

    obs: dict[str, np.ndarray]
    masks: dict[str, np.ndarray] | None = None
    states: dict[str, np.ndarray] | None = None


def sample_observations(
    env_id: str, policy: nn.Module, rng: np.random.Generator, n_env_steps: int = 256, pipeline: Pipeline | None = None
) -> Samples:
    """Random observations (within the space, or N(0, 1) where it is unbounded) and real ones from the policy's
    own deterministic episodes; with their masks and memories where the env and the policy have them."""
    env = make_batched(env_id, 8, seed=int(rng.integers(2**31)), pipeline=pipeline)
    random_obs = random_observations(env.observation_space, rng, LARGE_BATCH)
    space = env_parted_space(env_id, pipeline)
    if space is not None:  # a Dict or Tuple: valid parts (one-hot where discrete), flattened
        space.seed(int(rng.integers(2**31)))
        random_obs = np.stack([gym.spaces.flatten(space, space.sample()) for _ in range(LARGE_BATCH)]).astype(np.float32)
    act = NumpyPolicy(policy)
    obs = env.reset()
    memory = np.zeros((8, act.state_size), np.float32)
    seen, seen_masks, seen_memory = [], [], []
    for _ in range(n_env_steps // 8):
        masks = env.action_masks()
        seen.append(obs)
        seen_masks.append(masks)
        seen_memory.append(memory)
        if act.state_size:
            action, memory = act(obs, masks, memory)
        else:
            action = act(obs, masks)
        step = env.step(action)
        obs, memory = step.obs, memory * ~(step.terminated | step.truncated)[:, None]  # a new episode starts at zero
    env.close()
    samples = Samples({"random": random_obs, "env": np.concatenate(seen)})
    if seen_masks[0] is not None:
        random_masks = rng.random((LARGE_BATCH, seen_masks[0].shape[1])) < 0.5
        random_masks[np.arange(LARGE_BATCH), rng.integers(seen_masks[0].shape[1], size=LARGE_BATCH)] = True
        samples = samples._replace(masks={"random": random_masks, "env": np.concatenate(seen_masks)})
    if act.state_size:
        random_memory = rng.normal(0.0, 0.5, (LARGE_BATCH, act.state_size)).astype(np.float32)
        samples = samples._replace(states={"random": random_memory, "env": np.concatenate(seen_memory)})
    return samples


def largest_difference(names: list[str], expected: tuple[torch.Tensor, ...], got: dict[str, np.ndarray]) -> float:
    """The largest |torch - onnxruntime| over the float outputs; a non-finite torch output is a ParityError."""
    worst = 0.0
    for name, want in zip(names, expected, strict=True):
        want = want.numpy()
        if want.dtype == np.float32:
            if not np.isfinite(want).all():
                raise ParityError(
                    f"the policy's output '{name}' holds NaN or infinite values (the run "
                    "diverged, or its checkpoint is damaged); nothing was written"
                )
            worst = max(worst, float(np.max(np.abs(want - got[name]))))
    return worst


def check_parity(graph: PolicyGraph, model_path: Path, manifest: dict[str, Any], samples: Samples) -> dict[str, Any]:
    """Run torch and onnxruntime on the same observations (and action masks, and memories); report the worst
    difference and agreement."""
    runner = OnnxPolicy(Bundle(model_path.parent, manifest))
    names = [o["name"] for o in manifest["outputs"]]
    worst, agree, total, ties = 0.0, 0, 0, 0
    for key, obs in samples.obs.items():
        allowed = None if samples.masks is None else samples.masks[key]
        memory = None if samples.states is None else samples.states[key]
        for rows in [slice(i, i + 1) for i in range(8)] + [slice(None)]:  # batch 1 and the large batch
            batch, mask = obs[rows], None if allowed is None else allowed[rows]
            state = None if memory is None else memory[rows]
            inputs = [array for array in (batch, state, mask) if array is not None]
            with torch.no_grad():
                expected = graph(*(torch.as_tensor(array) for array in inputs))
            expected = expected if isinstance(expected, tuple) else (expected,)
            got = runner.run(batch, mask, state)
            worst = max(worst, largest_difference(names, expected, got))
            if graph.discrete:
                scores = np.sort(expected[0].numpy(), axis=-1)
                near_tie = (scores[:, -1] - scores[:, -2]) < TIE_GAP
                same = expected[1].numpy() == got["action"]
                if same.ndim > 1:  # MultiDiscrete: a row agrees when every component does; no ties counted
                    same, near_tie = same.all(-1), np.zeros(len(same), dtype=bool)
                agree += int(same.sum())
                ties += int((~same & near_tie).sum())
                total += len(batch)
    report = {
        "runtime": "onnxruntime CPUExecutionProvider",
        "max_abs_diff": worst,
        "batch_sizes": [1, LARGE_BATCH],
        "observations": {k: len(v) for k, v in samples.obs.items()},
    }
    if graph.discrete:
        report["action_agreement"] = agree / total
        report["near_tie_disagreements"] = ties
    problems = []
    if worst > MAX_ABS_DIFF:
        problems.append(f"max |torch - onnxruntime| is {worst:.3g} (limit {MAX_ABS_DIFF})")
    if graph.discrete and agree + ties < total:
        problems.append(f"actions agree on {agree}/{total} observations")
    if problems:
        raise ParityError(
            "the exported model does not act like the torch policy: " + "; ".join(problems) + "; nothing was written"
        )
    return report


def action_space_spec(action_space: Any) -> dict[str, Any]:
    """A manifest's description of an action space."""
    if isinstance(action_space, MultiDiscrete):
        return {"type": "multi_discrete", "nvec": list(action_space.nvec), "n": sum(action_space.nvec)}
    if isinstance(action_space, Discrete):
        return {"type": "discrete", "n": action_space.n}
    return {"type": "box", "shape": list(action_space.shape), "low": list(action_space.low), "high": list(action_space.high)}


def base_manifest(
    env_id: str,
    algo: str,
    obs_shape: tuple[int, ...],
    action_space: Any,
    outputs: list[dict[str, Any]],
    model_path: Path,
    obs_dtype: str = "float32",
    pipeline: Pipeline | None = None,
    masked: bool = False,
    memory: dict[str, Any] | None = None,
    parts: list[ObservationPart] | None = None,
) -> dict[str, Any]:
    """The manifest fields every bundle has, exported or imported (parity is added once it is checked). A
    recurrent policy's `memory` (what recurrent_memory describes) adds its state input and the manifest's
    `memory` entry; a Dict or Tuple observation's `parts` one input each, described in `observation.parts`."""
    model = check_model_file(model_path)
    pipeline = pipeline or Pipeline()
    made = "the env's raw observations" if pipeline == Pipeline() else f"observations of the env inside {pipeline.describe()}"
    return {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "env_id": env_id,
        "algo": algo,
        "observation": {
            "shape": list(obs_shape),
            "dtype": obs_dtype,
            "preprocessing": f"feed {made} ({obs_dtype}), batch first",
            "pipeline": {"env_wrapper": pipeline.wrapper, "frame_stack": pipeline.frame_stack},
            **({"parts": [part.describe() for part in parts]} if parts else {}),
        },
        "action_space": action_space_spec(action_space),
        "inputs": observation_inputs(obs_shape, obs_dtype, parts) + memory_inputs(memory) + mask_inputs(action_space, masked),
        "outputs": outputs,
        "action_output": "action",
        **({"memory": memory} if memory else {}),
        "onnx": {
            "ir_version": model.ir_version,
            "opset": max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
        },
        "versions": {
            "thrust": __version__,
            "torch": torch.__version__,
            "onnx": _version("onnx"),
            "onnxruntime": _version("onnxruntime"),
        },
        "sha256": sha256_file(model_path),
    }


def mask_inputs(action_space: Any, masked: bool) -> list[dict]:
    """The manifest's entry of the action mask input, for a policy of an env that offers masks (none otherwise)."""
    if not masked:
        return []
    return [{"name": "action_mask", "dtype": "bool", "shape": ["batch", action_space.n], "meaning": "the allowed actions"}]


def memory_inputs(memory: dict[str, Any] | None) -> list[dict]:
    """The manifest's entry of a recurrent policy's memory input (none without memory)."""
    if not memory:
        return []
    meaning = f"the policy's memory: zeros at an episode's start, then the last step's '{STATE_OUTPUT}'"
    return [{"name": STATE_INPUT, "dtype": "float32", "shape": ["batch", memory["size"]], "meaning": meaning}]


def observation_inputs(obs_shape: tuple[int, ...], obs_dtype: str, parts: list[ObservationPart] | None) -> list[dict]:
    """The manifest's entries of the observation's inputs: `obs`, or one per part of a Dict or Tuple observation."""
    if not parts:
        return [{"name": "obs", "dtype": obs_dtype, "shape": ["batch", *obs_shape], "meaning": "a batch of observations"}]
    meaning = {"discrete": "the env's integer", "multi_discrete": "the env's integers", "multi_binary": "the env's bits"}
    return [
        {
            "name": part.name,
            "dtype": part_dtype(part),
            "shape": ["batch", *part.shape],
            "meaning": f"observation part {part.name[4:]} as the env gives it ({meaning.get(part.kind, 'its values')})",
        }
        for part in parts
    ]


def run_fields(spec: RunSpec, run_dir: Path, out_dir: Path) -> dict[str, Any]:
    """What an exported bundle's manifest says about the run it came from."""
    summary = read_json(run_dir / SUMMARY_FILE) if (run_dir / SUMMARY_FILE).exists() else {}
    config = read_json(run_dir / CONFIG_FILE)
    return {
        "training": {
            k: summary.get(k) for k in ("timesteps", "eval_mean", "eval_std", "solved_at_step", "seed", "device", "wall_s")
        },
        "config": spec.config,
        "source_run": str(run_dir),
        "command": f"{config.get('command', spec.command())} --run-dir {run_dir} && thrust export {run_dir} --out {out_dir}",
    }


def write_bundle(
    policy: nn.Module,
    env_id: str,
    algo: str,
    out_dir: Path,
    fields: dict[str, Any],
    *,
    force: bool = False,
    seed: int = 0,
    extra_check: Callable[..., dict[str, Any]] | None = None,
    pipeline: Pipeline | None = None,
) -> Bundle:
    """Export `policy` (anything with Thrust's `act(obs)`) for `env_id` as a bundle in `out_dir`: ONNX
    file, manifest (the base fields, then `fields`), parity against `policy` on random and real
    observations, plus `extra_check`'s report on the same observations (and action masks) where given. The folder
    appears whole or not at all: it is built in a temporary folder and renamed into place. `pipeline` is the
    observation pipeline the policy reads the env through (recorded in the manifest)."""
    obs_space, action_space = env_spaces(env_id, pipeline)
    obs_shape = tuple(obs_space.shape)
    memory = recurrent_memory(policy)
    state_size = memory["size"] if memory else 0
    outputs = output_specs(algo, action_space, state_size)
    discrete = isinstance(action_space, Discrete | MultiDiscrete)
    samples = sample_observations(env_id, policy, np.random.default_rng(seed), pipeline=pipeline)
    n_masked = None if samples.masks is None else action_space.n
    parts = env_observation_parts(env_id, pipeline)
    with staged_folder(out_dir) as staging:
        model_path = staging / MODEL_FILE
        graph = policy_graph(exported_module(policy), discrete).eval()
        graph = PartsGraph(graph, parts).eval() if parts else graph
        export_onnx(graph, obs_shape, outputs, model_path, obs_space.dtype, n_masked, state_size)
        masked = samples.masks is not None
        base = base_manifest(
            env_id, algo, obs_shape, action_space, outputs, model_path, obs_space.dtype, pipeline, masked, memory, parts
        )
        manifest = {**base, **fields}
        manifest["parity"] = check_parity(policy_graph(policy, discrete).eval(), model_path, manifest, samples)
        if extra_check is not None:
            manifest["parity"].update(extra_check(samples))
        (staging / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
        move_into_place(staging, out_dir, manifest, force)
    return load_bundle(out_dir)


def recurrent_memory(policy: nn.Module) -> dict[str, Any] | None:
    """The manifest's `memory` entry of a policy with memory (recurrent PPO's), None for one without."""
    net = policy.policy if isinstance(policy, NormalizedPolicy) else policy
    size = getattr(net, "state_size", 0)
    if not size:
        return None
    return {
        "input": STATE_INPUT,
        "output": STATE_OUTPUT,
        "size": size,
        "rnn": net.rnn_type,
        "layers": net.rnn_layers,
        "hidden": net.rnn_hidden,
        "layout": "(h, c) for an LSTM, h for a GRU; each (layers, hidden), flat",
        "reset": "zeros at every episode's start",
    }


def export_run(
    run_dir: str | Path, out: str | Path | None = None, force: bool = False, export_root: str | Path | None = None
) -> Bundle:
    """Export a run's policy to a bundle folder (default `export/<run-name>`); returns the loaded bundle."""
    run_dir = Path(run_dir)
    spec = load_spec(run_dir)
    _, policy = load_policy(run_dir, "cpu")
    out_dir = Path(out) if out is not None else Path(export_root or export_dir()) / run_dir.resolve().name
    fields = run_fields(spec, run_dir, out_dir)
    return write_bundle(
        policy, spec.env, spec.algo, out_dir, fields, force=force, seed=spec.seed, pipeline=Pipeline.of(spec.config)
    )


def move_into_place(staging: Path, out_dir: Path, manifest: dict[str, Any], force: bool) -> None:
    """Install the bundle built in `staging` as `out_dir`, unless `out_dir` holds a different bundle (or other
    files) and `force` is off."""
    if out_dir.exists() and any(out_dir.iterdir()):
        try:
            existing = load_bundle(out_dir).manifest
            same = existing.get("sha256") == manifest["sha256"]
        except BundleError:
            same = False
        if not same and not force:
            raise BundleError(
                f"{out_dir} already holds a different bundle (or other files); "
                "pass --force to replace it, or --out to choose another folder"
            )
    elif out_dir.exists():
        out_dir.rmdir()
    install(staging, out_dir)


def torch_policy_from_bundle(bundle: Bundle, device: str = "cpu") -> PolicyGraph:
    """The bundle's policy as a torch module again: the algorithm's network built from the manifest's
    config, its weights read from the ONNX initializers (for benchmarks that compare runtimes)."""
    import onnx
    from onnx import numpy_helper

    from ..algos import build_algorithm

    manifest = bundle.manifest
    if "config" not in manifest:
        raise BundleError(f"{bundle.path} has no config in its manifest (exported by an older Thrust); re-export it")
    agent = build_algorithm(manifest["algo"], manifest["env_id"], manifest["config"], torch.device(device))
    policy = agent.policy
    if agent.config.normalize and agent.config.norm_obs:  # the statistics come with the weights below
        shape = agent.obs_shape
        normalizer = ObsNormalizer(np.zeros(shape), np.ones(shape), agent.config.norm_epsilon, agent.config.clip_obs)
        policy = NormalizedPolicy(policy, normalizer.to(device))
    graph = policy_graph(exported_module(policy), isinstance(agent.action_space, Discrete)).eval()
    policy = graph.policy
    wanted = policy.state_dict()
    weights = {}
    for init in onnx.load(str(bundle.model_path)).graph.initializer:
        name = init.name.removeprefix("policy_graph.")  # a Dict observation's graph wraps the policy's
        key = name.removeprefix("policy.")
        if name.startswith("policy.") and key in wanted:
            weights[key] = torch.as_tensor(numpy_helper.to_array(init).copy(), device=device)
    policy.load_state_dict(weights, strict=False)  # what acting does not use (SAC's log std) is not in the graph
    return graph


def _version(module: str) -> str:
    from importlib.metadata import version

    return version(module)


__all__ = ["ParityError", "PolicyGraph", "RunDirError", "export_run"]
