"""Training jobs for the dashboard: each run trains in its own `thrust train` process.

A process outlives every Streamlit rerun, a closed browser tab and even a restarted dashboard; the
run folder is the only state. Stopping writes the run's STOP file (the trainer checkpoints and
exits at its next iteration), resuming starts `thrust train --resume`, and a run's status is read
back from its folder: its write lock held (a process is training it), summary.json, or neither.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..runs.files import CONFIG_FILE, METRICS_FILE, STOP_FILE, SUMMARY_FILE, atomic_write_json, read_json, read_jsonl
from ..runs.lock import is_locked

LOG_FILE = "train.log"
#: Written by the dashboard when it launches a process, before that process writes config.json.
LAUNCH_FILE = "launched.json"


def runs_root() -> Path:
    """Where runs live: $THRUST_RUNS_DIR, else ./runs."""
    return Path(os.environ.get("THRUST_RUNS_DIR", "runs"))


#: Written when a training process this dashboard launched has exited: its exit code.
EXIT_FILE = "exit.json"


def record_exit(path: Path) -> int | None:
    """The exit code of the process launched for this run, once it has exited (recorded in EXIT_FILE,
    so a restarted dashboard still knows); None while it runs or when it was not launched from here."""
    exit_file = path / EXIT_FILE
    if exit_file.exists():
        return read_json(exit_file)["returncode"]
    pid = read_json(path / LAUNCH_FILE).get("pid") if (path / LAUNCH_FILE).exists() else None
    if pid is None:
        return None
    try:
        done, status = os.waitpid(pid, os.WNOHANG)  # also reaps it: no zombie left behind
    except ChildProcessError:  # not our child (another dashboard started it)
        return None
    if done == 0:
        return None
    returncode = os.waitstatus_to_exitcode(status)
    atomic_write_json(exit_file, {"returncode": returncode, "pid": pid})
    return returncode


@dataclass
class RunInfo:
    path: Path
    config: dict[str, Any]
    summary: dict[str, Any] | None
    status: str  # running, starting, finished, solved, stopped, interrupted, incomplete

    @property
    def name(self) -> str:
        """The folder's name; a sweep's trial is named with its sweep (`<sweep>-trial-0003-s1`)."""
        if (self.path.parent / "sweep.json").exists():
            return f"{self.path.parent.name}-{self.path.name}"
        return self.path.name

    @property
    def active(self) -> bool:
        return self.status in ("running", "starting")

    @property
    def failure(self) -> str | None:
        """For a failed run: its exit code and the last lines of its log."""
        if self.status != "failed":
            return None
        returncode = read_json(self.path / EXIT_FILE)["returncode"]
        return f"exit code {returncode}\n{read_log_tail(self.path, 8)}"


def run_status(path: Path) -> str:
    """running (a process holds the lock), starting, failed (the launched process exited with an error and
    wrote no summary of how it ended), the summary's status, or incomplete."""
    if is_locked(path):
        return "running"
    launched, summary = path / LAUNCH_FILE, path / SUMMARY_FILE
    newer_summary = summary.exists() and launched.exists() and summary.stat().st_mtime >= launched.stat().st_mtime
    status = read_json(summary).get("status", "finished") if summary.exists() else "incomplete"
    if launched.exists() and (not newer_summary or status == "incomplete"):  # no summary of how it ended
        returncode = record_exit(path)
        if returncode is None and time.time() - launched.stat().st_mtime < 60:
            return "starting"  # launched, and the process has not yet taken the lock
        if returncode not in (None, 0):
            return "failed"
    return status


def _is_run(path: Path) -> bool:
    """A run folder: training wrote its config, or the dashboard launched a process for it."""
    return (path / CONFIG_FILE).is_file() or (path / LAUNCH_FILE).is_file()


def list_runs(root: Path | None = None) -> list[RunInfo]:
    """Every run under the runs folder, sweeps' trials included, newest first."""
    root = root or runs_root()
    if not root.is_dir():
        return []
    infos = []
    folders = [p for p in root.iterdir() if _is_run(p)]
    for sweep in (p for p in root.iterdir() if (p / "sweep.json").is_file()):  # `thrust sweep` trials, one level down
        folders += [p for p in sweep.iterdir() if _is_run(p)]
    for path in sorted(folders, key=lambda p: p.stat().st_mtime, reverse=True):
        summary = read_json(path / SUMMARY_FILE) if (path / SUMMARY_FILE).is_file() else None
        config_file = path / CONFIG_FILE if (path / CONFIG_FILE).is_file() else path / LAUNCH_FILE
        infos.append(RunInfo(path, read_json(config_file), summary, run_status(path)))
    return infos


