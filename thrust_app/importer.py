"""`thrust import`: a policy trained elsewhere as a Thrust bundle (policy.onnx + manifest.json).

Source: a Stable-Baselines3 model file (`.zip`), read without unpickling (`sb3_model`), with its
`VecNormalize` statistics folded into the graph. The bundle goes through the same writer and parity
check as Thrust's own exports (`exporter.write_bundle`: onnxruntime against the rebuilt torch policy
on random and real observations, at batch 1 and a large batch), and, where stable-baselines3 is
installed, the rebuilt policy is also checked against SB3's own `predict(deterministic=True)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from .bundle import Bundle
from .envs import env_spaces
from .envs.core import Discrete
from .exporter import MAX_ABS_DIFF, TIE_GAP, ParityError, write_bundle
from .run_spec import resolve_env_name
from .sb3_model import SB3Model, check_spaces, read_sb3_zip, read_vec_normalize, rebuild_policy, sb3_reference


def sb3_parity(model: SB3Model, env_id: str, policy: Any, normalizer: Any, discrete: bool):
    """A check comparing the rebuilt policy with SB3's own predict on the bundle's sample observations."""
    predict = sb3_reference(model, env_id, normalizer)

    def check(samples: dict[str, np.ndarray]) -> dict[str, Any]:
        if predict is None:
            return {"stable_baselines3": "not installed here: the rebuilt policy was checked against onnxruntime only"}
        obs = np.concatenate(list(samples.values()))
        with torch.no_grad():
            out = policy.act(torch.as_tensor(obs))
        theirs = np.asarray(predict(obs))
        if discrete:
            scores = np.sort(out[0].numpy(), axis=-1)
            differ = (out[1].numpy() != theirs) & ((scores[:, -1] - scores[:, -2]) >= TIE_GAP)
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
    export_root: str | Path = "export",
) -> Bundle:
    """Turn the SB3 model file `source`, trained on `env`, into a bundle (default `export/<file stem>`)."""
    source = Path(source)
    model = read_sb3_zip(source)
    env_id = resolve_env_name(env)
    obs_space, action_space = env_spaces(env_id)
    check_spaces(model, obs_space, action_space, env_id)
    normalizer = read_vec_normalize(vec_normalize, trust_pickle) if vec_normalize is not None else None
    if normalizer is not None and tuple(normalizer.mean.shape) != tuple(obs_space.shape):
        raise ParityError(
            f"{vec_normalize} normalises observations of shape {tuple(normalizer.mean.shape)}, but {env_id}'s are "
            f"{tuple(obs_space.shape)}: statistics from another env?"
        )
    policy = rebuild_policy(model, action_space, normalizer).eval()
    out_dir = Path(out) if out is not None else Path(export_root) / source.stem
    fields = {
        "source": {
            "library": "stable-baselines3",
            "library_version": model.sb3_version,
            "algo": model.algo,
            "file": str(source),
            "vec_normalize": str(vec_normalize) if vec_normalize is not None else None,
            "activation": model.activation,
            "postprocessing": policy.post,
        },
        "command": " ".join(
            ["thrust import", str(source), "--env", env, "--out", str(out_dir)]
            + (["--vec-normalize", str(vec_normalize)] if vec_normalize is not None else [])
        ),
    }
    discrete = isinstance(action_space, Discrete)
    check = sb3_parity(model, env_id, policy, normalizer, discrete)
    return write_bundle(policy, env_id, model.algo, out_dir, fields, force=force, extra_check=check)
