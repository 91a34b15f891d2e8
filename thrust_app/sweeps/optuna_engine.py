"""The embedded Optuna engine of `thrust sweep` (the default; Ray Tune for clusters is `ray_engine.py`).

Optuna samples the settings (TPE, random or grid) and prunes (median or successive halving) from
evaluations reported during training. `workers` processes share the study through a journal file in
the sweep folder (`runs/<sweep>/study.journal`); each trial is one ordinary Thrust run folder per seed
(`runs/<sweep>/trial-0003-s1/`), so eval, export, the player, the dashboard and `thrust compare` work
on it. A trial's score is the mean over its seeds of the metric. `thrust sweep --resume runs/<sweep>`
keeps every finished trial and continues the ones a killed sweep left running from their checkpoints.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import ConfigError
from ..runs.lock import is_locked
from ..runs.staging import process_alive
from .spec import JOURNAL_FILE, METRICS, SweepSpec, load_sweep
from .trial_runs import on_new_evaluation, run_folder, run_seed, run_seeds_together, score, score_so_far

if TYPE_CHECKING:
    from ..training.trainer import IterationHook, Trainer


def distribution(space: dict[str, Any]) -> Any:
    """The Optuna distribution of a search entry: choice, int (log or not), uniform / loguniform floats."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    kind = space["type"]
    if kind == "choice":
        return CategoricalDistribution(space["values"])
    if kind == "int":
        return IntDistribution(int(space["low"]), int(space["high"]), log=bool(space.get("log", False)))
    log = kind == "loguniform" or bool(space.get("log", False))
    return FloatDistribution(float(space["low"]), float(space["high"]), log=log)


