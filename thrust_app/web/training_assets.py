"""What the player's Train mode fetches from Python: the presets it starts from, and ONNX templates.

- `training_catalog()`: for each env the page trains, the PPO run `thrust train` would make (the
  preset's whole config, budget, evaluation settings, solve threshold) plus every config field's
  one-line help. The page reads its defaults from here, so Python's presets are the one source.
- `policy_template(env)`: the ONNX graph Thrust's exporter writes for that env's policy architecture,
  with placeholder weights, and a map from each ONNX initializer to the layer it holds. The page swaps
  its trained weights into those initializers (protobufjs with onnx.proto), so a bundle made in the
  tab is the same graph a desktop export makes.
- `onnx_schema()`: onnx.proto from the installed onnx package, the schema the page parses the template with.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import tempfile
import threading
from pathlib import Path
from typing import Any

#: The envs the Train mode offers, by alias.
TRAIN_ENVS = ("bandit", "cartpole", "pendulum", "acrobot", "mountaincar", "mountaincar-continuous")
#: The algorithm the Train mode runs (web/src/train/ppo.js); every preset of it per env is offered.
ALGO = "ppo"


@functools.cache
def training_catalog() -> dict[str, Any]:
    """{"envs": {alias: {"presets": {name: run}}}, "help": {field: text}} for the page's Train mode."""
    from ..algos import get_algo
    from ..training.presets import preset_names
    from ..training.run_spec import make_spec, solve_threshold
    from ..training.trainer import EVAL_SEED_OFFSET

    algo_cls = get_algo(ALGO)
    envs: dict[str, Any] = {}
    for alias in TRAIN_ENVS:
        spec = make_spec(ALGO, alias)
        presets = {}
        for name in preset_names(ALGO, spec.env):
            run = make_spec(ALGO, alias, preset=name)
            presets[name] = {
                "timesteps": run.timesteps,
                "eval_every": run.eval_every,
                "eval_episodes": run.eval_episodes,
                "stop_at_return": run.stop_at_return,
                "config": run.config,
                "command": run.command(),
            }
        envs[alias] = {"env_id": spec.env, "solved_at": solve_threshold(spec.env), "presets": presets}
    helps = {field.name: field.metadata.get("help", "") for field in dataclasses.fields(algo_cls.Config)}
    return {"algo": ALGO, "envs": envs, "help": helps, "eval_seed_offset": EVAL_SEED_OFFSET}


def trace_initializers(model: Any, linears: list[Any], normalizer: Any = None) -> dict[str, dict[str, Any]]:
    """ONNX initializer name -> the layer of `linears` it holds, weight (stored transposed or not) or bias,
    or the observation normalizer's mean or std, found by value (each was given values no other tensor has)."""
    import onnx
    import torch

    initializers = {}
    for tensor in model.graph.initializer:
        values = torch.from_numpy(onnx.numpy_helper.to_array(tensor).copy())
        for kind in ("mean", "std") if normalizer is not None else ():
            if values.shape == getattr(normalizer, kind).shape and torch.equal(values, getattr(normalizer, kind)):
                initializers[tensor.name] = {"layer": None, "kind": f"obs_{kind}", "transpose": False}
        for index, layer in enumerate(linears):
            if values.shape == layer.weight.shape and torch.equal(values, layer.weight):
                initializers[tensor.name] = {"layer": index, "kind": "weight", "transpose": True}
            elif values.shape == layer.weight.T.shape and torch.equal(values, layer.weight.T):
                initializers[tensor.name] = {"layer": index, "kind": "weight", "transpose": False}
            elif values.shape == layer.bias.shape and torch.equal(values, layer.bias):
                initializers[tensor.name] = {"layer": index, "kind": "bias", "transpose": False}
    return initializers


