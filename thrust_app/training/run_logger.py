"""A run's records: metrics.jsonl, the progress bar, the time spent, and the summary.

The logger holds what happened since the last train record (episodes, losses), the recent training
returns, the last evaluation and when the run first reached its solve threshold; its `state_dict`
goes into every checkpoint, so a resumed run writes the same records as one that never stopped.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import torch

from ..algos.base import Iteration
from ..runs.files import METRICS_FILE, append_jsonl
from ..version import __version__
from .evaluation import EvalResult
from .run_spec import RunSpec

#: Receives every record the logger writes (train, eval) and the summary.
RecordListener = Callable[[dict[str, Any]], None]


@dataclasses.dataclass
class RunClock:
    """Seconds spent training (collect + update: what steps/s is measured on) and in all (evaluation too)."""

    train_s: float = 0.0
    wall_s: float = 0.0

    @contextmanager
    def timing(self, training: bool) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            self.wall_s += elapsed
            if training:
                self.train_s += elapsed


class ProgressBar:
    """A tqdm bar of a run's steps towards its budget, with what `RunLogger.postfix` reports beside it."""

    def __init__(self, spec: RunSpec, enabled: bool) -> None:
        self.spec, self.enabled = spec, enabled
        self.tqdm: Any = None

    @contextmanager
    def showing(self, step: int) -> Iterator[None]:
        from tqdm.auto import tqdm

        # One speed on the bar: the training steps/s of the postfix (tqdm's own rate would count evaluations too).
        self.tqdm = tqdm(
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]",
            total=self.spec.timesteps,
            initial=step,
            unit="step",
            disable=not self.enabled,
            desc=f"{self.spec.algo} {self.spec.env}",
            dynamic_ncols=True,
            smoothing=0.1,
        )
        try:
            yield
        finally:
            self.tqdm.close()
            self.tqdm = None

    def advance(self, steps: int, postfix: Callable[[int], dict[str, str]]) -> None:
        if self.tqdm is not None:  # the last iteration may overshoot the budget: the bar stops at it
            self.tqdm.update(min(steps, self.tqdm.total - self.tqdm.n))
            self.tqdm.set_postfix(postfix(self.tqdm.n), refresh=False)


