"""A model on disk: `model.save("name.zip")` packs the run's config.json and a whole checkpoint into one
zip (SB3's habit: one file to pass around); `load` reads such a zip or a run folder back, bounded and
without unpickling anything. A model with no folder of its own (loaded from a zip, or trained with
`save_run=False`) gets one seeded from its checkpoint when it learns or exports (`seed_run_folder`).
"""

from __future__ import annotations

import dataclasses
import io
import zipfile
from pathlib import Path
from typing import Any

import torch

from ..runs.files import (
    BEST_CHECKPOINT,
    CONFIG_FILE,
    LAST_CHECKPOINT,
    CheckpointError,
    atomic_write_bytes,
    atomic_write_json,
    load_checkpoint,
    save_checkpoint,
)
from ..training.run_spec import RunSpec, load_spec
from ..training.trainer import write_config

#: What a model zip holds, and the most of each that `load` reads (a bigger member is refused, not read).
ZIP_MEMBERS = {CONFIG_FILE: 1 << 20, LAST_CHECKPOINT: 4 << 30}


def save_model(path: str | Path, spec: RunSpec, state: dict[str, Any]) -> Path:
    """Write `path` (".zip" added when it has no suffix) atomically: the spec as config.json, `state` as last.pt."""
    path = Path(path)
    path = path if path.suffix else path.with_suffix(".zip")
    config, checkpoint = io.BytesIO(), io.BytesIO()
    config.write(_config_json(spec).encode())
    torch.save(state, checkpoint)
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(CONFIG_FILE, config.getvalue())
        archive.writestr(LAST_CHECKPOINT, checkpoint.getvalue())
    atomic_write_bytes(path, packed.getvalue())
    return path


def _config_json(spec: RunSpec) -> str:
    import json

    return json.dumps({**dataclasses.asdict(spec), "command": spec.command()}, indent=2) + "\n"


def load_model_files(path: str | Path, checkpoint: str | Path | None = None) -> tuple[RunSpec, dict[str, Any], Path | None]:
    """(spec, checkpoint state, the run folder or None) of a model zip or a run folder. In a folder,
    `checkpoint` picks another file than last.pt: "best" (KeepBest's best.pt) or a path."""
    path = Path(path)
    if path.is_dir():
        spec = load_spec(path)
        chosen = path / BEST_CHECKPOINT if checkpoint == "best" else Path(checkpoint) if checkpoint else path / LAST_CHECKPOINT
        return spec, load_checkpoint(chosen), path
    if not path.is_file():
        raise FileNotFoundError(f"no model at {path}: give a file written by model.save() or a run folder")
    if checkpoint is not None:
        raise ValueError(f"{path} is a model zip with one checkpoint; checkpoint= picks among a run folder's")
    return _unpack(path)


def _unpack(path: Path) -> tuple[RunSpec, dict[str, Any], None]:
    import json
    import tempfile

    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename: info for info in archive.infolist()}
            if set(members) != set(ZIP_MEMBERS):
                raise CheckpointError(
                    f"{path} is not a Thrust model zip (holds {sorted(members)[:5]}, expected {sorted(ZIP_MEMBERS)})"
                )
            for name, limit in ZIP_MEMBERS.items():
                if members[name].file_size > limit:
                    raise CheckpointError(f"{path}: {name} is {members[name].file_size:,} bytes, more than {limit:,}")
            config = json.loads(archive.read(CONFIG_FILE))
            with tempfile.TemporaryDirectory() as folder:
                (Path(folder) / LAST_CHECKPOINT).write_bytes(archive.read(LAST_CHECKPOINT))
                state = load_checkpoint(Path(folder) / LAST_CHECKPOINT)
                atomic_write_json(Path(folder) / CONFIG_FILE, config)
                spec = load_spec(folder)
    except zipfile.BadZipFile:
        raise CheckpointError(f"{path} is not a zip file (model.save() writes one)") from None
    return spec, state, None


def seed_run_folder(run_dir: Path, spec: RunSpec, state: dict[str, Any]) -> Path:
    """A run folder holding `spec` and the checkpoint `state`, from which `resume` trains on."""
    write_config(run_dir, spec)
    save_checkpoint(
        run_dir / LAST_CHECKPOINT, {key: value for key, value in state.items() if key not in ("format", "version")}
    )
    return run_dir


__all__ = ["ZIP_MEMBERS", "load_model_files", "save_model", "seed_run_folder"]
