"""`thrust sweep SWEEP.yaml`: many runs on one machine, with Optuna embedded (Ray Tune for clusters:
`sweep_ray.py`, chosen by `engine: ray` or `--engine ray`).

Optuna samples the settings (TPE, random or grid) and prunes (median or successive halving) from
evaluations reported during training. `workers` processes share the study through a journal file in
the sweep folder (`runs/<sweep>/study.journal`); each trial is one ordinary Thrust run folder per seed
(`runs/<sweep>/trial-0003-s1/`), so eval, export, the player, the dashboard and `thrust compare` work
on it. A trial's score is the mean over its seeds of the metric. `thrust sweep --resume runs/<sweep>`
keeps every finished trial and continues the ones a killed sweep left running from their checkpoints.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from .config import ConfigError
from .run_spec import make_spec
from .runs import atomic_write_json, read_json

if TYPE_CHECKING:
    from .trainer import IterationHook, ResumeFrom, Trainer

SWEEP_FILE = "sweep.yaml"
JOURNAL_FILE = "study.journal"
#: What a trial optimises: the final evaluation's mean return (maximised), or how soon an evaluation
#: first reached the env's threshold (minimised): in env steps (a run that never solves counts as 2x the
#: budget) or in training seconds, evaluations excluded (never solved: 2x the run's whole training time).
METRICS = {"eval_mean": "maximize", "solved_at_step": "minimize", "solved_at_train_s": "minimize"}
SAMPLERS = ("tpe", "random", "grid")
#: How trials are stopped early (or, with PBT, continued from better ones). Optuna's successive-halving
#: pruner is asynchronous, so "asha" is the same pruner there; PBT needs Ray.
PRUNERS = ("none", "median", "successive_halving", "asha", "pbt")
ENGINES = ("optuna", "ray")
TRIAL_FILE = "trial.json"
#: The Ray engine's record of its trials (sweep_ray.Ledger writes it).
LEDGER_FILE = "trials.json"


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
    workers: int = 0  #: 0: as many as the machine has cores (Optuna) / as Ray's resources allow
    eval_every: int | None = None
    eval_episodes: int = 10
    #: "optuna" (embedded, worker processes on this machine) or "ray" (Ray Tune: ASHA, PBT, clusters).
    engine: str = "optuna"
    #: CPU cores per trial: its torch threads, and what Ray reserves for it.
    cpus_per_trial: int = 1
    #: GPU share per trial (0.25: four trials per GPU); above 0 trials train on CUDA.
    gpus_per_trial: float = 0.0
    #: PBT: env steps between exploit/explore rounds (default: eval_every; a round needs an evaluation).
    pbt_interval: int | None = None
    #: Ray: times a failed trial is restarted from its last checkpoint before it counts as failed.
    max_failures: int = 2

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
        if self.engine not in ENGINES:
            raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if min(self.seeds, self.trials, self.timesteps, self.cpus_per_trial) < 1 or self.workers < 0:
            raise ConfigError("seeds, trials, timesteps and cpus_per_trial must be >= 1, workers >= 0")
        if self.gpus_per_trial < 0 or self.max_failures < 0:
            raise ConfigError("gpus_per_trial and max_failures must be >= 0")
        if self.pruner == "pbt" and self.engine != "ray":
            raise ConfigError("pruner: pbt needs the Ray engine: add `engine: ray` or run `thrust sweep --engine ray`")
        if self.pruner == "pbt" and (self.seeds != 1 or self.sampler == "grid"):
            raise ConfigError("PBT copies weights between trials, so each trial is one seed (seeds: 1), sampled (not grid)")
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
        "asha": optuna.pruners.SuccessiveHalvingPruner,
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

    trial.set_user_attr("pid", os.getpid())  # whose trial this is, for _fail_orphans
    params = {name: suggest(trial, name, space) for name, space in spec.search.items()}
    number = trial.user_attrs.get("continues", trial.number)  # a resumed trial keeps its folders
    scores = []
    for index in range(spec.seeds):
        hook = _pruning_hook(trial, spec) if index == 0 else None
        try:
            summary = run_seed(folder, spec, number, index, params, hook)
        except ConfigError as err:  # a sampled combination the config checks refuse: this trial fails
            print(f"thrust: trial {number} failed: its settings {params} do not fit: {err}", file=sys.stderr)
            raise RuntimeError(str(err)) from None
        if summary["status"] == "pruned":
            raise optuna.TrialPruned()
        if summary["status"] in ("interrupted", "terminated"):  # Ctrl-C or kill: this worker stops here
            trial.set_user_attr("interrupted", True)
            interrupted.append(True)
        if summary["status"] not in ("finished", "solved"):
            if summary["status"] not in ("interrupted", "terminated"):
                print(f"thrust: trial {number} failed: {summary['run_dir']} ended {summary['status']}", file=sys.stderr)
            raise RuntimeError(f"{summary['run_dir']} ended {summary['status']}")
        scores.append(score(summary, spec))
    return statistics.fmean(scores)


def run_folder(folder: Path, spec: SweepSpec, number: int, index: int) -> Path:
    """Where trial `number` trains its `index`-th seed."""
    return folder / f"trial-{number:04d}-s{spec.seed + index}"


def run_seed(
    folder: Path,
    spec: SweepSpec,
    number: int,
    index: int,
    params: dict[str, Any],
    hook: IterationHook | None,
    start: ResumeFrom | None = None,
) -> dict[str, Any]:
    """One seed of a trial, in its run folder: trained, continued from where a killed or stopped sweep left
    it, or (`start`, a PBT exploit or a Ray retry) continued from a given checkpoint under `params`; the
    summary. trial.json beside the run says which sweep and trial it belongs to and its settings."""
    from .trainer import resume, train

    run_dir = run_folder(folder, spec, number, index)
    quiet = {"progress": False, "log": lambda _: None, "on_iteration": hook}
    if (run_dir / "config.json").exists() and not (run_dir / "last.pt").exists() and start is None:
        shutil.rmtree(run_dir)  # killed before its first checkpoint: nothing to keep, start it again
    ended = read_json(run_dir / "summary.json") if (run_dir / "summary.json").exists() else {}
    if start is not None:
        summary = resume(run_dir, start=start, **quiet)
    elif ended.get("status") in ("finished", "solved"):
        summary = ended
    elif (run_dir / "last.pt").exists():  # killed (no summary), or stopped by a signal: go on from there
        summary = resume(run_dir, **quiet)
    else:
        summary = train(
            spec.algo,
            spec.env,
            timesteps=spec.timesteps,
            seed=spec.seed + index,
            device="cuda" if spec.gpus_per_trial > 0 else "cpu",
            torch_threads=spec.cpus_per_trial,
            run_dir=run_dir,
            eval_every=spec.eval_every,
            eval_episodes=spec.eval_episodes,
            overrides={**spec.base, **params},
            **quiet,
        )
    record = read_json(run_dir / TRIAL_FILE) if (run_dir / TRIAL_FILE).exists() else {}
    record.update(sweep=spec.name, trial=number, engine=spec.engine, params=params)
    atomic_write_json(run_dir / TRIAL_FILE, record)
    return summary


def score(summary: dict[str, Any], spec: SweepSpec) -> float:
    """A finished run's value of the sweep's metric."""
    if spec.metric == "solved_at_step":
        return summary["solved_at_step"] if summary["solved_at_step"] is not None else 2 * spec.timesteps
    if spec.metric == "solved_at_train_s":
        solved = summary.get("solved_at_train_s")
        return solved if solved is not None else 2 * summary["train_s"]
    return summary["eval_mean"]


def score_so_far(trainer: Trainer, spec: SweepSpec) -> float:
    """The metric as a run in progress stands (what pruners and schedulers compare): its last evaluation's
    mean return, or when it solved (while unsolved, the value a run that never solves gets)."""
    logger = trainer.logger
    if spec.metric == "solved_at_step":
        return logger.solved_at_step if logger.solved_at_step is not None else 2 * spec.timesteps
    if spec.metric == "solved_at_train_s":  # unsolved: 2x the whole run's training time, projected
        projected = logger.clock.train_s * spec.timesteps / max(trainer.step, 1)
        return logger.solved_at_train_s if logger.solved_at_train_s is not None else 2 * projected
    return logger.last_eval.mean


def on_new_evaluation(report: Callable[[Trainer], None]) -> IterationHook:
    """An iteration hook calling `report(trainer)` once after each new evaluation."""
    reported: set[int] = set()

    def hook(trainer: Trainer) -> None:
        step = trainer.logger.last_eval_step
        if step is None or step in reported:
            return
        reported.add(step)
        report(trainer)

    return hook


def _pruning_hook(trial: Any, spec: SweepSpec) -> IterationHook:
    """Report each new evaluation to Optuna; stop the run as "pruned" when the pruner says so."""

    def report(trainer: Trainer) -> None:
        trial.report(score_so_far(trainer, spec), trainer.logger.last_eval_step)
        if trial.should_prune():
            trainer.request_stop("pruned")

    return on_new_evaluation(report)


# -- running it -----------------------------------------------------------------------------------------
def run_worker(folder: Path, worker: int) -> None:
    """One worker: trials until the sweep has its number of finished or pruned trials."""
    import torch
    from optuna.trial import TrialState

    torch.set_num_threads(1)
    spec = load_sweep(folder)
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
        if (folder / "sweep.json").exists():
            raise ConfigError(f"{folder} already holds a sweep; continue it with `thrust sweep --resume {folder}`")
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(folder / "sweep.json", dataclasses.asdict(spec))
    if address is not None and spec.engine != "ray":
        raise ConfigError("--address joins a Ray cluster: add --engine ray (or `engine: ray` in the sweep file)")
    if spec.engine == "ray":
        from .sweep_ray import run_ray_sweep

        run_ray_sweep(folder, spec, resume=resume_folder is not None, address=address, workers=workers, log=log)
        return folder
    if resume_folder is not None:
        log(f"thrust: continuing sweep {spec.name}: {requeue_interrupted(folder, spec)} interrupted trial(s) queued again")
    else:
        open_study(folder, spec)
    # more workers than trials idle
    count = min(workers or spec.workers or (os.cpu_count() or 1) // spec.cpus_per_trial or 1, spec.trials)
    log(
        f"thrust: sweep {spec.name}: {spec.trials} trials x {spec.seeds} seed(s) of {spec.algo} on {spec.env}, "
        f"{count} worker process(es), folder {folder}"
    )
    # This process is worker 0; workers 1.. are forked from it once torch and the trainer are imported
    # here, so no worker pays that import (seconds) again.
    import torch  # noqa: F401

    from . import trainer  # noqa: F401

    fork = multiprocessing.get_context("fork")
    processes = [fork.Process(target=_forked_worker, args=(folder, index)) for index in range(1, count)]
    for process in processes:
        process.start()
    try:
        run_worker(folder, worker=0)
        codes = [_wait(process) for process in processes]
    except KeyboardInterrupt:  # the workers got the same Ctrl-C: they checkpoint their runs and stop
        codes = [_wait(process) for process in processes]
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
                process.join()
    if any(codes):
        log(
            f"thrust: {sum(1 for code in codes if code)} worker(s) stopped early; continue with "
            f"`thrust sweep --resume {folder}`"
        )
    return folder


def _forked_worker(folder: Path, index: int) -> None:
    try:
        run_worker(folder, worker=index)
    except KeyboardInterrupt:  # a second Ctrl-C: the run's checkpoint is kept, the trial resumes later
        sys.exit(130)


def _wait(process: multiprocessing.process.BaseProcess) -> int:
    process.join()
    return process.exitcode or 0


def load_sweep(folder: Path) -> SweepSpec:
    """The spec a sweep folder's sweep.json holds."""
    if not (Path(folder) / "sweep.json").is_file():
        raise ConfigError(f"{folder} is not a sweep folder (no sweep.json); start one with `thrust sweep SWEEP.yaml`")
    return SweepSpec(**read_json(Path(folder) / "sweep.json"))


