"""Sweeps: an Optuna search over Thrust runs in worker processes, seeds grouped, pruning from
evaluations during training, and a killed sweep continued without losing a finished trial."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from thrust_app.config import ConfigError
from thrust_app.runs.compare import compare
from thrust_app.runs.files import load_checkpoint
from thrust_app.runs.lock import is_locked
from thrust_app.runs.staging import process_alive
from thrust_app.sweeps.launch import sweep
from thrust_app.sweeps.optuna_engine import open_study
from thrust_app.sweeps.spec import SweepSpec, load_sweep
from thrust_app.sweeps.trials import best_trial, trial_states
from thrust_app.training.trainer import train

SMALL = """
name: {name}
algo: ppo
env: bandit
timesteps: {timesteps}
base: {{n_steps: 16}}
search:
  learning_rate: {{type: loguniform, low: 1.0e-6, high: 1.0e-2}}
seeds: 2
trials: 4
pruner: median
pruner_startup_trials: 1
eval_every: 256
eval_episodes: 20
workers: 2
"""


def start_sweep_process(path: Path, runs_root: Path) -> subprocess.Popen:
    """`thrust sweep` in a process group of its own, as a user starts it (the test signals the group)."""
    return subprocess.Popen(
        [sys.executable, "-m", "thrust_app", "sweep", str(path), "--runs-root", str(runs_root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def sweep_file(tmp_path: Path, name: str = "small", timesteps: int = 1024) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(SMALL.format(name=name, timesteps=timesteps))
    return path


@pytest.mark.parametrize(
    "text, message",
    [
        ("name: x\nalgo: ppo\nenv: bandit\ntimesteps: 100\nsearch: {}\nbogus: 1\n", "unknown keys bogus"),
        ("name: x\nalgo: ppo\nenv: bandit\nsearch: {}\n", "missing timesteps"),
        ("name: x\nalgo: ppo\nenv: bandit\ntimesteps: 1000\nsearch: {gamma: {type: normal}}\n", "search.gamma: give a type"),
        ("name: x\nalgo: ppo\nenv: bandit\ntimesteps: 1000\nsearch: {gamma: {type: float, low: 0.9}}\n", "needs high"),
        (
            "name: x\nalgo: ppo\nenv: bandit\ntimesteps: 1000\nsampler: grid\n"
            "search: {gamma: {type: float, low: 0.9, high: 1}}\n",
            "grid sampler needs every search entry to be a choice",
        ),
        (
            "name: x\nalgo: ppo\nenv: bandit\ntimesteps: 1000\nsearch: {lerning_rate: {type: choice, values: [1]}}\n",
            "unknown ppo config key 'lerning_rate'",
        ),
        ("name: x\nalgo: ppo\nenv: bandit\ntimesteps: 1000\nsearch: {}\npruner: pbt\n", "pbt needs the Ray engine"),
        (
            "name: x\nalgo: ppo\nenv: bandit\ntimesteps: 1000\nsearch: {}\npruner: pbt\nengine: ray\nseeds: 2\n",
            "each trial is one seed",
        ),
        ("name: x\nalgo: ppo\nenv: bandit\ntimesteps: 1000\nsearch: {}\nengine: slurm\n", "engine must be one of"),
        ("name: x\nalgo: ppo\nenv: bandit\ntimesteps: 1000\nsearch: {}\nbatch_seeds: 1\n", "batch_seeds must be true or"),
        (
            "name: x\nalgo: ppo\nenv: bandit\ntimesteps: 1000\nsearch: {}\nbatch_seeds: true\npruner: median\n",
            "batch_seeds trains a trial's seeds together in one worker: ppo or a2c, the optuna engine, pruner none",
        ),
        ("name: x\nalgo: dqn\nenv: bandit\ntimesteps: 1000\nsearch: {}\nbatch_seeds: true\n", "ppo or a2c"),
    ],
)
def test_a_bad_sweep_file_is_one_line_before_anything_runs(text, message, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        SweepSpec.from_yaml(path)


def test_a_sweep_runs_its_trials_over_seeds_in_ordinary_run_folders(tmp_path):
    folder = sweep(sweep_file(tmp_path), runs_root=tmp_path / "runs", log=lambda _: None)
    states = trial_states(folder)
    assert states.get("complete", 0) + states.get("pruned", 0) >= 4 and "running" not in states
    complete = sorted(
        path
        for path in folder.glob("trial-*-s0")
        if (path / "summary.json").exists() and json.loads((path / "summary.json").read_text())["status"] == "finished"
    )
    assert complete and all((path.with_name(path.name[:-1] + "1") / "summary.json").exists() for path in complete)
    trial = json.loads((complete[0] / "trial.json").read_text())
    assert trial["sweep"] == "small" and "learning_rate" in trial["params"]
    config = json.loads((complete[0] / "config.json").read_text())
    assert config["config"]["learning_rate"] == pytest.approx(trial["params"]["learning_rate"])
    table, _, _ = compare([folder], reps=200)
    assert any(row.runs == 2 for row in table)  # the two seeds of a trial form one group
    best = best_trial(folder)
    assert best is not None and 0.0 <= best["score"] <= 1.0


def test_batch_seeds_trains_each_trials_seeds_as_one_batch_in_ordinary_run_folders(tmp_path):
    path = tmp_path / "batched.yaml"
    path.write_text(
        "name: batched\nalgo: ppo\nenv: bandit\ntimesteps: 512\nbase: {n_steps: 16}\nseeds: 3\ntrials: 2\n"
        "sampler: grid\nsearch: {learning_rate: {type: choice, values: [0.001, 0.003]}}\nbatch_seeds: true\n"
        "workers: 1\neval_every: 256\neval_episodes: 5\n"
    )
    folder = sweep(path, runs_root=tmp_path / "runs", log=lambda _: None)
    assert trial_states(folder) == {"complete": 2}
    summaries = [json.loads(p.read_text()) for p in sorted(folder.glob("trial-*-s*/summary.json"))]
    assert [(s["seed"], s["status"], s["timesteps"]) for s in summaries] == [(k, "finished", 512) for k in (0, 1, 2)] * 2
    rates = {json.loads((p / "trial.json").read_text())["params"]["learning_rate"] for p in folder.glob("trial-*-s*")}
    assert rates == {0.001, 0.003}
    table, _, _ = compare([folder], reps=200)
    assert sorted(row.runs for row in table) == [3, 3]  # each trial's seeds form one group, as without batching
    # a seed trained in the batch equals its lone run: the first trial's seed 2 against `thrust train` of it
    first = json.loads((folder / "trial-0000-s2" / "config.json").read_text())
    lone = train("ppo", "bandit", timesteps=512, seed=2, eval_every=256, eval_episodes=5, run_dir=tmp_path / "lone",
                 overrides=first["config"], progress=False, log=lambda _: None)  # fmt: skip
    runs = (summaries[2]["run_dir"], lone["run_dir"])
    batched, alone = (load_checkpoint(Path(run) / "last.pt")["algo"]["net"] for run in runs)
    assert all(torch.allclose(batched[name], value, atol=1e-5) for name, value in alone.items())


def test_a_killed_sweep_continues_and_keeps_its_finished_trials(tmp_path):
    path = sweep_file(tmp_path, name="killed", timesteps=8192)
    folder = tmp_path / "runs" / "killed"
    process = start_sweep_process(path, tmp_path / "runs")
    deadline = time.time() + 240
    finished: dict[Path, float] = {}
    while time.time() < deadline and not finished:
        finished = {
            p: p.stat().st_mtime
            for p in folder.glob("trial-*/summary.json")
            if json.loads(p.read_text())["status"] in ("finished", "pruned")
        }
        time.sleep(0.2)
    assert finished, "no trial finished in time"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)
    sweep(resume_folder=folder, log=lambda _: None)
    states = trial_states(folder)
    assert states.get("complete", 0) + states.get("pruned", 0) >= 4 and "running" not in states
    assert all(p.stat().st_mtime == mtime for p, mtime in finished.items())  # finished trials untouched


def test_the_median_pruner_stops_trials_that_evaluate_worse(tmp_path):
    path = tmp_path / "prune.yaml"
    path.write_text(
        SMALL.format(name="prune", timesteps=2048)
        .replace("seeds: 2", "seeds: 1")
        .replace("trials: 4", "trials: 8")
        .replace("workers: 2", "workers: 1")
        .replace("pruner_startup_trials: 1", "pruner_startup_trials: 2")
    )
    folder = sweep(path, runs_root=tmp_path / "runs", log=lambda _: None)
    assert trial_states(folder).get("pruned", 0) >= 1
    pruned = [
        json.loads(p.read_text())
        for p in folder.glob("trial-*/summary.json")
        if json.loads(p.read_text())["status"] == "pruned"
    ]
    assert pruned and all(summary["timesteps"] < 2048 for summary in pruned)


def test_ctrl_c_interrupts_trials_that_resume_continues_in_their_folders(tmp_path):
    path = tmp_path / "ctrlc.yaml"
    path.write_text(
        SMALL.format(name="ctrlc", timesteps=40_000)
        .replace("env: bandit", "env: cartpole")
        .replace("seeds: 2", "seeds: 1")
        .replace("pruner: median", "pruner: none")
    )
    folder = tmp_path / "runs" / "ctrlc"
    process = start_sweep_process(path, tmp_path / "runs")
    deadline = time.time() + 120
    while time.time() < deadline and not list(folder.glob("trial-*/last.pt")):
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGINT)
    process.wait(60)
    statuses = {p.parent.name: json.loads(p.read_text())["status"] for p in folder.glob("trial-*/summary.json")}
    assert "interrupted" in statuses.values(), statuses
    before = {p.name for p in folder.glob("trial-*")}
    sweep(resume_folder=folder, log=lambda _: None)
    for name, status in statuses.items():  # each interrupted run went on, in its own folder, to its budget
        summary = json.loads((folder / name / "summary.json").read_text())
        assert status != "interrupted" or (summary["status"] == "finished" and summary["timesteps"] >= 40_000)
    assert before <= {p.name for p in folder.glob("trial-*")}
    assert trial_states(folder).get("complete", 0) >= 4


def test_workers_start_no_trial_beyond_the_number(tmp_path):
    """Two workers, one trial (N seeds of one config): one trial runs, not one per worker."""
    path = tmp_path / "one.yaml"
    path.write_text("name: one\nalgo: ppo\nenv: bandit\ntimesteps: 1024\nsearch: {}\ntrials: 1\nseeds: 2\nworkers: 2\n")
    folder = sweep(path, runs_root=tmp_path / "runs", log=lambda _: None)
    assert trial_states(folder) == {"complete": 1}
    assert sorted(p.name for p in folder.glob("trial-*")) == ["trial-0000-s0", "trial-0000-s1"]


@pytest.mark.parametrize("path", sorted(Path(__file__).parents[2].glob("examples/sweeps/*.yaml")), ids=lambda p: p.name)
def test_every_example_sweep_file_is_valid(path):
    spec = SweepSpec.from_yaml(path)
    assert spec.search and spec.name == path.stem.replace("_", "-")


def test_a_solve_time_metric_counts_a_run_that_never_solves_as_twice_its_training_time():
    from thrust_app.sweeps.trial_runs import score

    spec = SweepSpec(name="t", algo="ppo", env="bandit", timesteps=1000, search={}, metric="solved_at_train_s")
    assert score({"solved_at_train_s": 1.5, "train_s": 9.0}, spec) == 1.5
    assert score({"solved_at_train_s": None, "train_s": 9.0}, spec) == 18.0


def long_sweep(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A sweep of CartPole runs long enough to be caught running, two worker processes."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        SMALL.format(name=name, timesteps=30_000)
        .replace("env: bandit", "env: cartpole")
        .replace("seeds: 2", "seeds: 1")
        .replace("pruner: median", "pruner: none")
    )
    return path, tmp_path / "runs" / name


def wait_for_checkpoints(folder: Path, count: int, seconds: float = 120) -> list[Path]:
    deadline = time.time() + seconds
    while time.time() < deadline:
        written = sorted(folder.glob("trial-*/last.pt"))
        if len(written) >= count:
            return written
        time.sleep(0.2)
    raise AssertionError(f"fewer than {count} trials checkpointed in time")


def test_resuming_a_running_sweep_is_refused_naming_its_driver_and_changes_nothing(tmp_path):
    path, folder = long_sweep(tmp_path, "live")
    process = start_sweep_process(path, tmp_path / "runs")
    try:
        wait_for_checkpoints(folder, 1)
        before = {p: p.stat().st_mtime for p in folder.glob("trial-*/config.json")}
        with pytest.raises(ValueError, match=rf"being run by `thrust sweep` process {process.pid} \(one driver per sweep"):
            sweep(resume_folder=folder, log=lambda _: None)
        assert all(p.exists() and p.stat().st_mtime == mtime for p, mtime in before.items())  # no run touched
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)


def test_a_killed_driver_takes_its_workers_with_it_and_resume_finishes_every_trial(tmp_path):
    """kill -9 of the driver alone: its forked workers get SIGTERM from the kernel, checkpoint and stop;
    `--resume` is then accepted and takes every trial to its budget."""
    path, folder = long_sweep(tmp_path, "orphans")
    process = start_sweep_process(path, tmp_path / "runs")
    wait_for_checkpoints(folder, 2)
    writers = {int((p.parent / ".lock").read_text()) for p in folder.glob("trial-*/last.pt")}
    assert process.pid in writers and len(writers) == 2  # the driver is worker 0; one forked worker
    os.kill(process.pid, signal.SIGKILL)  # the driver only, not its process group
    process.wait(30)
    deadline = time.time() + 60
    # gone: no worker process left, and the sweep's lock released (a dying process's threads may hold its
    # files a moment after its main thread shows as ended)
    while time.time() < deadline and (any(process_alive(str(pid)) for pid in writers) or is_locked(folder)):
        time.sleep(0.2)
    assert not any(process_alive(str(pid)) for pid in writers) and not is_locked(folder), "a worker outlived its driver"
    sweep(resume_folder=folder, log=lambda _: None)
    assert trial_states(folder).get("complete", 0) >= 4
    records = {path.parent.name: json.loads(path.read_text()) for path in folder.glob("trial-*/summary.json")}
    unfinished = {
        name: (r["status"], r["timesteps"])
        for name, r in records.items()
        if r["status"] != "finished" or r["timesteps"] < 30_000
    }
    assert not unfinished, (unfinished, study_trials(folder))  # the study's record says which trial went where


def test_a_trial_failed_by_an_escaped_interruption_continues_in_its_folders_on_resume(tmp_path):
    """A worker's second SIGTERM raises KeyboardInterrupt out of its run, and Optuna records the trial as failed,
    with neither an error nor the `interrupted` mark (what the killed-driver test above once met under load):
    `--resume` queues it again under its own folders, once; a trial that failed with an error of its own stays
    failed."""
    from optuna.trial import TrialState

    from thrust_app.sweeps.optuna_engine import requeue_interrupted, suggest

    path, folder = long_sweep(tmp_path, "escaped")
    spec = SweepSpec.from_yaml(path)
    folder.mkdir(parents=True)
    study = open_study(folder, spec)
    for attrs in ({"pid": 1}, {"pid": 2, "error": "its settings do not fit"}):
        trial = study.ask()
        for name, space in spec.search.items():
            suggest(trial, name, space)
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        study.tell(trial, state=TrialState.FAIL)
    assert requeue_interrupted(folder, spec) == 1
    assert requeue_interrupted(folder, spec) == 0  # already queued: not twice
    waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    assert [trial.user_attrs["continues"] for trial in waiting] == [0]
    assert waiting[0].system_attrs["fixed_params"] == study.trials[0].params  # its own settings again


def study_trials(folder: Path) -> list[tuple[int, str, dict]]:
    """(number, state, user attributes) of every trial in the sweep's Optuna study: what a failure message needs."""
    study = open_study(folder, load_sweep(folder))
    return [(trial.number, trial.state.name, dict(trial.user_attrs)) for trial in study.get_trials(deepcopy=False)]


