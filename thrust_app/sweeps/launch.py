"""`thrust sweep`: start a sweep from its file or continue one from its folder, on the engine it names:
the embedded Optuna engine (`optuna_engine.py`) or Ray Tune (`ray_engine.py`, loaded only when asked for).

One driver per sweep folder: the driver holds the folder's lock (`runs/lock.py`, the run folders' own
mechanism) from before it writes anything until it ends, so a second `thrust sweep --resume` of a live
sweep is refused in one line naming the driver's PID."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..config import ConfigError
from ..runs.files import atomic_write_json
from ..runs.lock import RunLock
from .optuna_engine import run_optuna_sweep
from .spec import SweepSpec, load_sweep


def sweep(
    path: str | Path | None = None,
    *,
    resume_folder: str | Path | None = None,
    runs_root: str | Path = "runs",
    workers: int | None = None,
    engine: str | None = None,
    address: str | None = None,
    log=print,
) -> Path:
    """Run a sweep (from its YAML file; `engine` overrides the file's) or continue one (from its folder);
    returns the sweep folder. `address`: a Ray cluster to run on (Ray engine only)."""
    if resume_folder is not None:
        folder = Path(resume_folder)
        spec = load_sweep(folder)
    else:
        spec = SweepSpec.from_yaml(path)
        if engine is not None:
            spec = dataclasses.replace(spec, engine=engine)
            spec.check()
        folder = Path(runs_root) / spec.name
    if address is not None and spec.engine != "ray":
        raise ConfigError("--address joins a Ray cluster: add --engine ray (or `engine: ray` in the sweep file)")
    with RunLock(folder, refusal=SWEEP_FOLDER_BUSY):
        if resume_folder is None:
            if (folder / "sweep.json").exists():
                raise ConfigError(f"{folder} already holds a sweep; continue it with `thrust sweep --resume {folder}`")
            atomic_write_json(folder / "sweep.json", dataclasses.asdict(spec))
        resume = resume_folder is not None
        if spec.engine == "ray":
            from .ray_engine import run_ray_sweep

            run_ray_sweep(folder, spec, resume=resume, address=address, workers=workers, log=log)
        else:
            run_optuna_sweep(folder, spec, resume=resume, workers=workers, log=log)
    return folder


#: What a second driver of a sweep folder is told.
SWEEP_FOLDER_BUSY = (
    "{folder} is being run by `thrust sweep` process {holder} (one driver per sweep folder); wait for it to end, "
    "or stop it (Ctrl-C, or the dashboard's Stop) and then continue with `thrust sweep --resume {folder}`"
)
