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
