"""Comparing runs: IQM, bootstrap intervals and the probability of improvement as rliable defines them,
groups of seeds formed from real runs, and `thrust compare` printing the table."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from thrust_app.cli import main as thrust_main
from thrust_app.runs.compare import (
    compare,
    format_table,
    group_curve,
    group_stats,
    iqm,
    load_groups,
    probability_of_improvement,
    with_ci,
)
from thrust_app.training.trainer import train


def test_iqm_is_the_mean_of_the_middle_half():
    assert iqm(np.array([1.0, 2.0, 3.0, 4.0, 100.0])) == pytest.approx(3.0)  # one score trimmed from each end
    assert iqm(np.arange(8.0)) == pytest.approx(np.mean([2, 3, 4, 5]))


def test_probability_of_improvement_counts_wins_and_half_ties():
    assert probability_of_improvement([3, 4], [1, 2])[0] == 1.0
    assert probability_of_improvement([1, 2], [1, 2])[0] == 0.5  # 1 win, 1 loss, 2 ties of 4 pairs
    point, (low, high) = probability_of_improvement([5, 6, 7, 1], [2, 3, 4, 2], reps=500)
    assert point == pytest.approx(12 / 16) and 0 <= low <= point <= high <= 1


def test_intervals_bracket_the_estimate_and_one_run_has_none():
    stats = group_stats("g", [400.0, 450.0, 480.0, 300.0, 500.0], reps=1000)
    assert stats.mean_ci[0] <= stats.mean <= stats.mean_ci[1] and stats.iqm_ci[0] <= stats.iqm <= stats.iqm_ci[1]
    assert stats.mean == pytest.approx(426.0)
    single = group_stats("one", [7.0])
    assert single.mean == 7.0 and math.isnan(single.iqm_ci[0])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for lr in ("3e-3", "1e-5"):
        for seed in (0, 1, 2):
            train(
                "a2c",
                "bandit",
                timesteps=800,
                seed=seed,
                device="cpu",
                run_dir=root / f"lr{lr}-s{seed}",
                eval_episodes=20,
                overrides={"learning_rate": lr},
                progress=False,
                log=lambda _: None,
            )
    return root


def test_seeds_of_one_config_form_a_group_named_by_what_differs(runs):
    table, pairs, skipped = compare([runs], reps=500)
    assert skipped == [] and sorted(row.name for row in table) == [
        "a2c thrust/Bandit-v0 learning_rate=0.003",
        "a2c thrust/Bandit-v0 learning_rate=1e-05",
    ]
    assert all(row.runs == 3 for row in table)
    good, bad = "a2c thrust/Bandit-v0 learning_rate=0.003", "a2c thrust/Bandit-v0 learning_rate=1e-05"
    assert pairs[(good, bad)][0] + pairs[(bad, good)][0] == pytest.approx(1.0)
    assert pairs[(good, bad)][0] > 0.5  # 800 steps at 3e-3 learn the bandit; at 1e-5 they barely move
    by_seed, _, _ = compare([runs], group_by=("seed",), reps=200)
    assert sorted(row.name for row in by_seed) == ["seed=0", "seed=1", "seed=2"]


def test_thrust_compare_prints_the_table(runs, capsys):
    assert thrust_main(["compare", str(runs), "--reps", "300"]) == 0
    out = capsys.readouterr().out
    assert "IQM [95% CI]" in out and "P(a2c thrust/Bandit-v0 learning_rate=0.003 better than " in out
    assert thrust_main(["compare", str(runs / "nowhere")]) == 2


def fake_run(root, name, evals, *, seed=0, preset="default", threshold=475.0, budget=5000, lr=0.001):
    """A run folder as training leaves it: config, evaluations (step, wall seconds, mean), summary."""
    folder = root / name
    folder.mkdir(parents=True)
    config = {"algo": "ppo", "env": "CartPole-v1", "seed": seed, "preset": preset, "timesteps": budget, "config": {"lr": lr}}
    (folder / "config.json").write_text(json.dumps(config))
    lines = [{"kind": "eval", "step": step, "wall_s": wall, "eval_mean": mean} for step, wall, mean in evals]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = {"solve_threshold": threshold, "timesteps": evals[-1][0], "wall_s": evals[-1][1]}
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def test_early_stopped_runs_are_scored_by_steps_seconds_and_area(tmp_path):
    fast = [fake_run(tmp_path, f"fast{s}", [(1000, 2.0, 100.0), (2000, 4.0, 480.0)], seed=s, lr=0.01) for s in range(3)]
    curve = [(1000, 2.0, 50.0), (3000, 6.0, 300.0), (5000, 9.0, 490.0)]
    slow = [fake_run(tmp_path, f"slow{s}", curve, seed=s) for s in range(2)]
    never = fake_run(tmp_path, "never", [(1000, 2.0, 10.0), (5000, 9.0, 20.0)], seed=7, lr=0.1)
    finals, pairs, _ = compare([tmp_path], reps=300)
    by_name = {row.name: row for row in finals}
    assert set(by_name) == {"ppo CartPole-v1 lr=0.01", "ppo CartPole-v1 lr=0.001", "ppo CartPole-v1 lr=0.1"}
    assert by_name["ppo CartPole-v1 lr=0.001"].iqm == 490.0  # the last evaluation favours the slow group
    steps, pairs, _ = compare([tmp_path], reps=300, score="steps")
    by_name = {row.name: row for row in steps}
    assert by_name["ppo CartPole-v1 lr=0.01"].iqm == 2000 and by_name["ppo CartPole-v1 lr=0.001"].iqm == 5000
    never_reached = by_name["ppo CartPole-v1 lr=0.1"]
    assert never_reached.iqm == 5000 and never_reached.reached == 0  # counted at its end
    # P(better) with fewer steps better; no P with the group of one run
    assert pairs[("ppo CartPole-v1 lr=0.01", "ppo CartPole-v1 lr=0.001")][0] == 1.0
    assert not [pair for pair in pairs if "ppo CartPole-v1 lr=0.1" in pair]
    seconds, _, _ = compare([tmp_path], reps=300, score="seconds", threshold=400)
    assert {row.name: row.iqm for row in seconds}["ppo CartPole-v1 lr=0.001"] == 9.0
    area, _, _ = compare([tmp_path], reps=300, score="auc")
    held = (0.5 * (100 + 480) * 1000 + 480 * 3000) / 4000  # the fast runs held at 480 to the longest run's 5,000 steps
    assert {row.name: row.iqm for row in area}["ppo CartPole-v1 lr=0.01"] == pytest.approx(held)
    assert fast and slow and never
    with pytest.raises(ValueError, match="unknown score 'best'; choose one of final, steps, seconds, auc"):
        compare([tmp_path], score="best")


def test_presets_and_budgets_that_differ_make_separate_groups(tmp_path):
    for seed in range(2):
        fake_run(tmp_path, f"fast{seed}", [(1000, 1.0, 480.0)], seed=seed, preset="fast")
    fake_run(tmp_path, "default0", [(1000, 1.0, 480.0)], preset="default")
    fake_run(tmp_path, "long0", [(1000, 1.0, 480.0)], preset="default", budget=9000)
    table, pairs, _ = compare([tmp_path], reps=200)
    assert sorted(row.name for row in table) == [
        "ppo CartPole-v1 preset=default timesteps=5000",
        "ppo CartPole-v1 preset=default timesteps=9000",
        "ppo CartPole-v1 preset=fast timesteps=5000",
    ]
    assert pairs == {}  # every other group has one run
    assert "(no P for groups of one run: " in format_table(table, pairs)


def test_numbers_carry_the_digits_their_interval_justifies():
    assert with_ci(20309.4, (14336.0, 30208.0)) == "20300 [14300, 30200]"
    assert with_ci(456.03, (367.2, 500.0)) == "456 [367, 500]"
    assert with_ci(0.7312, (0.61, 0.83)) == "0.73 [0.61, 0.83]"
    assert with_ci(7.0, (math.nan, math.nan)) == "7 [n/a: 1 run]"


def test_group_curves_hold_stopped_runs_and_the_plot_is_written(tmp_path, capsys):
    fake_run(tmp_path, "a", [(1000, 1.0, 100.0), (2000, 2.0, 480.0)])
    fake_run(tmp_path, "b", [(1000, 1.0, 200.0), (2000, 2.0, 300.0), (3000, 3.0, 490.0)], seed=1)
    groups, _ = load_groups([tmp_path])
    (runs,) = groups.values()
    rows = group_curve(runs)
    assert [row["x"] for row in rows] == [1000, 2000, 3000]
    assert rows[-1]["iqm"] == pytest.approx((480 + 490) / 2) and rows[-1]["runs"] == 2  # run a held at 480
    assert all(row["low"] <= row["iqm"] <= row["high"] for row in rows)
    out = tmp_path / "figure.png"
    assert thrust_main(["compare", str(tmp_path), "--score", "steps", "--plot", str(out), "--reps", "200"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 20_000
    assert "score: env steps to the threshold (lower is better)" in capsys.readouterr().out
