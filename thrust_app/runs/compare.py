"""Comparing runs honestly: seeds grouped by configuration, each run scored by its final evaluation,
and per group the mean and the interquartile mean (IQM) with 95% bootstrap confidence intervals, plus
the probability that one group's run beats another's (Agarwal et al., 2021, "Deep RL at the edge of
the statistical precipice"; the definitions of the `rliable` library).

With one task the stratified bootstrap of rliable is the plain bootstrap over a group's runs;
`scipy.stats.bootstrap` computes it (percentile intervals). rliable itself is not used: its pinned
`arch < 8` does not import with pandas 3, which the dashboard needs.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from .files import CONFIG_FILE, METRICS_FILE, RunDirError, read_json, read_jsonl

#: What runs are grouped by unless told otherwise: everything that defines a run except its seed.
DEFAULT_GROUP_BY = ("algo", "env", "config")
CONFIDENCE = 0.95


@dataclass
class RunScore:
    """One run as a comparison sees it."""

    path: Path
    spec: dict[str, Any]
    score: float  #: the mean return of the run's last evaluation
    curve: list[tuple[int, float, float]] = field(default_factory=list)  #: (step, wall_s, eval mean) per evaluation


@dataclass
class GroupStats:
    name: str
    runs: int
    mean: float
    mean_ci: tuple[float, float]
    iqm: float
    iqm_ci: tuple[float, float]


def find_runs(paths: Iterable[str | Path]) -> list[Path]:
    """Run folders named directly, or found one level inside a folder of runs (such as `runs/`)."""
    found: list[Path] = []
    for path in map(Path, paths):
        if (path / CONFIG_FILE).is_file():
            found.append(path)
        elif path.is_dir():
            found += sorted(child for child in path.iterdir() if (child / CONFIG_FILE).is_file())
        else:
            raise RunDirError(f"{path} is neither a run folder nor a folder of runs")
    return found


def load_score(path: Path) -> RunScore | None:
    """The run's final evaluation and its evaluation curve; None for a run not yet evaluated."""
    evals = [r for r in read_jsonl(path / METRICS_FILE) if r.get("kind") == "eval"]
    if not evals:
        return None
    curve = [(r["step"], r.get("wall_s", math.nan), r["eval_mean"]) for r in evals]
    return RunScore(path, read_json(path / CONFIG_FILE), evals[-1]["eval_mean"], curve)


def group_key(spec: dict[str, Any], group_by: Sequence[str]) -> str:
    """The group a run belongs to: the values of `group_by` (fields of config.json, or `config.KEY`)."""
    parts = []
    for name in group_by:
        if name == "config":
            value: Any = spec.get("config", {})
        elif name.startswith("config."):
            value = spec.get("config", {}).get(name.removeprefix("config."))
        else:
            value = spec.get(name)
        parts.append(json.dumps(value, sort_keys=True))
    return "\x1f".join(parts)


def group_runs(scores: Sequence[RunScore], group_by: Sequence[str] = DEFAULT_GROUP_BY) -> dict[str, list[RunScore]]:
    """Runs grouped, each group named by algo, env and the settings in which the groups differ."""
    grouped: dict[str, list[RunScore]] = {}
    for score in scores:
        grouped.setdefault(group_key(score.spec, group_by), []).append(score)
    named = {}
    for runs in grouped.values():  # settings that tell groups of the same algo and env apart
        spec = runs[0].spec
        family = [
            other[0].spec.get("config", {})
            for other in grouped.values()
            if (other[0].spec.get("algo"), other[0].spec.get("env")) == (spec.get("algo"), spec.get("env"))
        ]
        named[group_name(spec, group_by, _differing_config_keys(family))] = runs
    return named


def group_name(spec: dict[str, Any], group_by: Sequence[str], differing: Sequence[str]) -> str:
    """By default algo, env and the settings in which the groups differ; else `key=value` per `group_by` entry."""
    if tuple(group_by) == DEFAULT_GROUP_BY:
        settings = [f"{key}={_short(spec['config'].get(key))}" for key in differing]
        return " ".join([spec.get("algo", "?"), spec.get("env", "?"), *settings])
    config = spec.get("config", {})
    return " ".join(
        f"{name}={_short(config.get(name[7:]) if name.startswith('config.') else spec.get(name))}" for name in group_by
    )


def _differing_config_keys(configs: Sequence[dict[str, Any]]) -> list[str]:
    keys = sorted(set().union(*configs)) if configs else []
    return [key for key in keys if len({json.dumps(config.get(key)) for config in configs}) > 1]


def _short(value: Any) -> str:
    return (
        ",".join(map(str, value))
        if isinstance(value, (list, tuple))
        else f"{value:g}"
        if isinstance(value, float)
        else str(value)
    )


