"""A small benchmark harness: warm-up, then repeated timed calls, reported as median and spread.

Why not pytest-benchmark: Thrust's benches pair backends (CPU vs CUDA, torch vs onnxruntime vs the
browser) inside one run and alternate them round by round, because this host's speed drifts by
~1.5x within seconds; only ratios taken side by side mean anything. That needs control over the
order of measurements, which a per-test fixture does not give. This harness is 50 lines.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: What a second writer of a bench's results file is told ({folder}, {holder}: RunLock's).
RESULTS_BUSY = (
    "{folder}/{file} is being written by process {holder} (one writer per results file): wait for it to finish, "
    "or give this run another --results file"
)


@dataclass
class Measurement:
    """Seconds per call of one benchmark, one sample per round."""

    name: str
    samples: list[float] = field(default_factory=list)
    units_per_call: float = 1.0  #: e.g. env steps per call, for a rate

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> tuple[float, float]:
        """(min, max) of the rounds."""
        return min(self.samples), max(self.samples)

    @property
    def rate(self) -> float:
        return self.units_per_call / self.median

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "median_s": self.median,
            "min_s": self.spread[0],
            "max_s": self.spread[1],
            "rounds": len(self.samples),
            "units_per_call": self.units_per_call,
            "rate_per_s": self.rate,
        }


def time_call(fn: Callable[[], object], min_time: float, sync: Callable[[], None] = lambda: None) -> float:
    """Seconds per call of `fn`, calling it as often as fits in `min_time` (at least once)."""
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        sync()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return elapsed / calls


def run_rounds(
    benches: dict[str, Callable[[], object]],
    rounds: int,
    min_time: float,
    warmup: float,
    sync: dict[str, Callable[[], None]] | None = None,
    units: dict[str, float] | None = None,
) -> dict[str, Measurement]:
    """Warm each bench up, then time them round-robin (A B A B ...) for `rounds` rounds."""
    sync, units = sync or {}, units or {}
    results = {name: Measurement(name, units_per_call=units.get(name, 1.0)) for name in benches}
    for name, fn in benches.items():
        time_call(fn, warmup, sync.get(name, lambda: None))
    for _ in range(rounds):
        for name, fn in benches.items():
            results[name].samples.append(time_call(fn, min_time, sync.get(name, lambda: None)))
    return results


def fmt_seconds(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def available_devices(requested: str) -> list[str]:
    """The torch devices of a comma list that this machine has; prints one line for each it lacks."""
    import torch

    from thrust_app.training.device import cuda_summary

    devices = []
    for name in requested.split(","):
        if name == "cuda" and not torch.cuda.is_available():
            print(f"/cuda skipped: {cuda_summary()}")
            continue
        devices.append(name)
    return devices


def stop_if_signalled(summary: dict) -> dict:
    """A Thrust run's summary, or the bench's end if a signal stopped that run. The trainer turns Ctrl-C
    and SIGTERM into a graceful stop of the run (checkpoint kept), after which a bench would go on to its
    next run; stopping the run this way stops the bench."""
    if summary["status"] in ("interrupted", "terminated"):
        raise SystemExit(f"the run was {summary['status']} at step {summary['timesteps']:,}: the bench stops")
    return summary


def train_quietly(algo: str, env: str, **settings) -> dict:
    """One Thrust run on the CPU in a temporary folder, without progress bar or log lines (`train`'s other
    `settings` as given); its summary, through `stop_if_signalled`."""
    from tempfile import TemporaryDirectory

    from thrust_app.training.trainer import train

    with TemporaryDirectory() as tmp:
        summary = train(algo, env, device="cpu", run_dir=Path(tmp) / "run", progress=False, log=lambda _: None, **settings)
    return stop_if_signalled(summary)


def read_block(path: Path, name: str) -> list[str]:
    """The lines between the `<!-- NAME:start -->` and `<!-- NAME:end -->` markers of `path` (none without them)."""
    text = path.read_text() if path.exists() else ""
    found = re.search(rf"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", text, flags=re.S)
    return found.group(1).splitlines() if found else []


def replace_block(path: Path, name: str, lines: list[str]) -> None:
    """Put `lines` between the `<!-- NAME:start -->` and `<!-- NAME:end -->` markers of `path` (appended
    at the end when the file has none yet)."""
    text = path.read_text() if path.exists() else ""
    block = "\n".join([f"<!-- {name}:start -->", *lines, f"<!-- {name}:end -->"])
    pattern = rf"<!-- {name}:start -->.*?<!-- {name}:end -->"
    new, count = re.subn(pattern, lambda _: block, text, flags=re.S)
    path.write_text(new if count else text.rstrip("\n") + "\n\n" + block + "\n")


def peer_venv(folder: Path, install_steps: list[list[str]], label: str) -> Path:
    """The python of a peer library's own venv under .bench/, created and filled on first use: one `pip install`
    per entry of `install_steps`, in order (torch==2.13.0 first, so nothing pulls a CUDA build)."""
    import subprocess
    import venv

    python = folder / "bin" / "python"
    stamp = folder / ".installed"
    if stamp.exists():
        return python
    print(f"peers: installing {label} into {folder} (first run only; a few minutes)", flush=True)
    venv.create(folder, with_pip=True)
    for packages in install_steps:
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *packages], check=True)
    stamp.write_text(label + "\n")
    return python


class RecurrentPredict:
    """sb3-contrib's recurrent predict as `evaluate` calls a policy with memory: Thrust's flat memory (zeros at
    an episode's start) as RecurrentPPO's (h, c) states and back."""

    def __init__(self, model, normalize) -> None:
        self.model, self.normalize = model, normalize
        self.layers, _, self.hidden = model.policy.lstm_hidden_state_shape
        self.state_size = 2 * self.layers * self.hidden

    def __call__(self, obs, masks=None, state=None):
        import numpy as np

        h, c = state.reshape(len(obs), 2, self.layers, self.hidden).transpose(1, 2, 0, 3)
        actions, (h, c) = self.model.predict(self.normalize(obs), state=(h, c), episode_start=None, deterministic=True)
        return actions, np.stack([h, c]).transpose(2, 0, 1, 3).reshape(len(obs), self.state_size)


def hold_results(path: Path) -> object:
    """Hold the one-writer lock of a bench's results file until this process ends (the kernel releases it however
    the process ends), or exit with one line naming the process that holds it."""
    from thrust_app.runs.lock import RunLock, RunLockedError

    lock = RunLock(path.parent, RESULTS_BUSY.replace("{file}", path.name), name=f".{path.name}.lock")
    try:
        return lock.__enter__()
    except RunLockedError as error:
        raise SystemExit(f"error: {error}") from None


def save_results(path: Path, results: list[dict]) -> None:
    """The results so far, replacing the file atomically: a run killed mid-write leaves the last whole file."""
    from thrust_app.runs.files import atomic_write_bytes

    atomic_write_bytes(path, json.dumps(results, indent=1).encode())
