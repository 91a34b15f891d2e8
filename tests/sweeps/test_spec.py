"""A sweep file is checked whole before anything is written: every key's type, the name as one folder,
the search space's bounds, the settings at both ends of the space as a run builds them; and a sweep
whose trials keep failing stops with one line naming the first failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from thrust_app.config import ConfigError
from thrust_app.sweeps import optuna_engine
from thrust_app.sweeps.launch import sweep

BASE = "name: {name}\nalgo: ppo\nenv: bandit\ntimesteps: {timesteps}\nbase: {{n_steps: 16}}\n"


def write(tmp_path: Path, text: str, name: str = "s", timesteps: str = "1024") -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(BASE.format(name=name, timesteps=timesteps) + text)
    return path


@pytest.mark.parametrize(
    ("text", "fields", "message"),
    [
        ("search: {}\neval_every: 0\n", {}, "eval_every must be >= 1, got 0"),
        ("search: {}\neval_episodes: 0\n", {}, "eval_episodes must be >= 1"),
        ("search: {gamma: {type: float, low: 0.99, high: 0.9}}\n", {}, r"search.gamma: low \(0.99\) is above high \(0.9\)"),
        ("search: {gamma: {type: choice, values: []}}\n", {}, "search.gamma: values must be a non-empty list"),
        ("search: {learning_rate: {type: loguniform, low: 0, high: 0.1}}\n", {}, "a log scale needs low > 0"),
        ("search: {gamma: {type: float, low: 0.9, high: 1.5}}\n", {}, r"gamma must be in \[0, 1\], got 1.5"),
        ("search: {gamma: {type: float, low: a, high: 1}}\n", {}, "low and high must be numbers"),
        ("search: {}\n", {"timesteps": "abc"}, "timesteps must be a whole number, got 'abc'"),
        ("search: {}\nseeds: 1.5\n", {}, "seeds must be a whole number, got 1.5"),
        ("search: []\n", {}, "search must be a mapping"),
        ("search: {}\n", {"name": "../../escape"}, "name must be one folder name"),
        ("search: {}\n", {"name": "/tmp/anywhere"}, "name must be one folder name"),
        ("search: {}\n", {"name": "''"}, "name must be one folder name"),
    ],
)
def test_a_bad_sweep_file_is_one_line_naming_the_file_and_nothing_is_written(tmp_path, text, fields, message):
    path = write(tmp_path, text, **fields)
    runs = tmp_path / "runs"
    with pytest.raises(ConfigError, match=message) as refused:
        sweep(path, runs_root=runs, log=lambda _: None)
    assert str(path) in str(refused.value) and "\n" not in str(refused.value)
    assert not runs.exists() and not (tmp_path / "escape").exists()


def test_a_sweep_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_bytes(BASE.format(name="s", timesteps=1024).encode() + b"search: {}\n# \xff\xfe\n")
    with pytest.raises(ConfigError, match=r"sweep.yaml: not UTF-8 text \(byte \d+\); save the sweep file as UTF-8"):
        sweep(path, runs_root=tmp_path / "runs", log=lambda _: None)


def test_trials_that_keep_failing_stop_the_sweep_naming_the_first_error(tmp_path, monkeypatch):
    """A failure no up-front check can see (here: every run refuses its settings) ends the sweep after
    MAX_CONSECUTIVE_FAILURES trials instead of failing trial after trial without end."""
    calls = []

    def refuse(folder, spec, number, index, params, hook, start=None):
        calls.append(number)
        raise ConfigError(f"refused number {number}")

    monkeypatch.setattr(optuna_engine, "run_seed", refuse)
    path = write(tmp_path, "search: {gamma: {type: float, low: 0.9, high: 0.99}}\ntrials: 50\nworkers: 1\n")
    with pytest.raises(optuna_engine.TooManyFailures, match=r"5 trials in a row failed.*trial 0: .*refused number 0"):
        sweep(path, runs_root=tmp_path / "runs", log=lambda _: None)
    assert calls == list(range(optuna_engine.MAX_CONSECUTIVE_FAILURES))