def traceable_policy(sizes: list[int], config: dict[str, Any], action_space: Any) -> tuple[Any, list[Any], Any]:
    """(policy, its Linear layers, its observation normaliser or None) of the exporter's architecture, every
    tensor given values no other tensor has, so each ONNX initializer can be traced back to what it holds."""
    import numpy as np
    import torch

    from ..nets.obs_normalizer import NormalizedPolicy, ObsNormalizer
    from ..nets.policies import ActingMLP

    policy = ActingMLP(sizes, config["activation"], action_space)
    linears = [module for module in policy.net if isinstance(module, torch.nn.Linear)]
    with torch.no_grad():
        for index, layer in enumerate(linears):
            layer.weight.copy_(torch.arange(layer.weight.numel()).reshape(layer.weight.shape) + 1000.0 * (2 * index + 1))
            layer.bias.copy_(torch.arange(layer.bias.numel()) + 1000.0 * (2 * index + 2))
    if not (config["normalize"] and config["norm_obs"]):
        return policy, linears, None
    mean, std = np.arange(sizes[0]) + 100.0, np.arange(sizes[0]) + 200.5  # var chosen so that sqrt(var + eps) = std
    normalizer = ObsNormalizer(mean, std**2 - config["norm_epsilon"], config["norm_epsilon"], config["clip_obs"])
    return NormalizedPolicy(policy, normalizer), linears, normalizer


@functools.cache
def policy_template(env: str) -> tuple[bytes, dict[str, Any]]:
    """(ONNX bytes, description) of `env`'s PPO policy graph as `thrust export` writes it.

    The description holds the manifest fields the bundle shares with a desktop export (everything but
    sha256 and the training record), the layer sizes, and `initializers`: ONNX initializer name ->
    {"layer": i, "kind": "weight"|"bias", "transpose": bool}, where layer i's weight is stored
    (in_features, out_features) as the page keeps it (x @ W + b). A preset with `normalize` (observations)
    puts the normaliser in front, as a desktop export of such a run does: clip((obs - mean) / std, -clip_obs,
    clip_obs) with two more initializers, {"kind": "obs_mean"} and {"kind": "obs_std"} (std = sqrt(var + eps)),
    so the bundle takes raw observations."""
    import onnx

    from ..envs import env_spaces
    from ..interop.exporter import PolicyGraph, base_manifest, export_onnx, output_specs

    catalog = training_catalog()
    if env not in catalog["envs"]:
        raise ValueError(f"the Train mode has no env {env!r}; it trains {', '.join(TRAIN_ENVS)}")
    entry = catalog["envs"][env]
    config = next(iter(entry["presets"].values()))["config"]  # the presets share the architecture
    obs_space, action_space = env_spaces(entry["env_id"])
    outputs = output_specs(ALGO, action_space)
    n_out = action_space.n if hasattr(action_space, "n") else action_space.size
    sizes = [obs_space.size, *config["hidden"], n_out]
    policy, linears, normalizer = traceable_policy(sizes, config, action_space)
    discrete = not hasattr(action_space, "low")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "policy.onnx"
        export_onnx(PolicyGraph(policy, discrete).eval(), tuple(obs_space.shape), outputs, path)
        manifest = base_manifest(entry["env_id"], ALGO, tuple(obs_space.shape), action_space, outputs, path)
        model = onnx.load(str(path))
    initializers = trace_initializers(model, linears, normalizer)
    if len(initializers) != 2 * len(linears) + (2 if normalizer is not None else 0):
        raise RuntimeError(
            f"the exported {env} graph holds its weights in a form the page cannot fill: {sorted(initializers)}"
        )
    del manifest["sha256"]
    description = {"manifest": manifest, "sizes": sizes, "activation": config["activation"], "initializers": initializers}
    return model.SerializeToString(), description | {"normalized": normalizer is not None}


def onnx_schema() -> bytes:
    """onnx.proto as the installed onnx package ships it."""
    import onnx

    return (Path(onnx.__file__).parent / "onnx.proto").read_bytes()


ASSET_PATHS = ("training.json", "onnx.proto", *(f"templates/{env}.{kind}" for env in TRAIN_ENVS for kind in ("onnx", "json")))
#: The server answers requests in threads; one export at a time.
_building = threading.Lock()


def asset(path: str) -> bytes | None:
    """The Train mode's file at `path` under py/ (one of ASSET_PATHS), or None if there is no such file."""
    if path not in ASSET_PATHS:
        return None
    with _building:
        if path == "training.json":
            return json.dumps(training_catalog()).encode()
        if path == "onnx.proto":
            return onnx_schema()
        env, kind = path.removeprefix("templates/").split(".")
        model, description = policy_template(env)
        return model if kind == "onnx" else json.dumps(description).encode()
