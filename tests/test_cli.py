"""The `thrust` command line: train, resume and evaluate, with one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from thrust_app.cli import main as thrust_main


def test_cli_trains_resumes_and_evaluates(tmp_path, capsys):
    run = tmp_path / "cli"
    code = thrust_main(
        [
            "train",
            "a2c",
            "bandit",
            "--timesteps",
            "512",
            "--run-dir",
            str(run),
            "--quiet",
            "--set",
            "learning_rate=0.003",
            "--device",
            "cpu",
        ]
    )
    assert code == 0
    assert "a2c thrust/Bandit-v0: finished after 512 steps" in capsys.readouterr().out
    assert "--set learning_rate=0.003" not in json.loads((run / "config.json").read_text())["command"]  # preset value
    assert thrust_main(["train", "--resume", str(run), "--timesteps", "1024", "--quiet"]) == 0
    assert "finished after 1,024 steps" in capsys.readouterr().out
    assert thrust_main(["eval", str(run), "--episodes", "4"]) == 0
    assert "mean return" in capsys.readouterr().out
    assert thrust_main(["train", "dqn", "pendulum"]) == 2
    assert "dqn needs a Discrete action space" in capsys.readouterr().err


def test_a_solved_run_reports_its_training_time_apart_from_evaluations(tmp_path, capsys):
    """A run that stops when solved says both clocks: the README's solve times are training seconds."""
    argv = ["train", "ppo", "bandit", "--timesteps", "8192", "--stop-at-return", "0.9", "--eval-every", "512"]
    assert thrust_main([*argv, "--run-dir", str(tmp_path / "run"), "--quiet", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "solved", out
    assert f"{summary['solved_at_train_s']:.1f} s of it training, evaluations apart" in out


BANDIT_BUNDLE = Path(__file__).resolve().parents[1] / "export" / "bandit-ppo"


def test_a_closed_pipe_ends_the_command_quietly():
    """`thrust ... | head`: the reader leaving early is not an error (30,000 returns are far more than a pipe holds)."""
    import subprocess
    import sys

    done = subprocess.run(
        f"{sys.executable} -m thrust_app eval {BANDIT_BUNDLE} --episodes 30000 | head -c 10 > /dev/null; "
        "exit ${PIPESTATUS[0]}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_envs_lists_the_cores_and_the_families_with_presets(capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "minatar" else real(name))
    assert thrust_main(["envs"]) == 0
    out = capsys.readouterr().out
    assert "thrust/CartPole-v0" in out and "ALE/Breakout-v5" in out
    assert 'MinAtar/Breakout-v1    (not installed: pip install "thrust_app[minatar]")' in out
    assert "of MuJoCo's, HalfCheetah-v5, Hopper-v5, Walker2d-v5, Swimmer-v5." in out  # what plays in the browser


def test_train_help_names_every_algorithm(capsys):
    import pytest

    from thrust_app.algos import ALGOS

    with pytest.raises(SystemExit):
        thrust_main(["train", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert all(name in help_text for name in ALGOS), f"thrust train --help misses one of {list(ALGOS)}"
