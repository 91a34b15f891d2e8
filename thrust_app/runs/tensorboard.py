"""A run's records as TensorBoard scalars, so `tensorboard --logdir runs` shows Thrust runs next to a
user's other experiments. Live with `thrust train --tensorboard` (the sink listens to the run's
records as they are written), or afterwards with `thrust tb-export RUN...` (it replays metrics.jsonl).
Events go to `RUN/tb/`; TensorBoard names the run after the folder.

Tags: `train/episode_return`, `train/steps_per_second`, `train/<loss>` for every logged loss or
schedule value, `eval/mean_return`, `eval/std_return`; x is the env step, the wall time is the run's own.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from .files import CONFIG_FILE, METRICS_FILE, read_jsonl

TB_FOLDER = "tb"


class TensorBoardSink:
    """Writes records (train and eval, as RunLogger makes them) as TensorBoard scalars under `run_dir/tb`."""

    def __init__(self, run_dir: Path, started_at: float | None = None) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(Path(run_dir) / TB_FOLDER))
        #: Wall-clock time of step 0: records carry seconds since the run started.
        self.started_at = time.time() if started_at is None else started_at

    def __call__(self, record: dict[str, Any]) -> None:
        kind, step = record.get("kind"), record.get("step")
        when = self.started_at + (record.get("wall_s") or 0.0)
        if kind == "train":
            values = {
                "train/steps_per_second": record.get("sps"),
                "train/episode_return": record.get("return_mean"),
                **{f"train/{name}": value for name, value in (record.get("losses") or {}).items()},
            }
        elif kind == "eval":
            values = {"eval/mean_return": record.get("eval_mean"), "eval/std_return": record.get("eval_std")}
        else:
            self.writer.flush()
            return
        for tag, value in values.items():
            if value is not None:
                self.writer.add_scalar(tag, value, global_step=step, walltime=when)

    def close(self) -> None:
        self.writer.close()


def export_run(run_dir: str | Path) -> Path:
    """Write (again) a run's TensorBoard events from its metrics.jsonl; returns the events folder."""
    run_dir = Path(run_dir)
    records = read_jsonl(run_dir / METRICS_FILE)
    shutil.rmtree(run_dir / TB_FOLDER, ignore_errors=True)  # replace, never duplicate, earlier exports
    sink = TensorBoardSink(run_dir, started_at=(run_dir / CONFIG_FILE).stat().st_mtime)
    for record in records:
        sink(record)
    sink.close()
    return run_dir / TB_FOLDER
