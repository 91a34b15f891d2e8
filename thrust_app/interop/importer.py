"""`thrust import`: a policy trained elsewhere as a Thrust bundle (policy.onnx + manifest.json).

Two sources. A Stable-Baselines3 model file (`.zip`), read without unpickling (`sb3_model`), with
its `VecNormalize` statistics folded into the graph. Or any ONNX policy plus a short description —
the env, which output holds the action, how to post-process it (`onnx_actions`); its batch may be
fixed at 1 (bundles with such graphs are run one observation at a time). The bundle goes through the same writer and parity
check as Thrust's own exports (`exporter.write_bundle`: onnxruntime against the rebuilt torch policy
on random and real observations, at batch 1 and a large batch), and, where stable-baselines3 is
installed, the rebuilt policy is also checked against SB3's own `predict(deterministic=True)`.

A model trained on a gymnasium env that Thrust reproduces exactly (CartPole-v1, Pendulum-v1) becomes
a bundle for Thrust's twin, so the browser player can run it; `source.trained_on` keeps the original id.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..envs import GYMNASIUM_TWINS, env_observation_parts, env_spaces
from ..envs.core import Discrete, MultiDiscrete
from ..envs.pipeline import Pipeline, is_atari
from ..runs.staging import staged_folder
from ..training.run_spec import resolve_env_name
from .bundle import MANIFEST_FILE, MODEL_FILE, Bundle, BundleError, OnnxPolicy, export_dir, load_bundle
from .exporter import (
    MAX_ABS_DIFF,
    TIE_GAP,
    ParityError,
    Samples,
    base_manifest,
    move_into_place,
    random_observations,
    write_bundle,
)
from .onnx_actions import add_action_output, post_process
from .sb3_model import SB3Model, check_spaces, read_sb3_zip, read_vec_normalize, rebuild_policy, sb3_reference


def sb3_parity(model: SB3Model, env_id: str, policy: Any, normalizer: Any, discrete: bool, pipeline: Any = None):
    """A check comparing the rebuilt policy with SB3's own predict on the bundle's sample observations."""
    predict = sb3_reference(model, env_id, normalizer, pipeline)

    def check(samples: Samples) -> dict[str, Any]:
        if predict is None:
            return {"stable_baselines3": "not installed here: the rebuilt policy was checked against onnxruntime only"}
        obs = np.concatenate(list(samples.obs.values()))
        allowed = None if samples.masks is None else np.concatenate([samples.masks[key] for key in samples.obs])
        if samples.states is not None:  # a recurrent policy: one step on from each sample's memory
            state = np.concatenate([samples.states[key] for key in samples.obs])
            with torch.no_grad():
                out = policy.act(torch.as_tensor(obs), state=torch.as_tensor(state))[:-1]
            theirs = np.asarray(predict(obs, None, state))
            out = out if discrete else out[0]
        else:
            with torch.no_grad():
                out = policy.act(torch.as_tensor(obs), None if allowed is None else torch.as_tensor(allowed))
            theirs = np.asarray(predict(obs) if allowed is None else predict(obs, allowed))
        if discrete:
            scores = np.sort(out[0].numpy(), axis=-1)
            differ = out[1].numpy() != theirs
            if differ.ndim > 1:  # MultiDiscrete: a row differs where any component does (no tie allowance)
                differ = differ.any(-1)
            else:
                differ &= (scores[:, -1] - scores[:, -2]) >= TIE_GAP
            if differ.any():
                raise ParityError(
                    f"the rebuilt policy picks other actions than SB3's predict on {int(differ.sum())}/{len(obs)} "
                    "observations; nothing was written"
                )
            return {"stable_baselines3": f"actions equal SB3's predict(deterministic=True) on {len(obs)} observations"}
        worst = float(np.max(np.abs(out.numpy() - theirs.reshape(out.shape))))
        if worst > MAX_ABS_DIFF:
            raise ParityError(f"the rebuilt policy differs from SB3's predict by up to {worst:.3g}; nothing was written")
        return {"stable_baselines3": f"max |action - SB3 predict| {worst:.2g} on {len(obs)} observations"}

    return check


def import_sb3(
    source: str | Path,
    env: str,
    out: str | Path | None = None,
    *,
    vec_normalize: str | Path | None = None,
    trust_pickle: bool = False,
    force: bool = False,
    export_root: str | Path | None = None,
) -> Bundle:
    """Turn the SB3 model file `source`, trained on `env`, into a bundle (default `export/<file stem>`)."""
    source = Path(source)
    model = read_sb3_zip(source)
    trained_on = resolve_env_name(env)
    env_id = GYMNASIUM_TWINS.get(trained_on, trained_on)  # the player runs Thrust's cores only
    pipeline = import_pipeline(model, env_id)
    obs_space, action_space = env_spaces(env_id, pipeline)
    check_spaces(model, obs_space, action_space, env_id)
    normalizer = read_vec_normalize(vec_normalize, trust_pickle) if vec_normalize is not None else None
    if normalizer is not None and tuple(normalizer.mean.shape) != tuple(obs_space.shape):
        raise ParityError(
            f"{vec_normalize} normalises observations of shape {tuple(normalizer.mean.shape)}, but {env_id}'s are "
            f"{tuple(obs_space.shape)}: statistics from another env?"
        )
    parts = env_observation_parts(env_id, pipeline)
    policy = rebuild_policy(model, action_space, normalizer, tuple(obs_space.shape), parts).eval()
    discrete = isinstance(action_space, Discrete | MultiDiscrete)
    out_dir = Path(out) if out is not None else Path(export_root or export_dir()) / source.stem
    fields = {
        "source": {
            "library": "stable-baselines3",
            "library_version": model.sb3_version,
            "algo": model.algo,
            "trained_on": trained_on,
            "file": str(source),
            "vec_normalize": str(vec_normalize) if vec_normalize is not None else None,
            "activation": model.activation,
            "postprocessing": getattr(policy, "post", "argmax" if discrete else "clip"),
        },
        "command": " ".join(
            ["thrust import", str(source), "--env", env, "--out", str(out_dir)]
            + (["--vec-normalize", str(vec_normalize)] if vec_normalize is not None else [])
        ),
    }
    check = sb3_parity(model, env_id, policy, normalizer, discrete, pipeline)
    return write_bundle(policy, env_id, model.algo, out_dir, fields, force=force, extra_check=check, pipeline=pipeline)


def import_pipeline(model: SB3Model, env_id: str) -> Pipeline:
    """The observation pipeline an SB3 model was trained in: the zoo's Atari preprocessing with as many frames
    stacked as its observations have channels, for an Atari game; none otherwise."""
    if not is_atari(env_id):
        return Pipeline()
    shape = model.space_field("observation_space", "_shape")
    stacked = [int(n) for n in re.findall(r"\d+", str(shape))] if shape is not None else []
    return Pipeline("atari", stacked[0] if len(stacked) == 3 else 1)


def observation_samples(env_id: str, rng: np.random.Generator, n: int = 256) -> dict[str, np.ndarray]:
    """Random observations within the space (N(0, 1) where unbounded) and real ones from random play."""
    from ..envs import make_env

    env = make_env(env_id)
    random_obs = random_observations(env.observation_space, rng, n)
    env.action_space.seed(int(rng.integers(2**31)))
    obs, _ = env.reset(seed=int(rng.integers(2**31)))
    seen = []
    for _ in range(n):
        seen.append(obs)
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()
    env.close()
    return {"random": random_obs, "env": np.asarray(seen, dtype=np.float32)}


def onnx_parity(source: Path, bundle: Bundle, source_output: str, post: str, action_space: Any, samples) -> dict[str, Any]:
    """The bundle's actions against the source model's own output post-processed in numpy."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    feed = session.get_inputs()[0]
    one_at_a_time = feed.shape[0] == 1
    runner = OnnxPolicy(bundle)
    worst, total = 0.0, 0
    for obs in samples.values():
        batches = [obs[i : i + 1] for i in range(len(obs))] if one_at_a_time else [obs]
        raw = np.concatenate([session.run([source_output], {feed.name: batch})[0] for batch in batches])
        expected, got = post_process(raw, post, action_space), runner.act(obs)
        if isinstance(action_space, Discrete):
            same = int((expected == got).sum())
            if same < len(obs):
                raise ParityError(f"the bundle's actions equal the source model's on {same}/{len(obs)} observations")
        else:
            worst = max(worst, float(np.max(np.abs(expected - got))))
        total += len(obs)
    if worst > MAX_ABS_DIFF:
        raise ParityError(f"the bundle's actions differ from the source model's by up to {worst:.3g}; nothing was written")
    report = {"runtime": "onnxruntime CPUExecutionProvider", "max_abs_diff": worst, "observations": total}
    if isinstance(action_space, Discrete):
        report["action_agreement"] = 1.0
    report["source_model"] = f"actions equal the source model's '{source_output}' output after '{post}'"
    return report