@dataclasses.dataclass
class TrialRecord:
    """One trial as the sweep's engine holds it (Optuna's study, or the Ray engine's trials.json)."""

    number: int
    state: str  #: complete, pruned, fail, running, waiting, or (Ray) interrupted
    score: float | None
    params: dict[str, Any]


def list_trials(folder: Path) -> list[TrialRecord]:
    """The sweep's trials by number; a trial continued after a kill is listed once, with its last state."""
    spec = load_sweep(folder)
    if spec.engine == "ray":
        ledger = read_json(folder / LEDGER_FILE) if (folder / LEDGER_FILE).exists() else {}
        return [
            TrialRecord(entry["number"], entry["state"], entry["score"], entry["params"])
            for entry in sorted(ledger.values(), key=lambda entry: entry["number"])
        ]
    trials: dict[int, TrialRecord] = {}
    for trial in open_study(folder, spec).get_trials(deepcopy=False):
        number = trial.user_attrs.get("continues", trial.number)
        trials[number] = TrialRecord(number, trial.state.name.lower(), trial.value, dict(trial.params))
    return sorted(trials.values(), key=lambda trial: trial.number)


def best_trial(folder: Path) -> dict[str, Any] | None:
    """The best finished trial: its number, score and settings."""
    spec = load_sweep(folder)
    finished = [trial for trial in list_trials(folder) if trial.state == "complete" and trial.score is not None]
    if not finished:
        return None
    sign = 1 if METRICS[spec.metric] == "maximize" else -1
    trial = max(finished, key=lambda trial: sign * trial.score)
    return {"trial": trial.number, "score": trial.score, "params": trial.params}


def trial_states(folder: Path) -> dict[str, int]:
    """How many trials are finished, pruned, failed, running or waiting."""
    counts: dict[str, int] = {}
    for trial in list_trials(folder):
        counts[trial.state] = counts.get(trial.state, 0) + 1
    return counts


__all__ = ["SweepSpec", "TrialRecord", "best_trial", "list_trials", "load_sweep", "sweep", "trial_states"]