GRID = """
name: {name}
algo: ppo
env: cartpole
timesteps: 20000
base: {{n_steps: 32}}
search:
  learning_rate: {{type: choice, values: [0.0001, 0.0003, 0.001, 0.003]}}
sampler: grid
trials: 4
seeds: 1
pruner: none
eval_every: 5000
eval_episodes: 5
workers: 2
"""


def comparable_records(run: Path) -> list[dict]:
    """A run's records, timing fields aside."""
    from thrust_app.runs.files import read_jsonl

    return [{k: v for k, v in r.items() if k not in ("wall_s", "train_s", "sps")} for r in read_jsonl(run / "metrics.jsonl")]


@pytest.mark.parametrize("seed", [0, 1])
def test_a_sweep_killed_at_random_points_resumes_to_the_records_of_one_never_killed(tmp_path, seed):
    """SIGKILL a worker, then the driver, at random points; `--resume` then completes every trial, and each
    trial's run has the records (timing fields aside) of the same settings trained without interruption."""
    rng = random.Random(seed)
    killed_file = tmp_path / "killed.yaml"
    killed_file.write_text(GRID.format(name="killed"))
    process = start_sweep_process(killed_file, tmp_path / "runs")
    folder = tmp_path / "runs" / "killed"
    deadline = time.time() + 120
    workers: set[int] = set()
    while time.time() < deadline and not workers:  # a forked worker: the writer of a trial folder, not the driver
        workers = {int(lock.read_text()) for lock in folder.glob("trial-*/.lock") if lock.read_text().strip()} - {process.pid}
        time.sleep(0.1)
    assert workers, "no forked worker started a trial in time"
    time.sleep(rng.uniform(0.0, 2.0))
    for pid in workers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    time.sleep(rng.uniform(0.0, 2.0))
    os.kill(process.pid, signal.SIGKILL)
    process.wait(30)
    deadline = time.time() + 60
    while time.time() < deadline and (any(process_alive(str(pid)) for pid in workers) or is_locked(folder)):
        time.sleep(0.2)
    sweep(resume_folder=folder, log=lambda _: None)
    assert trial_states(folder) == {"complete": 4}
    runs = sorted(folder.glob("trial-*-s0"))
    assert len(runs) == 4
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        assert summary["status"] == "finished" and summary["timesteps"] >= 20_000, (run, summary)
        params = json.loads((run / "trial.json").read_text())["params"]
        whole = tmp_path / "whole" / run.name
        train(
            "ppo",
            "cartpole",
            timesteps=20_000,
            seed=0,
            run_dir=whole,
            eval_every=5000,
            eval_episodes=5,
            overrides={"n_steps": 32, **params},
            progress=False,
            log=lambda _: None,
        )
        assert comparable_records(run) == comparable_records(whole), run.name
