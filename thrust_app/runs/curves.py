"""A run's learning curve as a chart: the training episodes' mean return and the evaluations with their
spread, from the run's metrics.jsonl. The dashboard's Training tab draws it live; `run_chart` gives it to a
notebook (`model.plot()`), where an Altair chart renders by itself."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd

from .files import METRICS_FILE, read_jsonl


def curves(train: list[dict], evals: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(training returns, evaluations with mean +- std, losses in long form) of a run's records."""
    returns = pd.DataFrame(
        [{"step": r["step"], "return": r["return_mean"]} for r in train if r.get("return_mean") is not None]
    )
    ev = pd.DataFrame(
        [
            {
                "step": r["step"],
                "eval_mean": r["eval_mean"],
                "low": r["eval_mean"] - r["eval_std"],
                "high": r["eval_mean"] + r["eval_std"],
            }
            for r in evals
        ]
    )
    losses = pd.DataFrame(
        [
            {"step": r["step"], "wall_s": r.get("wall_s"), "loss": k, "value": v}
            for r in train
            for k, v in (r.get("losses") or {}).items()
        ]
    )
    return returns, ev, losses


def return_chart(returns: pd.DataFrame, ev: pd.DataFrame) -> alt.Chart | None:
    layers = []
    if not returns.empty:
        layers.append(
            alt.Chart(returns)
            .mark_line(color="#9aa0a6")
            .encode(
                x=alt.X("step:Q", title="env steps"),
                y=alt.Y("return:Q", title="return"),
                tooltip=["step", alt.Tooltip("return:Q", format=".3g")],
            )
        )
    if not ev.empty:
        base = alt.Chart(ev).encode(x="step:Q")
        layers += [
            base.mark_area(opacity=0.2, color="#4285f4").encode(y="low:Q", y2="high:Q"),
            base.mark_line(point=True, color="#4285f4").encode(
                y="eval_mean:Q", tooltip=["step", alt.Tooltip("eval_mean:Q", format=".3g")]
            ),
        ]
    return alt.layer(*layers).properties(height=280) if layers else None


def run_chart(run_dir: str | Path, title: str | None = None) -> alt.Chart:
    """The learning curve of the run in `run_dir` (returns against env steps), titled with the folder's name."""
    records = read_jsonl(Path(run_dir) / METRICS_FILE)
    train = [record for record in records if record.get("kind", "train") == "train"]
    evals = [record for record in records if record.get("kind") == "eval"]
    returns, ev, _ = curves(train, evals)
    chart = return_chart(returns, ev)
    if chart is None:
        raise ValueError(f"{run_dir} has no records yet: train first")
    return chart.properties(title=title or Path(run_dir).name, width=520)


__all__ = ["curves", "return_chart", "run_chart"]
