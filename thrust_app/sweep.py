"""`thrust sweep SWEEP.yaml`: many runs on one machine, with Optuna embedded.

Optuna samples the settings (TPE, random or grid) and prunes (median or successive halving) from
evaluations reported during training. `workers` processes share the study through a journal file in
the sweep folder (`runs/<sweep>/study.journal`); each trial is one ordinary Thrust run folder per seed
(`runs/<sweep>/trial-0003-s1/`), so eval, export, the player, the dashboard and `thrust compare` work
on it. A trial's score is the mean over its seeds of the metric. `thrust sweep --resume runs/<sweep>`
keeps every finished trial and continues the ones a killed sweep left running from their checkpoints.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from .config import ConfigError
from .run_spec import make_spec
from .runs import atomic_write_json, read_json

SWEEP_FILE = "sweep.yaml"
JOURNAL_FILE = "study.journal"
#: What a trial optimises: the final evaluation's mean return (maximised), or the step at which an
#: evaluation first reached the env's threshold (minimised; a run that never solves counts as 2x budget).
METRICS = {"eval_mean": "maximize", "solved_at_step": "minimize"}
SAMPLERS = ("tpe", "random", "grid")
PRUNERS = ("none", "median", "successive_halving")


@dataclasses.dataclass
class SweepSpec:
    """A sweep file's contents (YAML keys of the same names)."""

    name: str
    algo: str
    env: str
    timesteps: int
    search: dict[str, dict[str, Any]]
    base: dict[str, Any] = dataclasses.field(default_factory=dict)
    seeds: int = 1
    seed: int = 0
    trials: int = 8
    metric: str = "eval_mean"
    sampler: str = "tpe"
    pruner: str = "none"
    #: Trials the pruner lets finish before it compares (Optuna's default 5; the zoo's too).
    pruner_startup_trials: int = 5
    workers: int = 0  #: 0: as many as the machine has cores
    eval_every: int | None = None
    eval_episodes: int = 10

    @classmethod
    def from_yaml(cls, path: str | Path) -> SweepSpec:
        try:
            document = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError) as err:
            raise ConfigError(f"{path}: cannot read the sweep file: {str(err).splitlines()[0]}") from None
        if not isinstance(document, dict):
            raise ConfigError(f"{path}: a sweep file is a mapping of name, algo, env, timesteps, search, ...")
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(document) - known)
        missing = sorted(
            f.name
            for f in dataclasses.fields(cls)
            if f.name not in document and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        )
        if unknown:
            raise ConfigError(f"{path}: unknown keys {', '.join(unknown)}; the keys are {', '.join(sorted(known))}")
        if missing:
            raise ConfigError(f"{path}: missing {', '.join(missing)}")
        spec = cls(**document)
        spec.check()
        return spec

    def check(self) -> None:
        """Every choice checked before any trial runs: the settings through Thrust's own config checks."""
        if self.metric not in METRICS or self.sampler not in SAMPLERS or self.pruner not in PRUNERS:
            raise ConfigError(
                f"metric must be one of {', '.join(METRICS)}, sampler one of {', '.join(SAMPLERS)}, "
                f"pruner one of {', '.join(PRUNERS)}"
            )
        if min(self.seeds, self.trials, self.timesteps) < 1 or self.workers < 0:
            raise ConfigError("seeds, trials and timesteps must be >= 1, workers >= 0")
        for name, space in self.search.items():
            _check_space(name, space)
        if self.sampler == "grid" and any(space["type"] != "choice" for space in self.search.values()):
            raise ConfigError("the grid sampler needs every search entry to be a choice (type: choice, values: [...])")
        corner = {name: _first_value(space) for name, space in self.search.items()}
        make_spec(self.algo, self.env, self.timesteps, overrides={**self.base, **corner})


def _check_space(name: str, space: Any) -> None:
    kinds = {"choice": ("values",), "int": ("low", "high"), "float": ("low", "high"), "loguniform": ("low", "high")}
    if not isinstance(space, dict) or space.get("type") not in kinds:
        raise ConfigError(f"search.{name}: give a type ({', '.join(kinds)}) and its values or low/high")
    absent = [key for key in kinds[space["type"]] if key not in space]
    if absent:
        raise ConfigError(f"search.{name}: a {space['type']} needs {', '.join(absent)}")


def _first_value(space: dict[str, Any]) -> Any:
    return space["values"][0] if space["type"] == "choice" else space["low"]


def suggest(trial: Any, name: str, space: dict[str, Any]) -> Any:
    """One setting of a trial, drawn from its search entry."""
    kind = space["type"]
    if kind == "choice":
        return trial.suggest_categorical(name, space["values"])
    if kind == "int":
        return trial.suggest_int(name, int(space["low"]), int(space["high"]), log=bool(space.get("log", False)))
    log = kind == "loguniform" or bool(space.get("log", False))
    return trial.suggest_float(name, float(space["low"]), float(space["high"]), log=log)