def _launch(args: list[str], path: Path, request: dict[str, Any]) -> subprocess.Popen:
    path.mkdir(parents=True, exist_ok=True)
    (path / EXIT_FILE).unlink(missing_ok=True)
    atomic_write_json(path / LAUNCH_FILE, {**request, "launched_at": time.time()})
    with open(path / LOG_FILE, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "thrust_app", "train", *args, "--quiet"],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    atomic_write_json(path / LAUNCH_FILE, {**request, "launched_at": time.time(), "pid": process.pid})
    return process


def start_run(
    algo: str,
    env: str,
    *,
    timesteps: int,
    seed: int,
    device: str,
    overrides: dict[str, Any],
    name: str | None = None,
    root: Path | None = None,
    eval_every: int | None = None,
    preset: str = "default",
) -> Path:
    """Check the choices in this process (so errors show at once), then train in a new process."""
    from ..runs.files import new_run_dir
    from ..training.run_spec import make_spec

    spec = make_spec(algo, env, timesteps, seed, device, eval_every, overrides=overrides, preset=preset)  # raises on bad input
    root = root or runs_root()
    alias = spec.env.split("/")[-1].split("-v")[0].lower()
    path = new_run_dir(root, name or f"{spec.algo}-{alias}-s{seed}-{time.strftime('%Y%m%d-%H%M%S')}")
    args = [
        spec.algo,
        spec.env,
        "--timesteps",
        str(timesteps),
        "--seed",
        str(seed),
        "--device",
        device,
        "--run-dir",
        str(path),
    ]
    if eval_every:
        args += ["--eval-every", str(eval_every)]
    if preset != "default":
        args += ["--preset", preset]
    for key, value in overrides.items():
        args += ["--set", f"{key}={','.join(map(str, value)) if isinstance(value, (list, tuple)) else value}"]
    _launch(args, path, {"algo": spec.algo, "env": spec.env, "timesteps": timesteps, "seed": seed, "device": device})
    return path


def stop_run(path: Path) -> None:
    """Ask the run to stop at its next iteration; it keeps its checkpoint."""
    (path / STOP_FILE).write_text("stop requested by the dashboard\n")


def resume_run(path: Path) -> None:
    (path / STOP_FILE).unlink(missing_ok=True)
    _launch(["--resume", str(path)], path, read_json(path / CONFIG_FILE))


def delete_run(path: Path) -> None:
    if run_status(path) in ("running", "starting"):
        raise RuntimeError(f"{path.name} is still training; stop it first")
    shutil.rmtree(path)


#: The user's tags and note of a run (written by the dashboard only; the trainer never touches it).
NOTES_FILE = "notes.json"


def read_notes(path: Path) -> dict[str, Any]:
    """{"tags": [...], "text": "..."} of a run; empty when it has none."""
    notes = read_json(path / NOTES_FILE) if (path / NOTES_FILE).is_file() else {}
    return {"tags": list(notes.get("tags", [])), "text": str(notes.get("text", ""))}


def write_notes(path: Path, tags: list[str], text: str) -> None:
    atomic_write_json(path / NOTES_FILE, {"tags": tags, "text": text})


def read_log_tail(path: Path, lines: int = 20) -> str:
    log = path / LOG_FILE
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""


def metrics(path: Path) -> tuple[list[dict], list[dict]]:
    """(train records, eval records) of a run."""
    records = read_jsonl(path / METRICS_FILE)
    return [r for r in records if r.get("kind") == "train"], [r for r in records if r.get("kind") == "eval"]


def progress(info: RunInfo) -> dict[str, Any]:
    """Step reached, target, SPS and ETA in seconds (None where unknown) from the run's metrics."""
    train, evals = metrics(info.path)
    target = info.config.get("timesteps", 0)
    step = max([r["step"] for r in train + evals] or [0])
    sps = next((r["sps"] for r in reversed(train) if r.get("sps")), None)
    eta = (target - step) / sps if sps and info.active and step < target else None
    return {"step": step, "target": target, "sps": sps, "eta_s": eta, "fraction": min(step / target, 1.0) if target else 0.0}