def suggest(trial: Any, name: str, space: dict[str, Any]) -> Any:
    """One setting of a trial, drawn from its search entry's distribution."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    drawn = distribution(space)
    if isinstance(drawn, CategoricalDistribution):
        return trial.suggest_categorical(name, drawn.choices)
    if isinstance(drawn, IntDistribution):
        return trial.suggest_int(name, drawn.low, drawn.high, log=drawn.log)
    return trial.suggest_float(name, drawn.low, drawn.high, log=drawn.log)


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


def objective(trial: Any, folder: Path, spec: SweepSpec, interrupted: list[bool], seed_processes: int = 1) -> float:
    """Train the trial's settings on every seed (resuming folders a killed sweep left), `seed_processes` of them
    at a time; its score. A run stopped by a signal marks the trial interrupted (resume continues it) and
    `interrupted` non-empty."""
    trial.set_user_attr("pid", os.getpid())  # whose trial this is, for continue_orphans
    params = {name: suggest(trial, name, space) for name, space in spec.search.items()}
    number = trial.user_attrs.get("continues", trial.number)  # a resumed trial keeps its folders
    try:
        if spec.batch_seeds:  # the seeds as one batch here, on the cores the seed processes would have had
            summaries = run_seeds_together(folder, spec, number, params, max(spec.cpus_per_trial, seed_processes))
            return statistics.fmean(seed_score(trial, number, summary, spec, interrupted) for summary in summaries)
        if seed_processes > 1:
            return statistics.fmean(
                seed_score(trial, number, summary, spec, interrupted)
                for summary in seeds_in_parallel(folder, spec, number, params, seed_processes)
            )
        scores = []
        for index in range(spec.seeds):  # one after another: the pruner decides on the first seed's evaluations
            hook = _pruning_hook(trial, spec) if index == 0 else None
            scores.append(seed_score(trial, number, run_seed(folder, spec, number, index, params, hook), spec, interrupted))
        return statistics.fmean(scores)
    except ConfigError as err:  # a sampled combination the config checks refuse: this trial fails
        trial.set_user_attr("error", f"its settings {params} do not fit: {err}")
        print(f"thrust: trial {number} failed: {trial.user_attrs['error']}", file=sys.stderr)
        raise RuntimeError(str(err)) from None


def seeds_in_parallel(folder: Path, spec: SweepSpec, number: int, params: dict[str, Any], processes: int) -> list[dict]:
    """Every seed's summary, `processes` seeds training at once: the first here, the others in forked processes
    (each dies with this worker, as this worker with its driver)."""
    fork = multiprocessing.get_context("fork")
    with fork.Pool(processes - 1, initializer=die_with_driver, initargs=(os.getpid(),)) as pool:
        others = [pool.apply_async(run_seed, (folder, spec, number, index, params, None)) for index in range(1, spec.seeds)]
        first = run_seed(folder, spec, number, 0, params, None)
        return [first, *(result.get() for result in others)]


def seed_score(trial: Any, number: int, summary: dict[str, Any], spec: SweepSpec, interrupted: list[bool]) -> float:
    """One seed's score, or the trial's end: pruned, interrupted (by a signal: this worker stops), or failed."""
    import optuna

    if summary["status"] == "pruned":
        raise optuna.TrialPruned()
    if summary["status"] in ("interrupted", "terminated"):  # Ctrl-C or kill: this worker stops here
        trial.set_user_attr("interrupted", True)
        interrupted.append(True)
    if summary["status"] not in ("finished", "solved"):
        if summary["status"] not in ("interrupted", "terminated"):
            trial.set_user_attr("error", f"{summary['run_dir']} ended {summary['status']}")
            print(f"thrust: trial {number} failed: {trial.user_attrs['error']}", file=sys.stderr)
        raise RuntimeError(f"{summary['run_dir']} ended {summary['status']}")
    return score(summary, spec)


def _pruning_hook(trial: Any, spec: SweepSpec) -> IterationHook:
    """Report each new evaluation to Optuna; stop the run as "pruned" when the pruner says so."""

    def report(trainer: Trainer) -> None:
        trial.report(score_so_far(trainer, spec), trainer.logger.last_eval_step)
        if trial.should_prune():
            trainer.request_stop("pruned")

    return on_new_evaluation(report)


# -- running it -----------------------------------------------------------------------------------------
def run_worker(folder: Path, worker: int, seed_processes: int = 1) -> None:
    """One worker: trials until the sweep has its number of finished or pruned trials, each training
    `seed_processes` of its seeds at once."""
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
        check_failures(study)
        done = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))
        running = len(study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))
        if done >= spec.trials:
            break
        if done + running >= spec.trials:
            continue_orphans(study, folder, spec)
            time.sleep(0.5)
            continue
        study.optimize(
            lambda trial: objective(trial, folder, spec, interrupted, seed_processes), n_trials=1, catch=(RuntimeError,)
        )


#: Trials that fail one after another (each with an error of its own, not an interruption) before the sweep
#: stops: settings that no run can use would otherwise fail trial after trial without end.
MAX_CONSECUTIVE_FAILURES = 5


class TooManyFailures(ConfigError):
    """The sweep's trials keep failing; continuing would only fail more."""


def check_failures(study: Any) -> None:
    """Raise TooManyFailures, naming the first error, once MAX_CONSECUTIVE_FAILURES trials in a row failed."""
    from optuna.trial import TrialState

    failed: list[Any] = []
    for trial in study.get_trials(deepcopy=False):
        if trial.state in (TrialState.COMPLETE, TrialState.PRUNED):
            failed = []
        elif trial.state == TrialState.FAIL and "error" in trial.user_attrs:
            failed.append(trial)
    if len(failed) >= MAX_CONSECUTIVE_FAILURES:
        first = failed[0]
        raise TooManyFailures(
            f"{len(failed)} trials in a row failed, so the sweep stops; the first, trial "
            f"{first.user_attrs.get('continues', first.number)}: {first.user_attrs['error']}"
        )


def continue_orphans(study: Any, folder: Path, spec: SweepSpec) -> None:
    """Running trials whose worker has died (a crash, the OOM killer, a kill -9) and whose run folders no
    process holds: marked failed and queued again, so a live worker continues each in its own folder from
    its checkpoint instead of waiting for it. Two workers finding the same orphan queue it once."""
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        pid = trial.user_attrs.get("pid")
        key = trial.user_attrs.get("continues", trial.number)
        if pid is None or process_alive(str(pid)):
            continue
        if any(is_locked(run_folder(folder, spec, key, index)) for index in range(spec.seeds)):
            continue  # its run is still being written: not an orphan (yet)
        try:
            study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        except UpdateFinishedTrialError:  # another worker marked it first, and queued it
            continue
        study.enqueue_trial(trial.params, user_attrs={"continues": key})