def iqm(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean: the mean of the middle 50% of the scores (25% trimmed from each end)."""
    return stats.trim_mean(values, 0.25, axis=axis)


def _interval(values: np.ndarray, statistic, reps: int, seed: int) -> tuple[float, float]:
    if len(values) < 2 or np.all(values == values[0]):
        point = float(statistic(values, axis=-1))
        return (point, point) if len(values) >= 2 else (math.nan, math.nan)
    result = stats.bootstrap(
        (values,),
        statistic,
        n_resamples=reps,
        confidence_level=CONFIDENCE,
        method="percentile",
        vectorized=True,
        random_state=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def group_stats(name: str, scores: Sequence[float], reps: int = 2000, seed: int = 0) -> GroupStats:
    """Mean and IQM of a group's final scores, each with its 95% bootstrap confidence interval."""
    values = np.asarray(scores, dtype=np.float64)
    return GroupStats(
        name,
        len(values),
        float(values.mean()),
        _interval(values, np.mean, reps, seed),
        float(iqm(values)),
        _interval(values, iqm, reps, seed),
    )


def probability_of_improvement(
    x: Sequence[float], y: Sequence[float], reps: int = 2000, seed: int = 0
) -> tuple[float, tuple[float, float]]:
    """P(X > Y) for a run X of the first group and Y of the second (ties count half), the Mann-Whitney
    U statistic over n*m pairs, with a 95% bootstrap interval (each group resampled on its own)."""

    def statistic(first: np.ndarray, second: np.ndarray, axis: int = -1) -> np.ndarray:
        wins = first[..., :, None] > second[..., None, :]
        ties = first[..., :, None] == second[..., None, :]
        return (wins + 0.5 * ties).mean(axis=(-2, -1))

    first, second = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    point = float(statistic(first, second))
    if len(first) < 2 or len(second) < 2:
        return point, (math.nan, math.nan)
    result = stats.bootstrap(
        (first, second),
        statistic,
        n_resamples=reps,
        confidence_level=CONFIDENCE,
        method="percentile",
        vectorized=True,
        paired=False,
        random_state=np.random.default_rng(seed),
    )
    return point, (float(result.confidence_interval.low), float(result.confidence_interval.high))


def compare(
    paths: Iterable[str | Path], group_by: Sequence[str] = DEFAULT_GROUP_BY, reps: int = 2000
) -> tuple[list[GroupStats], dict[tuple[str, str], tuple[float, tuple[float, float]]], list[Path]]:
    """Group the runs under `paths`, and return each group's stats, the probability of improvement of
    every ordered pair of groups on the same env, and the runs left out (never evaluated)."""
    scores, skipped = [], []
    for path in find_runs(paths):
        score = load_score(path)
        if score is None:
            skipped.append(path)
        else:
            scores.append(score)
    groups = group_runs(scores, group_by)
    table = [group_stats(name, [run.score for run in runs], reps) for name, runs in groups.items()]
    same_env = [
        (a, b) for a, b in itertools.permutations(groups, 2) if groups[a][0].spec.get("env") == groups[b][0].spec.get("env")
    ]  # returns of one env only
    pairs = {
        (a, b): probability_of_improvement([r.score for r in groups[a]], [r.score for r in groups[b]], reps)
        for a, b in same_env
    }
    return table, pairs, skipped


def format_table(table: Sequence[GroupStats], pairs: dict[tuple[str, str], tuple[float, tuple[float, float]]]) -> str:
    """The comparison as text: one line per group, then P(improvement) per pair of groups on the same env (15 at most)."""
    width = max([len(row.name) for row in table] + [5])
    lines = [f"{'group':<{width}}  runs  {'mean [95% CI]':>26}  {'IQM [95% CI]':>26}"]
    for row in sorted(table, key=lambda row: -row.iqm):
        lines.append(
            f"{row.name:<{width}}  {row.runs:>4}  {_with_ci(row.mean, row.mean_ci):>26}  {_with_ci(row.iqm, row.iqm_ci):>26}"
        )
    shown = [(a, b) for a, b in pairs if a < b][:15]
    if shown:
        lines.append("")
    for a, b in shown:
        p, (low, high) = pairs[(a, b)]
        interval = f"[{low:.2f}, {high:.2f}]" if not math.isnan(low) else "[n/a: 1 run]"
        lines.append(f"P({a} > {b}) = {p:.2f} {interval}")
    return "\n".join(lines)


def _with_ci(value: float, interval: tuple[float, float]) -> str:
    low, high = interval
    return f"{value:.4g} [{low:.4g}, {high:.4g}]" if not math.isnan(low) else f"{value:.4g} [n/a: 1 run]"
