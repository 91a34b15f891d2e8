"""A run on disk: `runs/<name>/` with config, metrics, checkpoints and summary, written so nothing is lost.

Every file is written atomically (a temporary file in the same folder, flushed, then renamed over
the target), so a crash or a killed process leaves the previous version intact. Checkpoints hold
only tensors and plain values and load with `weights_only=True`: loading never runs pickled code.
"""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import torch

CHECKPOINT_FORMAT = "thrust-checkpoint"
#: 2: optimizers step each net's one flat parameter buffer (`flat_params.py`); version 1 saved their
#: state per parameter, and loading converts it (`Algorithm.load_state_dict`).
CHECKPOINT_VERSION = 2
READABLE_VERSIONS = (1, 2)
#: The files of a run folder (docs/runs.md: what each holds and who writes it).
CONFIG_FILE = "config.json"  #: the RunSpec, written once before training (and the budget raised by a resume)
METRICS_FILE = "metrics.jsonl"  #: one train or eval record per line, appended while training
LAST_CHECKPOINT = "last.pt"  #: everything needed to continue, replaced at each checkpoint
BEST_CHECKPOINT = "best.pt"  #: the best-evaluated checkpoint, where the model API's KeepBest keeps one
SUMMARY_FILE = "summary.json"  #: how the run ended, written when it stops
STOP_FILE = "STOP"  #: created by anyone to ask the run to stop at its next iteration


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt, or not Thrust's."""


class RunDirError(ValueError):
    """A run folder that cannot be used as asked (already taken, or not a run)."""


def remove_stale_temporaries(folder: Path) -> None:
    """Delete the temporary files of atomic writes a killed writer left (`.NAME.XXXX.tmp`: a SIGKILL between
    writing and renaming). Only the folder's one writer, holding its lock, may call this."""
    for leftover in folder.glob(".*.tmp"):
        leftover.unlink(missing_ok=True)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes files private; run files are as readable as metrics.jsonl
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=False) + "\n").encode())


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text())


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    buffer = io.BytesIO()
    torch.save({"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, **state}, buffer)
    atomic_write_bytes(path, buffer.getvalue())


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Load a Thrust checkpoint safely, onto the CPU whatever device the run trained on (restoring copies
    each part to its own device; a random generator's state must be a CPU byte tensor, on CUDA too);
    anything else is a CheckpointError saying what was found."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many kinds for a bad file; all mean the same to the user
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if "weights_only" in str(err) or "Weights only" in first_line:  # never pass on torch's advice to unpickle
            first_line = "it holds objects other than tensors and plain values, which Thrust never unpickles"
        raise CheckpointError(
            f"{path} is not a readable Thrust checkpoint (corrupt, truncated or foreign): {first_line[:200]}"
        ) from None
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path} is a torch file but not a Thrust checkpoint (no '{CHECKPOINT_FORMAT}' marker)")
    if state.get("version") not in READABLE_VERSIONS:
        raise CheckpointError(
            f"{path} has checkpoint version {state.get('version')}; this Thrust reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))} (a newer Thrust wrote it: upgrade Thrust)"
        )
    return state


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records of a metrics file; a last line cut off by a crash is skipped."""
    records = []
    if not Path(path).exists():
        return records
    for line in Path(path).read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def truncate_metrics(path: Path, last_step: int) -> None:
    """Drop records written after the checkpoint a resumed run restarts from."""
    kept = [r for r in read_jsonl(path) if r.get("step", 0) <= last_step]
    atomic_write_bytes(path, "".join(json.dumps(r) + "\n" for r in kept).encode())


def new_run_dir(root: Path, stem: str) -> Path:
    """A fresh folder `root/stem`, or `stem-2`, `stem-3`, ... if taken."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-")
    candidate, n = root / stem, 2
    while candidate.exists():
        candidate, n = root / f"{stem}-{n}", n + 1
    return candidate