def requeue_interrupted(folder: Path, spec: SweepSpec) -> int:
    """Trials a killed sweep left running, or a stopped one interrupted: queued again under their own
    folders (a killed one is first marked failed). A trial that failed with no error of its own was
    interrupted too: something escaped its run (a second signal's KeyboardInterrupt, which Optuna records
    as a failure), and its folders are continued like any other's."""
    from optuna.trial import TrialState

    study = open_study(folder, spec)
    handled: set[int] = set()  # trial folders that are done, or already queued to continue
    unfinished: dict[int, list[Any]] = {}
    for trial in study.get_trials(deepcopy=False):
        key = trial.user_attrs.get("continues", trial.number)
        escaped = trial.state == TrialState.FAIL and "error" not in trial.user_attrs
        if trial.state in (TrialState.WAITING, TrialState.COMPLETE, TrialState.PRUNED):
            handled.add(key)
        elif trial.state == TrialState.RUNNING or trial.user_attrs.get("interrupted") or escaped:
            unfinished.setdefault(key, []).append(trial)
    for trials in unfinished.values():
        for trial in trials:
            if trial.state == TrialState.RUNNING:
                study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
    queued = [key for key in unfinished if key not in handled]
    for key in queued:
        study.enqueue_trial(unfinished[key][-1].params, user_attrs={"continues": key})
    return len(queued)


def _forked_worker(folder: Path, index: int, driver: int, seed_processes: int) -> None:
    die_with_driver(driver)
    try:
        run_worker(folder, worker=index, seed_processes=seed_processes)
    except KeyboardInterrupt:  # a second Ctrl-C: the run's checkpoint is kept, the trial resumes later
        sys.exit(130)
    except TooManyFailures:  # worker 0, in the driver, says so once
        sys.exit(1)


def die_with_driver(driver: int) -> None:
    """Have the kernel send this worker SIGTERM when the driver that forked it dies, however it dies (SIGKILL
    included; Linux's parent-death signal): its run checkpoints and stops as on Ctrl-C, and `--resume`
    continues the trial. Elsewhere a killed driver leaves its workers to finish their trials."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    if os.getppid() != driver:  # the driver died before the request was made
        os.kill(os.getpid(), signal.SIGTERM)


def _wait(process: multiprocessing.process.BaseProcess) -> int:
    process.join()
    return process.exitcode or 0


def run_optuna_sweep(folder: Path, spec: SweepSpec, *, resume: bool, workers: int | None, log=print) -> None:
    """Run (or, `resume`, continue) the sweep in `folder` with `workers` processes sharing its study."""
    if resume:
        log(f"thrust: continuing sweep {spec.name}: {requeue_interrupted(folder, spec)} interrupted trial(s) queued again")
    else:
        open_study(folder, spec)
    available = workers or spec.workers or (os.cpu_count() or 1) // spec.cpus_per_trial or 1
    count = min(available, spec.trials)
    # processes the trials leave over train their seeds side by side (without a pruner, which decides on the first)
    seed_processes = max(1, min(spec.seeds, available // count)) if spec.pruner == "none" else 1
    log(
        f"thrust: sweep {spec.name}: {spec.trials} trials x {spec.seeds} seed(s) of {spec.algo} on {spec.env}, "
        f"{count} worker process(es) x {seed_processes} seed(s) at once, folder {folder}"
    )
    # This process is worker 0; workers 1.. are forked from it once torch and the trainer are imported
    # here, so no worker pays that import (seconds) again.
    import torch  # noqa: F401

    from ..training import trainer  # noqa: F401

    fork = multiprocessing.get_context("fork")
    processes = [
        fork.Process(target=_forked_worker, args=(folder, index, os.getpid(), seed_processes)) for index in range(1, count)
    ]
    for process in processes:
        process.start()
    try:
        run_worker(folder, worker=0, seed_processes=seed_processes)
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
