"""Comparing runs honestly: seeds grouped by every setting that differs, each run scored one of four ways
(SCORES: its final evaluation, the env steps or seconds to its first evaluation at the threshold, the area
under its evaluation curve), and per group the mean and the interquartile mean (IQM) with 95% bootstrap
confidence intervals, plus the probability that one group's run does better than another's (Agarwal et
al., 2021, "Deep RL at the edge of the statistical precipice"; the definitions of the `rliable` library),
for groups of two runs or more. Numbers are printed to the digits their intervals justify.

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

from .files import CONFIG_FILE, METRICS_FILE, SUMMARY_FILE, RunDirError, read_json, read_jsonl
from .scores import SCORES, Score

#: What runs are grouped by unless told otherwise: every setting that defines a run except its seed (and where
#: or how fast it ran: device, threads, checkpoints).
DEFAULT_GROUP_BY = ("algo", "env", "preset", "timesteps", "stop_at_return", "eval_every", "eval_episodes", "config")
CONFIDENCE = 0.95


@dataclass
class RunScore:
    """One run as a comparison sees it."""

    path: Path
    spec: dict[str, Any]
    score: float  #: the mean return of the run's last evaluation
    curve: list[tuple[int, float, float]] = field(default_factory=list)  #: (step, wall_s, eval mean) per evaluation
    scores: dict[str, float] = field(default_factory=dict)  #: every score of SCORES
    reached: bool = False  #: an evaluation reached the threshold


@dataclass
class GroupStats:
    name: str
    runs: int
    mean: float
    mean_ci: tuple[float, float]
    iqm: float
    iqm_ci: tuple[float, float]
    reached: int = 0  #: runs whose evaluations reached the threshold


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


def load_score(path: Path, threshold: float | None = None) -> RunScore | None:
    """The run's scores and its evaluation curve; None for a run not yet evaluated. The threshold is
    `threshold`, else the one the run trained against (its summary's solve_threshold)."""
    evals = [r for r in read_jsonl(path / METRICS_FILE) if r.get("kind") == "eval"]
    if not evals:
        return None
    curve = [(r["step"], r.get("wall_s", math.nan), r["eval_mean"]) for r in evals]
    summary = read_json(path / SUMMARY_FILE) if (path / SUMMARY_FILE).is_file() else {}
    threshold = summary.get("solve_threshold") if threshold is None else threshold
    first = next((point for point in curve if threshold is not None and point[2] >= threshold), None)
    end = (summary.get("timesteps") or curve[-1][0], summary.get("wall_s") or curve[-1][1])
    steps, seconds = (first[0], first[1]) if first else end  # not reached: the whole run, flagged
    scores = {"final": curve[-1][2], "steps": float(steps), "seconds": float(seconds), "auc": area_under(curve)}
    return RunScore(path, read_json(path / CONFIG_FILE), curve[-1][2], curve, scores, first is not None)


def area_under(curve: Sequence[tuple[int, float, float]], until: int | None = None) -> float:
    """The mean evaluation return over the run (trapezoids between evaluations, the last one held to `until`):
    a run that learns sooner scores higher, and a run stopped early once solved is held at its last score."""
    steps = np.array([point[0] for point in curve], np.float64)
    values = np.array([point[2] for point in curve], np.float64)
    until = max(until or 0, int(steps[-1]))
    if until > steps[-1]:
        steps, values = np.append(steps, until), np.append(values, values[-1])
    if len(steps) == 1 or steps[-1] == steps[0]:
        return float(values[-1])
    return float(np.trapezoid(values, steps) / (steps[-1] - steps[0]))


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
    """Runs grouped, each group named by algo, env and every setting in which groups of that algo and env differ."""
    grouped: dict[str, list[RunScore]] = {}
    for score in scores:
        grouped.setdefault(group_key(score.spec, group_by), []).append(score)
    named = {}
    for runs in grouped.values():
        spec = runs[0].spec
        family = [
            other[0].spec
            for other in grouped.values()
            if (other[0].spec.get("algo"), other[0].spec.get("env")) == (spec.get("algo"), spec.get("env"))
        ]
        named[group_name(spec, group_by, _differing_settings(family, group_by))] = runs
    return named


def group_name(spec: dict[str, Any], group_by: Sequence[str], differing: Sequence[str]) -> str:
    """By default algo, env and the settings in which the groups differ (`preset=fast`, `learning_rate=0.003`);
    else `key=value` per `group_by` entry."""
    if tuple(group_by) == DEFAULT_GROUP_BY:
        settings = [f"{key.removeprefix('config.')}={_short(_value(spec, key))}" for key in differing]
        return " ".join([str(spec.get("algo", "?")), str(spec.get("env", "?")), *settings])
    return " ".join(f"{name}={_short(_value(spec, name))}" for name in group_by)


def _value(spec: dict[str, Any], name: str) -> Any:
    return spec.get("config", {}).get(name[7:]) if name.startswith("config.") else spec.get(name)


def _differing_settings(specs: Sequence[dict[str, Any]], group_by: Sequence[str]) -> list[str]:
    """The run settings (top-level names, then `config.KEY`) of `group_by` whose values differ among `specs`."""
    top = [name for name in group_by if name not in ("algo", "env", "config") and not name.startswith("config.")]
    config_keys = sorted(set().union(*(spec.get("config", {}) for spec in specs))) if "config" in group_by else []
    names = top + [f"config.{key}" for key in config_keys]
    return [name for name in names if len({json.dumps(_value(spec, name), sort_keys=True) for spec in specs}) > 1]


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


Pairs = dict[tuple[str, str], tuple[float, tuple[float, float]]]


def compare(
    paths: Iterable[str | Path],
    group_by: Sequence[str] = DEFAULT_GROUP_BY,
    reps: int = 2000,
    score: str = "final",
    threshold: float | None = None,
) -> tuple[list[GroupStats], Pairs, list[Path]]:
    """Group the runs under `paths` and score each by `score` (SCORES); returns each group's stats, the
    probability that a run of one group does better than one of another, for every ordered pair of groups
    on the same env with two runs or more each, and the runs left out (never evaluated)."""
    kind = score_kind(score)
    groups, skipped = load_groups(paths, group_by, threshold)
    values = {name: [run.scores[kind.key] for run in runs] for name, runs in groups.items()}
    table = [group_stats(name, values[name], reps) for name in groups]
    for row in table:
        row.reached = sum(run.reached for run in groups[row.name])
    sign = 1.0 if kind.higher_is_better else -1.0  # P(better): for steps and seconds, fewer is better
    pairs = {
        (a, b): probability_of_improvement([sign * v for v in values[a]], [sign * v for v in values[b]], reps)
        for a, b in itertools.permutations(groups, 2)
        if groups[a][0].spec.get("env") == groups[b][0].spec.get("env") and min(len(groups[a]), len(groups[b])) >= 2
    }
    return table, pairs, skipped


def score_kind(score: str) -> Score:
    if score not in SCORES:
        raise ValueError(f"unknown score {score!r}; choose one of {', '.join(SCORES)}")
    return SCORES[score]


def load_groups(
    paths: Iterable[str | Path], group_by: Sequence[str] = DEFAULT_GROUP_BY, threshold: float | None = None
) -> tuple[dict[str, list[RunScore]], list[Path]]:
    """The evaluated runs under `paths` grouped (group_runs), their areas under the curve held to the longest
    run's end so that runs stopped early compare with full ones; and the runs never evaluated."""
    scores, skipped = [], []
    for path in find_runs(paths):
        run = load_score(path, threshold)
        if run is None:
            skipped.append(path)
        else:
            scores.append(run)
    horizon = max((run.curve[-1][0] for run in scores), default=0)
    for run in scores:
        run.scores["auc"] = area_under(run.curve, horizon)
    return group_runs(scores, group_by), skipped


def group_curve(runs: Sequence[RunScore], x: str = "step", reps: int = 500) -> list[dict[str, float]]:
    """The group's evaluation curve: at each evaluation step of any of its runs, the IQM of the runs' latest
    evaluations (a run stopped early held at its last one), with a 95% bootstrap band. `x`: "step" or "wall_s"
    (then the runs' steps are placed at the mean wall time of that step)."""
    grid = sorted({point[0] for run in runs for point in run.curve})
    rows = []
    for step in grid:
        latest = [[p for p in run.curve if p[0] <= step] for run in runs]
        values = np.array([points[-1][2] for points in latest if points], np.float64)
        walls = [points[-1][1] for points in latest if points and points[-1][0] == step]
        low, high = _interval(values, iqm, reps, 0) if len(values) > 1 else (math.nan, math.nan)
        position = float(step) if x == "step" else float(np.mean(walls))
        rows.append({"x": position, "iqm": float(iqm(values)), "low": low, "high": high, "runs": len(values)})
    return rows


def format_table(table: Sequence[GroupStats], pairs: Pairs, score: str = "final") -> str:
    """The comparison as text: one line per group, best first, then P(better) per pair of groups on the same env
    (15 at most); groups of one run get no P."""
    kind = score_kind(score)
    width = max([len(row.name) for row in table] + [5])
    lines = [f"score: {kind.label} ({'higher' if kind.higher_is_better else 'lower'} is better)"]
    lines.append(f"{'group':<{width}}  runs  reached  {'mean [95% CI]':>26}  {'IQM [95% CI]':>26}")
    for row in sorted(table, key=lambda row: -row.iqm if kind.higher_is_better else row.iqm):
        mean, middle = with_ci(row.mean, row.mean_ci), with_ci(row.iqm, row.iqm_ci)
        lines.append(f"{row.name:<{width}}  {row.runs:>4}  {row.reached:>7}  {mean:>26}  {middle:>26}")
    shown = [(a, b) for a, b in pairs if a < b][:15]
    lines += [""] if shown else []
    for a, b in shown:
        p, (low, high) = pairs[(a, b)]
        lines.append(f"P({a} better than {b}) = {p:.2f} [{low:.2f}, {high:.2f}]")
    singles = [row.name for row in table if row.runs == 1]
    if singles:
        lines.append(f"(no P for groups of one run: {', '.join(singles)})")
    return "\n".join(lines)


def with_ci(value: float, interval: tuple[float, float]) -> str:
    """`value [low, high]` rounded to the digits the interval justifies: two significant digits of its half-width
    (a half-width of 8,000 rounds to hundreds, of 66 to units, of 0.11 to hundredths); 4 significant digits
    where there is no interval (one run) or it has no width."""
    low, high = interval
    if math.isnan(low):
        return f"{value:.4g} [n/a: 1 run]"
    if high - low <= 0:
        return f"{value:.4g} [{low:.4g}, {high:.4g}]"
    digits = min(6, 1 - math.floor(math.log10((high - low) / 2)))
    shown = [round(number, digits) for number in (value, low, high)]
    text = [f"{number:.{digits}f}" if digits > 0 else f"{number:.0f}" for number in shown]
    return f"{text[0]} [{text[1]}, {text[2]}]"
