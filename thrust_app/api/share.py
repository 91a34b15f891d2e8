"""`thrust share RUN OUT/` (and `model.share(OUT)`): a run as a model repository in the layout the rl-baselines3-zoo
and CleanRL publish on the Hugging Face Hub, ready for `huggingface_hub.upload_folder`.

OUT holds README.md (the model card: algorithm, env, hyperparameters, the evaluation's mean +- std and, where
the run has sibling seeds, the IQM over them with its 95% CI; front matter in the Hub's model-index form),
results.json (the zoo's fields), config.json (the run's), replay.mp4 (one deterministic episode), model.zip
(Thrust's: `thrust_app.load_model`), `bundle/` (the ONNX bundle: onnxruntime, the browser player), an SB3 zip
`<algo>-<env>.zip` where the network maps onto SB3's MlpPolicy (`stable_baselines3.PPO.load`), and
thrust-share.json, the marker `thrust import OUT/` reads the folder back by. The folder is built beside OUT and
swapped in whole; a piece that cannot be made (a video of an env that does not render, an SB3 zip of a
recurrent policy) is left out and the card says why.
"""

from __future__ import annotations

import datetime
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..algos.base import NumpyPolicy
from ..envs import GYMNASIUM_TWINS
from ..envs.pipeline import Pipeline
from ..interop.bundle import BundleError, load_bundle
from ..interop.exporter import export_run, move_into_place
from ..interop.sb3_export import SB3ExportError, write_sb3_zip
from ..runs.compare import group_stats, load_groups, with_ci
from ..runs.files import CONFIG_FILE, LAST_CHECKPOINT, SUMMARY_FILE, atomic_write_json, load_checkpoint, read_json
from ..runs.staging import install, staged_folder
from ..training.evaluation import evaluate
from ..training.run_spec import RunSpec, load_spec
from ..training.trainer import EVAL_SEED_OFFSET, load_policy
from ..version import __version__
from .model_card import model_card
from .model_file import save_model

SHARE_MARKER = "thrust-share.json"
BUNDLE_FOLDER = "bundle"


class ShareError(ValueError):
    """A share folder that cannot be written or read."""


def share_run(run_dir: str | Path, out: str | Path, episodes: int = 10, force: bool = False,
              log: Callable[[str], None] = print) -> Path:  # fmt: skip
    """Write the run's repository folder at `out`; returns it. `force` replaces a folder that is not a share."""
    run_dir, out = Path(run_dir), Path(out)
    spec = load_spec(run_dir)
    if out.exists() and any(out.iterdir()) and not (out / SHARE_MARKER).is_file() and not force:
        raise ShareError(f"{out} holds other files; choose an empty folder or pass --force to replace it")
    with staged_folder(out) as staging:
        pieces = {"bundle": export_run(run_dir, staging / BUNDLE_FOLDER, force=True).path.name}
        shutil.copyfile(run_dir / CONFIG_FILE, staging / CONFIG_FILE)
        save_model(staging / "model.zip", spec, load_checkpoint(run_dir / LAST_CHECKPOINT))
        results = evaluation_results(run_dir, spec, episodes)
        atomic_write_json(staging / "results.json", results)
        notes = {}
        pieces["replay"], notes["replay"] = try_piece(lambda: write_replay(run_dir, spec, staging / "replay.mp4"))
        sb3_name = f"{spec.algo}-{spec.env.replace('/', '-')}.zip"
        pieces["sb3_zip"], notes["sb3_zip"] = try_piece(lambda: write_sb3_zip(run_dir, staging / sb3_name).name)
        summary = read_json(run_dir / SUMMARY_FILE) if (run_dir / SUMMARY_FILE).is_file() else {}
        (staging / "README.md").write_text(model_card(spec, summary, results, pieces, notes))
        atomic_write_json(staging / SHARE_MARKER, {"format": "thrust-share", "version": 1, "thrust": __version__,
                                                   "env": spec.env, "algo": spec.algo, **pieces})  # fmt: skip
        install(staging, out)
    for piece, why in notes.items():
        if why:
            log(f"thrust: share: no {piece}: {why}")
    return out


