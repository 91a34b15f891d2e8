"""Sweeps from the dashboard: launch `thrust sweep` processes, read their trials (the Optuna study, or
the Ray engine's ledger), stop and resume them.

A sweep the dashboard starts is the same `thrust sweep` a terminal runs, in a process group of its own
(so Stop reaches its worker processes too), logging to `runs/<sweep>/sweep.log`. Stop sends SIGINT,
the sweep's Ctrl-C: every worker checkpoints its run and the interrupted trials are queued again by
Resume (`thrust sweep --resume`). Reading a sweep never writes to it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..runs.files import atomic_write_json, read_json
from ..sweeps.spec import SweepSpec, load_sweep
from ..sweeps.trials import list_trials
from .jobs import runs_root

REQUEST_FILE = "sweep.request.yaml"  #: the YAML the dashboard launched the sweep with
LAUNCH_FILE = "sweep.launch.json"  #: the launching process's pid and time
LOG_FILE = "sweep.log"


@dataclass
class Trial:
    """One trial of a sweep as its study holds it."""

    number: int
    state: str  #: complete, pruned, fail, interrupted (resume continues it), running, waiting
    score: float | None
    params: dict[str, Any]
    runs: list[Path]  #: its run folders, one per seed


@dataclass
class SweepInfo:
    path: Path
    spec: SweepSpec
    running: bool
    trials: list[Trial]

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def status(self) -> str:
        """running; complete (every trial of the sweep ended: complete, pruned or failed); else stopped (resume
        continues its interrupted and waiting trials)."""
        if self.running:
            return "running"
        ended = sum(trial.state in ("complete", "pruned", "fail") for trial in self.trials)
        return "complete" if ended >= self.spec.trials else "stopped"

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for trial in self.trials:
            counts[trial.state] = counts.get(trial.state, 0) + 1
        return counts

    def best(self) -> Trial | None:
        scored = [t for t in self.trials if t.state == "complete" and t.score is not None]
        if not scored:
            return None
        maximize = self.spec.metric == "eval_mean"
        return max(scored, key=lambda t: t.score if maximize else -t.score)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of this process counts as ended
    try:
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return True


def is_running(path: Path) -> bool:
    """The process the dashboard launched for this sweep is alive."""
    return (path / LAUNCH_FILE).is_file() and _alive(int(read_json(path / LAUNCH_FILE)["pid"]))


def read_sweep(path: Path) -> SweepInfo:
    """A sweep folder's spec and trials (a trial resumed after a kill is shown once, with its last state)."""
    spec = load_sweep(path)
    trials = [
        Trial(record.number, record.state, record.score, record.params, sorted(path.glob(f"trial-{record.number:04d}-s*")))
        for record in list_trials(path)
    ]
    if (path / LAUNCH_FILE).exists():
        running = is_running(path)
    else:  # started from a terminal: what the engine says
        running = any(trial.state == "running" for trial in trials)
    return SweepInfo(path, spec, running, trials)


def list_sweeps(root: Path | None = None) -> list[SweepInfo]:
    root = root or runs_root()
    if not root.is_dir():
        return []
    # newest first, by when the sweep was created (reading a study touches its folder, so not the folder's time)
    folders = sorted(
        (p for p in root.iterdir() if (p / "sweep.json").is_file()), key=lambda p: (p / "sweep.json").stat().st_mtime
    )
    return [read_sweep(folder) for folder in reversed(folders)]


def _launch(args: list[str], folder: Path) -> None:
    with open(folder / LOG_FILE, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "thrust_app", "sweep", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: Stop reaches the workers too
        )
    atomic_write_json(folder / LAUNCH_FILE, {"pid": process.pid, "launched_at": time.time(), "args": args})


def start_sweep(text: str, workers: int | None = None, root: Path | None = None) -> Path:
    """Check a sweep's YAML here (errors show at once, as one line), then run it in a new process."""
    root = root or runs_root()
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ValueError(f"the sweep is not valid YAML: {str(err).splitlines()[0]}") from None
    name = document.get("name") if isinstance(document, dict) else None
    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError("the sweep needs a name: (a folder name under runs/)")
    folder = root / name
    if (folder / "sweep.json").exists() or (folder / LAUNCH_FILE).exists():
        raise ValueError(f"runs/{name} already holds a sweep; choose another name, or resume that one")
    folder.mkdir(parents=True, exist_ok=True)
    request = folder / REQUEST_FILE
    request.write_text(text)
    try:
        SweepSpec.from_yaml(request)  # raises ConfigError (a ValueError) with the one-line reason
    except ValueError:
        request.unlink()
        if not any(folder.iterdir()):
            folder.rmdir()
        raise
    _launch([str(request), "--runs-root", str(root), *(["--workers", str(workers)] if workers else [])], folder)
    return folder


def seeds_yaml(
    algo: str, env: str, timesteps: int, seeds: int, overrides: dict[str, Any], name: str, batch: bool = False
) -> str:
    """The sweep file of "N seeds of this config": one trial, no search, `seeds` runs (`batch`: as one batch in one
    process, `batch_seeds: true`)."""
    document = {"name": name, "algo": algo, "env": env, "timesteps": timesteps, "seeds": seeds, "trials": 1}
    document |= {"base": overrides, "search": {}, "sampler": "random"} | ({"batch_seeds": True} if batch else {})
    return yaml.safe_dump(document, sort_keys=False)


def stop_sweep(path: Path) -> None:
    """Ctrl-C for the sweep's whole process group: runs checkpoint, interrupted trials resume later."""
    if not is_running(path):
        raise ValueError(f"{path.name} is not running (or was started outside the dashboard: stop it with Ctrl-C there)")
    os.killpg(int(read_json(path / LAUNCH_FILE)["pid"]), signal.SIGINT)


def resume_sweep(path: Path, workers: int | None = None) -> None:
    if is_running(path):
        raise ValueError(f"{path.name} is still running")
    _launch(["--resume", str(path), *(["--workers", str(workers)] if workers else [])], path)