def load_foreign_onnx(source: Path, env_id: str, obs_shape: tuple[int, ...]) -> Any:
    """The ONNX model in `source`, checked to take one float32 observation of `env_id`'s shape."""
    import onnx

    try:
        model = onnx.load(str(source))
    except Exception as err:  # DecodeError and friends: not an ONNX file
        raise BundleError(f"{source} is not an ONNX model ({str(err).splitlines()[0][:120]})") from None
    if len(model.graph.input) != 1 or model.graph.input[0].type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
        raise BundleError(f"{source} must take one float32 input (the observation); it takes {len(model.graph.input)}")
    model_shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim[1:]]
    if model_shape != list(obs_shape):
        raise BundleError(f"{source} takes observations of shape {model_shape}, but {env_id} gives {list(obs_shape)}")
    return model


def import_onnx(
    source: str | Path,
    env: str,
    out: str | Path | None = None,
    *,
    action_output: str = "action",
    post: str = "none",
    algo: str = "imported",
    force: bool = False,
    export_root: str | Path | None = None,
) -> Bundle:
    """Turn a foreign ONNX policy into a bundle: Thrust's `action` output appended (`onnx_actions`), the
    source's other outputs dropped, checked against the source model on random and real observations."""
    import onnx

    source = Path(source)
    trained_on = resolve_env_name(env)
    env_id = GYMNASIUM_TWINS.get(trained_on, trained_on)
    obs_space, action_space = env_spaces(env_id)
    model = load_foreign_onnx(source, env_id, tuple(obs_space.shape))
    dims = model.graph.input[0].type.tensor_type.shape.dim
    source_output, outputs = add_action_output(model, action_output, post, action_space)
    out_dir = Path(out) if out is not None else Path(export_root or export_dir()) / source.stem
    batch = dims[0].dim_param or dims[0].dim_value
    fields = {
        "inputs": [{"name": model.graph.input[0].name, "dtype": "float32", "shape": [batch, *obs_space.shape]}],
        "source": {
            "library": "onnx",
            "trained_on": trained_on,
            "file": str(source),
            "action_output": action_output,
            "postprocessing": post,
        },
        "command": f"thrust import {source} --env {env} --action-output {action_output} --post {post} --out {out_dir}",
    }
    with staged_folder(out_dir) as staging:
        model_path = staging / MODEL_FILE
        onnx.save(model, str(model_path))
        manifest = {**base_manifest(env_id, algo, tuple(obs_space.shape), action_space, outputs, model_path), **fields}
        samples = observation_samples(env_id, np.random.default_rng(0))
        manifest["parity"] = onnx_parity(source, Bundle(staging, manifest), source_output, post, action_space, samples)
        (staging / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
        move_into_place(staging, out_dir, manifest, force)
    return load_bundle(out_dir)
