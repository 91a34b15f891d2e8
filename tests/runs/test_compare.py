"""Comparing runs: IQM, bootstrap intervals and the probability of improvement as rliable defines them,
groups of seeds formed from real runs, and `thrust compare` printing the table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from thrust_app.cli import main as thrust_main
from thrust_app.runs.compare import compare, group_stats, iqm, probability_of_improvement
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
    assert "IQM [95% CI]" in out and "P(a2c thrust/Bandit-v0 learning_rate=0.003 > " in out
    assert thrust_main(["compare", str(runs / "nowhere")]) == 2
