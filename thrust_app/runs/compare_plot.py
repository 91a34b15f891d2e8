"""`thrust compare --plot out.png`: the comparison as one figure in rliable's three views. Left, each group's
evaluation curve (IQM over its runs at each step, 95% bootstrap band); middle, the interval estimates of the
chosen score (IQM and mean with their 95% CIs); right, the performance profile (the fraction of runs that
score better than each value, with a 95% bootstrap band). Groups keep one colour across the three panels,
and the legend carries their full names."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .compare import GroupStats, RunScore, group_curve, score_kind

BOOTSTRAP_SEED = 0


def plot_comparison(
    groups: dict[str, list[RunScore]], table: Sequence[GroupStats], score: str, out: str | Path, x: str = "step"
) -> Path:
    """Write the figure to `out` (its suffix picks the format: .png, .svg, .pdf); returns the path."""
    import matplotlib

    matplotlib.use("Agg")  # no display: a file only
    import matplotlib.pyplot as plt

    kind = score_kind(score)
    names = [row.name for row in table]
    colours = {name: plt.get_cmap("tab10")(i % 10) for i, name in enumerate(names)}
    figure, (curves, intervals, profile) = plt.subplots(1, 3, figsize=(16, 4.8), layout="constrained")
    for name in names:
        rows = group_curve(groups[name], x)
        xs = [row["x"] for row in rows]
        curves.plot(xs, [row["iqm"] for row in rows], color=colours[name], label=name, marker=".")
        curves.fill_between(xs, [row["low"] for row in rows], [row["high"] for row in rows], color=colours[name], alpha=0.2)
    curves.set(xlabel="env steps" if x == "step" else "seconds", ylabel="evaluation return (IQM, 95% CI)")
    draw_intervals(intervals, table, colours)
    better = "higher" if kind.higher_is_better else "lower"
    intervals.set(xlabel=kind.label, title=f"IQM (filled) and mean (open), 95% CIs; {better} is better")
    draw_profile(profile, groups, kind.key, kind.higher_is_better, colours)
    figure.legend(*curves.get_legend_handles_labels(), loc="outside lower center", ncols=min(3, len(names)), fontsize=8)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return out


def draw_intervals(axes, table: Sequence[GroupStats], colours: dict) -> None:
    """IQM (filled) and mean (open) of each group, each with its 95% CI as a bar; one row per group."""
    for i, row in enumerate(table):
        marks = ((0.12, row.iqm, row.iqm_ci, colours[row.name]), (-0.12, row.mean, row.mean_ci, "white"))
        for offset, value, (low, high), face in marks:
            if not np.isnan(low):
                axes.hlines(i + offset, low, high, color=colours[row.name], linewidth=3)
            axes.plot(value, i + offset, "o", color=colours[row.name], markerfacecolor=face)
    axes.set_yticks(range(len(table)), [textwrap.fill(row.name, 28) for row in table], fontsize=7)
    axes.invert_yaxis()


def draw_profile(axes, groups: dict[str, list[RunScore]], key: str, higher_is_better: bool, colours: dict) -> None:
    """The fraction of a group's runs scoring better than tau, for tau over the range of every run's score."""
    every = np.array([run.scores[key] for runs in groups.values() for run in runs], np.float64)
    taus = np.linspace(every.min(), every.max(), 100) if every.max() > every.min() else np.array([every.min()])
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    for name, runs in groups.items():
        values = np.array([run.scores[key] for run in runs], np.float64)
        better = (values[:, None] > taus) if higher_is_better else (values[:, None] < taus)
        resampled = better[rng.integers(0, len(values), (1000, len(values)))].mean(axis=1)  # runs drawn with replacement
        low, high = np.percentile(resampled, [2.5, 97.5], axis=0)
        axes.step(taus, better.mean(axis=0), where="post", color=colours[name])
        axes.fill_between(taus, low, high, step="post", color=colours[name], alpha=0.15)
    side = "above" if higher_is_better else "below"
    axes.set(xlabel="tau", ylabel=f"fraction of runs scoring {side} tau", ylim=(-0.02, 1.02))


__all__ = ["plot_comparison"]
