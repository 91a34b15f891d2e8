"""What both sweep engines do with a trial: train each of its seeds in an ordinary run folder (or continue
one), score a finished or running run by the sweep's metric, and report each new evaluation."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..runs.files import CONFIG_FILE, LAST_CHECKPOINT, SUMMARY_FILE, atomic_write_json, read_json
from ..runs.lock import RunLock
from .spec import TRIAL_FILE, SweepSpec

if TYPE_CHECKING:
    from ..training.trainer import IterationHook, ResumeFrom, Trainer


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
    from ..training.trainer import resume, train

    run_dir = run_folder(folder, spec, number, index)
    quiet = {"progress": False, "log": lambda _: None, "on_iteration": hook}
    if (run_dir / CONFIG_FILE).exists() and not (run_dir / LAST_CHECKPOINT).exists() and start is None:
        with RunLock(run_dir):  # killed before its first checkpoint: nothing to keep, start it again (never
            shutil.rmtree(run_dir)  # under a process still writing it: the lock refuses that in one line)
    ended = read_json(run_dir / SUMMARY_FILE) if (run_dir / SUMMARY_FILE).exists() else {}
    if start is not None:
        summary = resume(run_dir, start=start, **quiet)
    elif ended.get("status") in ("finished", "solved"):
        summary = ended
    elif (run_dir / LAST_CHECKPOINT).exists():  # killed (no summary), or stopped by a signal: go on from there
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
    record_trial(run_dir, spec, number, params)
    return summary


def record_trial(run_dir: Path, spec: SweepSpec, number: int, params: dict[str, Any]) -> None:
    """trial.json beside a run: the sweep and trial it belongs to, and the trial's settings."""
    record = read_json(run_dir / TRIAL_FILE) if (run_dir / TRIAL_FILE).exists() else {}
    record.update(sweep=spec.name, trial=number, engine=spec.engine, params=params)
    atomic_write_json(run_dir / TRIAL_FILE, record)


def run_seeds_together(folder: Path, spec: SweepSpec, number: int, params: dict[str, Any], threads: int) -> list[dict]:
    """Every seed's summary of a trial with `batch_seeds`: the seeds not started yet train in this process as one
    batch on `threads` torch threads (training/seed_batch.py); those a killed sweep left started (finished, or to
    continue from their checkpoint) go through `run_seed`, one after another."""
    from ..training.seed_batch import train_seeds

    fresh = [i for i in range(spec.seeds) if not (run_folder(folder, spec, number, i) / CONFIG_FILE).exists()]
    summaries = {i: run_seed(folder, spec, number, i, params, None) for i in range(spec.seeds) if i not in fresh}
    if fresh:
        run_dirs = [run_folder(folder, spec, number, i) for i in fresh]
        batch = train_seeds(
            spec.algo, spec.env, [spec.seed + i for i in fresh], run_dirs=run_dirs, torch_threads=threads,
            timesteps=spec.timesteps, eval_every=spec.eval_every, eval_episodes=spec.eval_episodes,
            overrides={**spec.base, **params}, progress=False, log=lambda _: None,
        )  # fmt: skip
        for index, run_dir, summary in zip(fresh, run_dirs, batch, strict=True):
            record_trial(run_dir, spec, number, params)
            summaries[index] = summary
    return [summaries[i] for i in range(spec.seeds)]


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
