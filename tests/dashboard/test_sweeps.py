"""Sweeps from the dashboard: launch (a search, or N seeds of one config), watch the trials, Stop and
Resume, and the Sweeps tab showing them; bad sweep files are refused in one line before anything runs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from thrust_app.dashboard import sweeps

APP = str(Path(__file__).resolve().parents[2] / "thrust_app" / "dashboard" / "app.py")
SEARCH = """name: {name}
algo: ppo
env: {env}
timesteps: {timesteps}
base: {{n_envs: 4, n_steps: 32, batch_size: 64}}
search:
  learning_rate: {{type: loguniform, low: 1.0e-4, high: 3.0e-3}}
trials: 2
seeds: 1
eval_every: 512
eval_episodes: 5
"""


def wait_until(condition, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.3)
    raise AssertionError(f"not true after {timeout} s")


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    runs = tmp_path / "runs"
    monkeypatch.setenv("THRUST_RUNS_DIR", str(runs))
    yield runs
    for info in sweeps.list_sweeps(runs):  # leave no sweep process behind
        if sweeps.is_running(info.path):
            sweeps.stop_sweep(info.path)
            wait_until(lambda path=info.path: not sweeps.is_running(path), 60)


def test_a_search_runs_to_the_end_and_is_read_back(root):
    folder = sweeps.start_sweep(SEARCH.format(name="lr", env="bandit", timesteps=1024), workers=1, root=root)
    wait_until(lambda: not sweeps.is_running(folder), 120)
    info = sweeps.read_sweep(folder)
    assert [t.state for t in info.trials] == ["complete", "complete"], (folder / sweeps.LOG_FILE).read_text()
    assert all(len(t.runs) == 1 and (t.runs[0] / "summary.json").exists() for t in info.trials)
    assert info.best() is not None and set(info.best().params) == {"learning_rate"}
    assert not info.running


@pytest.mark.parametrize("batch", [False, True], ids=["processes", "one-batch"])
def test_n_seeds_of_one_config_is_one_trial_over_the_seeds(root, batch):
    text = sweeps.seeds_yaml("ppo", "bandit", 1024, 3, {"n_steps": 32}, f"bandit-seeds-{batch}", batch)
    assert ("batch_seeds: true" in text) is batch
    folder = sweeps.start_sweep(text, workers=1, root=root)
    wait_until(lambda: not sweeps.is_running(folder), 120)
    (trial,) = sweeps.read_sweep(folder).trials
    assert trial.state == "complete" and [run.name[-2:] for run in trial.runs] == ["s0", "s1", "s2"]
    assert all(json.loads((run / "summary.json").read_text())["status"] == "finished" for run in trial.runs)


@pytest.mark.parametrize(
    "text, words",
    [
        ("name: [unclosed", "not valid YAML"),
        ("algo: ppo\nenv: bandit\n", "needs a name"),
        ("name: x\nalgo: ppo\nenv: bandit\ntimesteps: 100\nsearch: {}\nbogus: 1\n", "unknown keys bogus"),
    ],
)
def test_bad_sweeps_are_refused_in_one_line_and_leave_nothing(root, text, words):
    with pytest.raises(ValueError, match=words) as raised:
        sweeps.start_sweep(text, root=root)
    assert "\n" not in str(raised.value)
    assert not root.exists() or not any(root.iterdir())


def test_stop_then_resume_finishes_every_trial(root):
    folder = sweeps.start_sweep(SEARCH.format(name="long", env="cartpole", timesteps=30_000), workers=1, root=root)
    wait_until(lambda: bool(list(folder.glob("trial-*/last.pt"))), 120)
    sweeps.stop_sweep(folder)
    wait_until(lambda: not sweeps.is_running(folder), 60)
    stopped = sweeps.read_sweep(folder)
    assert not stopped.running and sum(t.state == "complete" for t in stopped.trials) < 2
    # issue #40: the interrupted trial showed "fail", and the sweep the same status as a finished one
    assert "interrupted" in [t.state for t in stopped.trials] and "fail" not in [t.state for t in stopped.trials]
    assert stopped.status == "stopped"
    with pytest.raises(ValueError, match="not running"):
        sweeps.stop_sweep(folder)
    sweeps.resume_sweep(folder)
    wait_until(lambda: not sweeps.is_running(folder), 240)
    resumed = sweeps.read_sweep(folder)
    # the interrupted trial went on in its own folder, and no worker started a trial beyond the two
    log = (folder / sweeps.LOG_FILE).read_text()
    assert [t.state for t in resumed.trials] == ["complete", "complete"] and resumed.status == "complete", log
    assert all((run / "summary.json").exists() for t in resumed.trials for run in t.runs)


def test_the_sweeps_tab_shows_a_sweep_its_best_trial_and_the_seed_statistics(root):
    text = sweeps.seeds_yaml("ppo", "bandit", 1024, 2, {"n_steps": 32}, "tab-seeds")
    folder = sweeps.start_sweep(text, workers=1, root=root)
    wait_until(lambda: not sweeps.is_running(folder), 120)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    shown = " ".join(e.label for e in at.expander)
    assert "tab-seeds — complete — 1 complete" in shown  # a finished sweep was labelled "stopped"
    assert any("Best so far" in m.value for m in at.markdown)
    assert any("Over seeds" in m.value for m in at.markdown)
    assert any("IQM" in str(df.value.columns.tolist()) for df in at.dataframe)


@pytest.mark.xdist_group("ray")  # one local Ray at a time under `pytest -n 2`
def test_a_ray_sweep_launched_here_is_read_from_its_ledger(root):
    text = SEARCH.format(name="on-ray", env="bandit", timesteps=1024) + "engine: ray\n"
    folder = sweeps.start_sweep(text, root=root)
    wait_until(lambda: not sweeps.is_running(folder), 240)
    info = sweeps.read_sweep(folder)
    assert [t.state for t in info.trials] == ["complete", "complete"], (folder / sweeps.LOG_FILE).read_text()[-2000:]
    assert all(len(t.runs) == 1 and (t.runs[0] / "summary.json").exists() for t in info.trials)
    assert info.best() is not None and info.best().score is not None


def test_a_search_shows_its_optimisation_history_and_parameter_importance(root):
    """Issue #40: a sweep had no optimisation history or parameter-importance view."""
    from thrust_app.sweeps.trials import param_importance

    text = SEARCH.format(name="importance", env="bandit", timesteps=512).replace("trials: 2", "trials: 4")
    text = text.replace("search:\n", "search:\n  gamma: {type: float, low: 0.9, high: 0.99}\n")
    folder = sweeps.start_sweep(text, workers=2, root=root)
    wait_until(lambda: not sweeps.is_running(folder), 240)
    importance = param_importance(folder)
    assert set(importance) == {"learning_rate", "gamma"} and sum(importance.values()) == pytest.approx(1.0)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    titles = [m.value for m in at.markdown]
    assert "**Optimisation history**" in titles and any(t.startswith("**Parameter importance**") for t in titles)


def test_the_seeds_of_one_trial_train_side_by_side_when_workers_allow(root):
    """Issue #40: the seeds of an N-seeds sweep ran one after the other on one worker."""
    text = sweeps.seeds_yaml("ppo", "cartpole", 8192, 2, {"n_steps": 32, "n_envs": 4}, "side-by-side")
    folder = sweeps.start_sweep(text, workers=2, root=root)
    wait_until(lambda: not sweeps.is_running(folder), 180)
    (trial,) = sweeps.read_sweep(folder).trials
    assert trial.state == "complete" and len(trial.runs) == 2
    starts = [(run / "config.json").stat().st_mtime for run in trial.runs]
    ends = [(run / "summary.json").stat().st_mtime for run in trial.runs]
    assert max(starts) < min(ends), (starts, ends)  # both were training at once
    assert "x 2 seed(s) at once" in (folder / sweeps.LOG_FILE).read_text()
