"""A run's records as TensorBoard scalars under Stable-Baselines3's tag names, so `tensorboard --logdir runs`
overlays Thrust runs and SB3 runs of the same task. Live with `thrust train --tensorboard` (the sink listens
to the run's records as they are written), or afterwards with `thrust tb-export RUN...` (it replays
metrics.jsonl). Events go to `RUN/tb/`; TensorBoard names the run after the folder; x is the env step.

Tags, as SB3 writes them: `rollout/ep_rew_mean` and `rollout/ep_len_mean` (over the last 100 episodes, SB3's
window), `rollout/exploration_rate` (DQN's epsilon), `time/fps`, `train/<loss>` under SB3's names
(`policy_gradient_loss`, `value_loss`, `entropy_loss` = -entropy, `approx_kl`, `clip_fraction`, DQN's `loss`,
`actor_loss`, `critic_loss`, `ent_coef`, `learning_rate`; others under Thrust's own), `eval/mean_reward`,
`eval/mean_ep_length`, and `eval/std_reward` besides.
"""

from __future__ import annotations

import shutil
import statistics
import time
from collections import deque
from pathlib import Path
from typing import Any

from .files import CONFIG_FILE, METRICS_FILE, read_jsonl

TB_FOLDER = "tb"
#: SB3's episode window for rollout/ep_rew_mean and ep_len_mean.
EPISODE_WINDOW = 100
#: Thrust's logged values under SB3's tags, with the sign SB3 logs them with.
SB3_TAGS: dict[str, tuple[str, float]] = {
    "policy_loss": ("train/policy_gradient_loss", 1.0),
    "value_loss": ("train/value_loss", 1.0),
    "entropy": ("train/entropy_loss", -1.0),  # SB3 logs the loss term, -mean entropy
    "approx_kl": ("train/approx_kl", 1.0),
    "clip_fraction": ("train/clip_fraction", 1.0),
    "q_loss": ("train/loss", 1.0),
    "epsilon": ("rollout/exploration_rate", 1.0),
    "alpha": ("train/ent_coef", 1.0),
}


class TensorBoardSink:
    """Writes records (train and eval, as RunLogger makes them) as TensorBoard scalars under `run_dir/tb`."""

    def __init__(self, run_dir: Path, started_at: float | None = None) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(Path(run_dir) / TB_FOLDER))
        #: Wall-clock time of step 0: records carry seconds since the run started.
        self.started_at = time.time() if started_at is None else started_at
        self.returns: deque[float] = deque(maxlen=EPISODE_WINDOW)
        self.lengths: deque[int] = deque(maxlen=EPISODE_WINDOW)

    def __call__(self, record: dict[str, Any]) -> None:
        kind = record.get("kind")
        if kind == "train":
            values = self.train_values(record)
        elif kind == "eval":
            values = {
                "eval/mean_reward": record.get("eval_mean"),
                "eval/std_reward": record.get("eval_std"),
                "eval/mean_ep_length": statistics.fmean(record["eval_lengths"]) if record.get("eval_lengths") else None,
                "eval/success_rate": record.get("eval_success_rate"),
            }
        else:
            self.writer.flush()
            return
        when = self.started_at + (record.get("wall_s") or 0.0)
        for tag, value in values.items():
            if value is not None:
                self.writer.add_scalar(tag, value, global_step=record.get("step"), walltime=when)

    def train_values(self, record: dict[str, Any]) -> dict[str, float | None]:
        self.returns.extend(record.get("episode_returns") or [])
        self.lengths.extend(record.get("episode_lengths") or [])
        values = {
            "time/fps": record.get("sps"),
            "rollout/ep_rew_mean": statistics.fmean(self.returns) if self.returns else None,
            "rollout/ep_len_mean": statistics.fmean(self.lengths) if self.lengths else None,
        }
        for name, value in (record.get("losses") or {}).items():
            tag, sign = SB3_TAGS.get(name, (f"train/{name}", 1.0))
            values[tag] = sign * value
        return values

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