def try_piece(make: Callable[[], Any]) -> tuple[Any, str | None]:
    """(what `make` made, None), or (None, why not) for the pieces a share can do without."""
    import gymnasium as gym

    try:
        return make(), None
    except (SB3ExportError, ImportError, OSError, RuntimeError, ValueError, gym.error.Error) as err:
        return None, str(err).splitlines()[0][:300]


def evaluation_results(run_dir: Path, spec: RunSpec, episodes: int) -> dict[str, Any]:
    """The zoo's results.json fields (deterministic episodes on the run's evaluation seeds), and the IQM of the
    final evaluations over the run's sibling seeds (runs of the same settings in the same folder), when there are
    several."""
    _, policy = load_policy(run_dir)
    result = evaluate(NumpyPolicy(policy), spec.env, episodes, spec.seed + EVAL_SEED_OFFSET, None, Pipeline.of(spec.config))
    results: dict[str, Any] = {
        "mean_reward": result.mean,
        "std_reward": result.std,
        "n_eval_episodes": episodes,
        "is_deterministic": True,
        "eval_datetime": datetime.datetime.now().isoformat(timespec="seconds"),
    }
    groups, _ = load_groups([run_dir.parent])
    seeds = next((runs for runs in groups.values() if run_dir.resolve() in [run.path.resolve() for run in runs]), [])
    if len(seeds) > 1:
        stats = group_stats("seeds", [run.score for run in seeds])
        results["seeds"] = {"runs": len(seeds), "iqm": stats.iqm, "iqm_ci": list(stats.iqm_ci),
                            "text": with_ci(stats.iqm, stats.iqm_ci)}  # fmt: skip
    return results


def write_replay(run_dir: Path, spec: RunSpec, path: Path) -> str:
    """One deterministic episode as replay.mp4; a gymnasium env Thrust has a twin of plays in the twin (the same
    dynamics, Thrust's own renderer: no pygame needed)."""
    from ..interop.video import record_episode, run_policy

    env_id, act, pipeline = run_policy(run_dir)
    env_id = GYMNASIUM_TWINS.get(env_id, env_id) if pipeline == Pipeline() else env_id
    recording = record_episode(act, env_id, spec.seed + EVAL_SEED_OFFSET, "mp4", pipeline=pipeline)
    path.write_bytes(recording.video)
    return path.name


def read_share(folder: str | Path) -> dict[str, Any]:
    """A share folder's marker and its checked ONNX bundle (`thrust import FOLDER`): (marker, Bundle)."""
    folder = Path(folder)
    marker_path = folder / SHARE_MARKER
    if not marker_path.is_file() or marker_path.stat().st_size > 1 << 16:
        raise ShareError(f"{folder} is not a folder written by `thrust share` (no {SHARE_MARKER})")
    marker = json.loads(marker_path.read_text())
    if marker.get("format") != "thrust-share":
        raise ShareError(f"{marker_path} is not a Thrust share marker")
    try:
        return {**marker, "bundle": load_bundle(folder / BUNDLE_FOLDER)}
    except BundleError as err:
        raise ShareError(f"{folder}: its ONNX bundle does not check out: {err}") from None


def import_share(folder: str | Path, out: str | Path, force: bool = False) -> Any:
    """The share folder's ONNX bundle, checked (schema, sha256), copied to the bundle folder `out`."""
    bundle = read_share(folder)["bundle"]
    out = Path(out)
    with staged_folder(out) as staging:
        for name in ("policy.onnx", "manifest.json"):
            shutil.copyfile(bundle.path / name, staging / name)
        move_into_place(staging, out, bundle.manifest, force)
    return load_bundle(out)


__all__ = ["SHARE_MARKER", "ShareError", "import_share", "read_share", "share_run"]