# -- the study ------------------------------------------------------------------------------------------
def open_study(folder: Path, spec: SweepSpec, worker: int = 0) -> Any:
    """The sweep's Optuna study in its journal file (created on first use)."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    optuna.logging.set_verbosity(optuna.logging.ERROR)  # a failed trial is reported by `objective`, in one line
    seed = spec.seed + 1000 * worker  # each worker samples its own stream
    samplers = {
        "tpe": lambda: optuna.samplers.TPESampler(seed=seed),
        "random": lambda: optuna.samplers.RandomSampler(seed=seed),
        "grid": lambda: optuna.samplers.GridSampler({n: s["values"] for n, s in spec.search.items()}, seed=seed),
    }
    pruners = {
        "none": optuna.pruners.NopPruner,
        "median": lambda: optuna.pruners.MedianPruner(n_startup_trials=spec.pruner_startup_trials, n_warmup_steps=1),
        "successive_halving": optuna.pruners.SuccessiveHalvingPruner,
    }
    storage = JournalStorage(JournalFileBackend(str(folder / JOURNAL_FILE)))
    return optuna.create_study(
        study_name=spec.name,
        storage=storage,
        sampler=samplers[spec.sampler](),
        pruner=pruners[spec.pruner](),
        direction=METRICS[spec.metric],
        load_if_exists=True,
    )


def objective(trial: Any, folder: Path, spec: SweepSpec, interrupted: list[bool]) -> float:
    """Train the trial's settings on every seed (resuming folders a killed sweep left); its score. A run
    stopped by a signal marks the trial interrupted (resume continues it) and `interrupted` non-empty."""
    import optuna

    from .trainer import resume, train

    trial.set_user_attr("pid", os.getpid())  # whose trial this is, for _fail_orphans
    params = {name: suggest(trial, name, space) for name, space in spec.search.items()}
    number = trial.user_attrs.get("continues", trial.number)  # a resumed trial keeps its folders
    scores = []
    for index in range(spec.seeds):
        seed = spec.seed + index
        run_dir = folder / f"trial-{number:04d}-s{seed}"
        hook = _pruning_hook(trial) if index == 0 else None
        quiet = {"progress": False, "log": lambda _: None, "on_iteration": hook}
        if (run_dir / "config.json").exists() and not (run_dir / "last.pt").exists():
            shutil.rmtree(run_dir)  # killed before its first checkpoint: nothing to keep, start it again
        ended = read_json(run_dir / "summary.json") if (run_dir / "summary.json").exists() else {}
        if ended.get("status") in ("finished", "solved"):
            summary = ended
        elif (run_dir / "last.pt").exists():  # killed (no summary), or stopped by a signal: go on from there
            summary = resume(run_dir, **quiet)
        else:
            summary = train(
                spec.algo,
                spec.env,
                timesteps=spec.timesteps,
                seed=seed,
                run_dir=run_dir,
                eval_every=spec.eval_every,
                eval_episodes=spec.eval_episodes,
                overrides={**spec.base, **params},
                **quiet,
            )
        atomic_write_json(run_dir / "trial.json", {"sweep": spec.name, "trial": number, "params": params})
        if summary["status"] == "pruned":
            raise optuna.TrialPruned()
        if summary["status"] in ("interrupted", "terminated"):  # Ctrl-C or kill: this worker stops here
            trial.set_user_attr("interrupted", True)
            interrupted.append(True)
        if summary["status"] not in ("finished", "solved"):
            if summary["status"] not in ("interrupted", "terminated"):
                print(f"thrust: trial {number} failed: {run_dir} ended {summary['status']}", file=sys.stderr)
            raise RuntimeError(f"{run_dir} ended {summary['status']}")
        scores.append(_score(summary, spec))
    return statistics.fmean(scores)


def _score(summary: dict[str, Any], spec: SweepSpec) -> float:
    if spec.metric == "solved_at_step":
        return summary["solved_at_step"] if summary["solved_at_step"] is not None else 2 * spec.timesteps
    return summary["eval_mean"]


def _pruning_hook(trial: Any):
    """Report each new evaluation to Optuna; stop the run as "pruned" when the pruner says so."""
    reported: set[int] = set()

    def hook(trainer: Any) -> None:
        step = trainer.logger.last_eval_step
        if step is None or step in reported:
            return
        reported.add(step)
        trial.report(trainer.logger.last_eval.mean, step)
        if trial.should_prune():
            trainer.request_stop("pruned")

    return hook


# -- running it -----------------------------------------------------------------------------------------
def run_worker(folder: Path, worker: int | None = None) -> None:
    """One worker: trials until the sweep has its number of finished or pruned trials."""
    import torch
    from optuna.trial import TrialState

    torch.set_num_threads(1)
    spec = SweepSpec(**read_json(folder / "sweep.json"))
    worker = int(os.environ.get("THRUST_SWEEP_WORKER", "0")) if worker is None else worker
    study = open_study(folder, spec, worker)
    interrupted: list[bool] = []
    # One trial at a time, counting before each: a sweep resumed once complete runs none, and a worker
    # starts no trial while the ones under way would already make up the number (it waits for them:
    # if one fails, another is needed).
    while not interrupted:
        done = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))
        running = len(study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))
        if done >= spec.trials:
            break
        if done + running >= spec.trials:
            _fail_orphans(study)
            time.sleep(0.5)
            continue
        study.optimize(lambda trial: objective(trial, folder, spec, interrupted), n_trials=1, catch=(RuntimeError,))


def _fail_orphans(study: Any) -> None:
    """Running trials whose worker process has died (a crash, the OOM killer) are marked failed, so the
    workers still alive do not wait for them."""
    from optuna.trial import TrialState

    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        pid = trial.user_attrs.get("pid")
        if pid is None:
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        except PermissionError:
            pass


def requeue_interrupted(folder: Path, spec: SweepSpec) -> int:
    """Trials a killed sweep left running, or a stopped one interrupted: queued again under their own
    folders (a killed one is first marked failed)."""
    from optuna.trial import TrialState

    study = open_study(folder, spec)
    handled: set[int] = set()  # trial folders that are done, or already queued to continue
    unfinished: dict[int, list[Any]] = {}
    for trial in study.get_trials(deepcopy=False):
        key = trial.user_attrs.get("continues", trial.number)
        if trial.state in (TrialState.WAITING, TrialState.COMPLETE, TrialState.PRUNED):
            handled.add(key)
        elif trial.state == TrialState.RUNNING or trial.user_attrs.get("interrupted"):
            unfinished.setdefault(key, []).append(trial)
    for trials in unfinished.values():
        for trial in trials:
            if trial.state == TrialState.RUNNING:
                study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
    queued = [key for key in unfinished if key not in handled]
    for key in queued:
        study.enqueue_trial(unfinished[key][-1].params, user_attrs={"continues": key})
    return len(queued)


def sweep(
    path: str | Path | None = None,
    *,
    resume_folder: str | Path | None = None,
    runs_root: str | Path = "runs",
    workers: int | None = None,
    log=print,
) -> Path:
    """Run a sweep (from its YAML file) or continue one (from its folder); returns the sweep folder."""
    if resume_folder is not None:
        folder = Path(resume_folder)
        spec = SweepSpec(**read_json(folder / "sweep.json"))
        log(f"thrust: continuing sweep {spec.name}: {requeue_interrupted(folder, spec)} interrupted trial(s) queued again")
    else:
        spec = SweepSpec.from_yaml(path)
        folder = Path(runs_root) / spec.name
        if (folder / "sweep.json").exists():
            raise ConfigError(f"{folder} already holds a sweep; continue it with `thrust sweep --resume {folder}`")
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(folder / "sweep.json", dataclasses.asdict(spec))
        open_study(folder, spec)
    count = min(workers or spec.workers or os.cpu_count() or 1, spec.trials)  # more workers than trials idle
    log(
        f"thrust: sweep {spec.name}: {spec.trials} trials x {spec.seeds} seed(s) of {spec.algo} on {spec.env}, "
        f"{count} worker process(es), folder {folder}"
    )
    # This process is worker 0 (one torch import fewer); workers 1.. are processes of their own.
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "thrust_app", "sweep", "--worker", str(folder)],
            env={**os.environ, "THRUST_SWEEP_WORKER": str(index), "OMP_NUM_THREADS": "1"},
        )
        for index in range(1, count)
    ]
    try:
        run_worker(folder, worker=0)
        codes = [process.wait() for process in processes]
    except KeyboardInterrupt:  # the workers got the same Ctrl-C: they checkpoint their runs and stop
        codes = [process.wait() for process in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait()
    if any(codes):
        log(
            f"thrust: {sum(1 for code in codes if code)} worker(s) stopped early; continue with "
            f"`thrust sweep --resume {folder}`"
        )
    return folder


def best_trial(folder: Path) -> dict[str, Any] | None:
    """The best finished trial: its number, score and settings."""
    spec = SweepSpec(**read_json(folder / "sweep.json"))
    study = open_study(folder, spec)
    try:
        trial = study.best_trial
    except ValueError:  # no finished trial yet
        return None
    return {"trial": trial.user_attrs.get("continues", trial.number), "score": trial.value, "params": trial.params}


def trial_states(folder: Path) -> dict[str, int]:
    """How many trials are finished, pruned, failed, running or waiting."""
    spec = SweepSpec(**read_json(folder / "sweep.json"))
    counts: dict[str, int] = {}
    for trial in open_study(folder, spec).get_trials(deepcopy=False):
        counts[trial.state.name.lower()] = counts.get(trial.state.name.lower(), 0) + 1
    return counts


__all__ = ["SweepSpec", "best_trial", "sweep", "trial_states"]
