"""Callbacks of `Model.learn`, in SB3's roles: keep the best policy the evaluations saw (SB3's EvalCallback
with `best_model_save_path`), checkpoint every N steps (CheckpointCallback), stop at a return
(StopTrainingOnRewardThreshold), and any function of the model (a user's own).

A callback is called after every training iteration, with the model, which then shows the run as it
stands: `num_timesteps`, `last_evaluation` (the loop's latest evaluation: step and returns), `predict`,
`checkpoint(path)`. `on_iteration` returning False stops training (checkpoint kept, status "stopped").
Evaluations are the run's own (every `eval_every` steps, `eval_episodes` deterministic episodes on
their own seeds), so callbacks add no evaluation cost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..runs.files import BEST_CHECKPOINT, LAST_CHECKPOINT, atomic_write_bytes


class Model(Protocol):
    """What a callback reads and asks of the model (api/model.py's Model) while it learns."""

    run_dir: Path | None
    save_run: bool  #: False: the run folder is temporary, removed when `learn` returns

    @property
    def num_timesteps(self) -> int: ...

    @property
    def last_evaluation(self) -> tuple[int, Any] | None: ...

    def checkpoint(self, path: str | Path) -> Path: ...


class Callback:
    """Hooks of `Model.learn`: at the start, after every iteration (False stops training), at the end."""

    def on_training_start(self, model: Model) -> None:
        return None

    def on_iteration(self, model: Model) -> bool | None:
        return None

    def on_training_end(self, model: Model) -> None:
        return None


class FunctionCallback(Callback):
    """A plain function `fn(model) -> bool | None` called after every iteration; False stops training."""

    def __init__(self, fn: Callable[[Any], bool | None]) -> None:
        self.fn = fn

    def on_iteration(self, model: Model) -> bool | None:
        return self.fn(model)


class KeepBest(Callback):
    """After each evaluation that beats every earlier one, checkpoint the model (a whole Thrust checkpoint:
    `PPO.load(run_dir, checkpoint="best")` or `thrust export` of it). `path` defaults to RUN/best.pt.
    `best_mean` and `best_step` say what it kept."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.best_mean = float("-inf")
        self.best_step: int | None = None
        self._seen_step: int | None = None

    def target(self, model: Model) -> Path:
        return self.path if self.path is not None else Path(model.run_dir) / BEST_CHECKPOINT

    def on_training_start(self, model: Model) -> None:
        refuse_temporary_folder(model, self.path, "KeepBest", "KeepBest('best.pt')")

    def on_iteration(self, model: Model) -> None:
        evaluation = model.last_evaluation
        if evaluation is None or evaluation[0] == self._seen_step:
            return
        self._seen_step = evaluation[0]
        if evaluation[1].mean > self.best_mean:
            self.best_mean, self.best_step = evaluation[1].mean, evaluation[0]
            model.checkpoint(self.target(model))

    def on_training_end(self, model: Model) -> None:
        """The run's closing evaluation (and one that stopped it, solved) comes after the last iteration: the
        final checkpoint is the best when it scored higher."""
        evaluation = model.last_evaluation
        if evaluation is not None and evaluation[0] != self._seen_step and evaluation[1].mean > self.best_mean:
            self.best_mean, self.best_step = evaluation[1].mean, evaluation[0]
            atomic_write_bytes(self.target(model), (Path(model.run_dir) / LAST_CHECKPOINT).read_bytes())


class CheckpointEvery(Callback):
    """Every `steps` env steps, a checkpoint `FOLDER/<prefix>_<step>_steps.pt` (`folder` defaults to the run
    folder's `checkpoints/`), each loadable with `PPO.load(run_dir, checkpoint=PATH)`."""

    def __init__(self, steps: int, folder: str | Path | None = None, prefix: str = "model") -> None:
        if steps < 1:
            raise ValueError(f"CheckpointEvery needs steps >= 1, got {steps}")
        self.steps, self.folder, self.prefix = steps, Path(folder) if folder is not None else None, prefix
        self.next_step = steps
        self.saved: list[Path] = []

    def on_training_start(self, model: Model) -> None:
        refuse_temporary_folder(model, self.folder, "CheckpointEvery", f"CheckpointEvery({self.steps}, 'checkpoints')")
        self.next_step = (model.num_timesteps // self.steps + 1) * self.steps

    def on_iteration(self, model: Model) -> None:
        if model.num_timesteps < self.next_step:
            return
        self.next_step = (model.num_timesteps // self.steps + 1) * self.steps
        folder = self.folder if self.folder is not None else Path(model.run_dir) / "checkpoints"
        self.saved.append(model.checkpoint(folder / f"{self.prefix}_{model.num_timesteps}_steps.pt"))


def refuse_temporary_folder(model: Model, where: Path | None, name: str, example: str) -> None:
    """A callback that would write into the run folder of a model learning with save_run=False (a temporary
    folder, removed when `learn` returns) is refused before training starts, in one line."""
    if where is None and not model.save_run:
        raise ValueError(
            f"{name} without a path would write into the temporary run folder that learn() removes with "
            f"save_run=False: give it one ({example}), or keep the run folder"
        )


class StopAtReturn(Callback):
    """Stop training once an evaluation's mean return reaches `threshold` (SB3's StopTrainingOnRewardThreshold)."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold

    def on_iteration(self, model: Model) -> bool:
        evaluation = model.last_evaluation
        return evaluation is None or evaluation[1].mean < self.threshold


def as_callbacks(callback: Callback | Callable | Sequence | None) -> list[Callback]:
    """`learn(callback=...)`'s argument as a list: one callback, a function, or a list of either."""
    if callback is None:
        return []
    if isinstance(callback, Callback):
        return [callback]
    if callable(callback):
        return [FunctionCallback(callback)]
    if isinstance(callback, Sequence) and not isinstance(callback, str):
        return [one for item in callback for one in as_callbacks(item)]
    raise TypeError(f"callback must be a Callback, a function of the model or a list of them, got {type(callback).__name__}")


__all__ = ["Callback", "CheckpointEvery", "FunctionCallback", "KeepBest", "StopAtReturn", "as_callbacks"]