class RunLogger:
    """Writes one run's records and keeps what they are computed from."""

    def __init__(
        self, run_dir: Path, spec: RunSpec, threshold: float | None, progress: bool, on_record: RecordListener | None = None
    ) -> None:
        self.metrics_path = run_dir / METRICS_FILE
        self.spec = spec
        self.threshold = threshold
        self.progress = progress
        #: Who receives every record and the summary: the caller's listener, TensorBoard, ...
        self.listeners: list[RecordListener] = [on_record] if on_record else []
        self.clock = RunClock()
        self.last_eval: EvalResult | None = None
        self.last_eval_step: int | None = None
        self.solved_at_step: int | None = None
        self.solved_at_s: float | None = None
        self.solved_at_train_s: float | None = None  #: training time (evaluations excluded) at the solve
        self.recent_returns: list[float] = []
        #: Episodes and losses since the last train record.
        self.pending: dict[str, list] = {"returns": [], "lengths": [], "stats": []}
        self.bar = ProgressBar(spec, progress)

    # -- what a checkpoint keeps -------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "train_s": self.clock.train_s,
            "wall_s": self.clock.wall_s,
            "solved_at_step": self.solved_at_step,
            "solved_at_s": self.solved_at_s,
            "solved_at_train_s": self.solved_at_train_s,
            "recent_returns": self.recent_returns,
            "last_eval": dataclasses.asdict(self.last_eval) if self.last_eval else None,
            "last_eval_step": self.last_eval_step,
            "pending": self.pending,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.clock = RunClock(state["train_s"], state["wall_s"])
        self.solved_at_step = state["solved_at_step"]
        self.solved_at_s = state["solved_at_s"]
        self.solved_at_train_s = state.get("solved_at_train_s")  # absent in checkpoints of older versions
        self.recent_returns = list(state["recent_returns"])
        self.last_eval = EvalResult(**state["last_eval"]) if state["last_eval"] else None
        self.last_eval_step = state.get("last_eval_step")
        self.pending = state["pending"]

    # -- records -----------------------------------------------------------------------------------
    def write(self, record: dict[str, Any]) -> None:
        append_jsonl(self.metrics_path, record)
        for listener in self.listeners:
            listener(record)

    def add_iteration(self, iteration: Iteration) -> None:
        """Keep an iteration's episodes and losses for the next train record; advance the progress bar."""
        self.pending["returns"] += iteration.episode_returns
        self.pending["lengths"] += iteration.episode_lengths
        if iteration.stats:
            self.pending["stats"].append(iteration.stats)
        self.recent_returns = (self.recent_returns + iteration.episode_returns)[-100:]
        self.bar.advance(iteration.steps, self.postfix)

    def has_pending(self) -> bool:
        return bool(self.pending["returns"] or self.pending["stats"])

    def write_train(self, step: int) -> None:
        """One train record of everything since the last one: episodes, their mean return, mean losses."""
        pending = self.pending
        self.pending = {"returns": [], "lengths": [], "stats": []}
        stats = pending["stats"]
        keys = dict.fromkeys(key for record in stats for key in record)  # warm-up iterations have no losses
        losses = {key: statistics.fmean(s[key] for s in stats if key in s) for key in keys}
        returns = pending["returns"]
        self.write(
            {
                "kind": "train",
                "step": step,
                "wall_s": round(self.clock.wall_s, 3),
                "sps": self.steps_per_second(step),
                "episodes": len(returns),
                "return_mean": statistics.fmean(returns) if returns else None,
                "episode_returns": returns,
                "episode_lengths": pending["lengths"],
                "losses": losses,
            }
        )

    def write_eval(self, result: EvalResult, step: int) -> None:
        """An eval record; the first evaluation at or above the threshold marks the run solved."""
        self.last_eval = result
        self.last_eval_step = step
        self.write(
            {
                "kind": "eval",
                "step": step,
                "wall_s": round(self.clock.wall_s, 3),
                "train_s": round(self.clock.train_s, 4),
                **result.as_dict(),
            }
        )
        if self.threshold is not None and self.solved_at_step is None and result.mean >= self.threshold:
            self.solved_at_step = step
            self.solved_at_s = round(self.clock.wall_s, 3)
            self.solved_at_train_s = round(self.clock.train_s, 4)

    def steps_per_second(self, step: int) -> float | None:
        return round(step / self.clock.train_s, 1) if self.clock.train_s else None

    # -- progress bar ------------------------------------------------------------------------------
    def progress_bar(self, step: int) -> AbstractContextManager[None]:
        """The run's progress bar from `step` to the budget while inside (none when `progress` is off)."""
        return self.bar.showing(step)

    def postfix(self, step: int) -> dict[str, str]:
        fields = {"sps": f"{step / max(self.clock.train_s, 1e-9):,.0f}"}
        if self.recent_returns:
            fields["return"] = f"{statistics.fmean(self.recent_returns[-20:]):.3g}"
        if self.last_eval:
            fields["eval"] = f"{self.last_eval.mean:.3g}"
        return fields

    def close(self) -> None:
        """Close the listeners that hold files (TensorBoard's writer)."""
        for listener in self.listeners:
            close = getattr(listener, "close", None)
            if close is not None:
                close()

    # -- the end -----------------------------------------------------------------------------------
    def summary(self, status: str, step: int, device: torch.device, notify: bool = True) -> dict[str, Any]:
        """How the run stands: its status, steps, times, last evaluation and solve; the listeners get it
        (`notify`) when the run ends."""
        spec, last_eval = self.spec, self.last_eval
        summary = {
            "algo": spec.algo,
            "env": spec.env,
            "seed": spec.seed,
            "device": str(device),
            "status": status,
            "timesteps": step,
            "target_timesteps": spec.timesteps,
            "wall_s": round(self.clock.wall_s, 3),
            "train_s": round(self.clock.train_s, 3),
            "sps": self.steps_per_second(step),
            "eval_mean": last_eval.mean if last_eval else None,
            "eval_std": last_eval.std if last_eval else None,
            "eval_episodes": len(last_eval.returns) if last_eval else 0,
            "eval_success_rate": last_eval.success_rate if last_eval else None,
            "solve_threshold": self.threshold,
            "solved_at_step": self.solved_at_step,
            "solved_at_s": self.solved_at_s,
            "solved_at_train_s": self.solved_at_train_s,
            "thrust_version": __version__,
            "torch_version": torch.__version__,
        }
        for listener in self.listeners if notify else ():
            listener({"kind": "summary", **summary})
        return summary
