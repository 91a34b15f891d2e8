"""The examples run as their docstrings say, and show what they claim."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_own_env_with_masks_trains_exports_and_plays_the_bundle():
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "own_env_with_masks.py")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    scores = {
        key: float(value)
        for key, value in re.findall(r"(random legal moves|PPO after [\d,]+ steps|onnxruntime): (-?[\d.]+)", done.stdout)
    }
    random_play = scores.pop("random legal moves")
    assert "('action_mask', 'bool', ['batch', 6])" in done.stdout
    assert all(score >= random_play + 8 for score in scores.values()), done.stdout


def test_own_env_with_memory_needs_the_memory_and_the_bundle_carries_it():
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "own_env_with_memory.py")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    scores = dict(re.findall(r"(PPO without memory|recurrent PPO after [\d,]+ steps|onnxruntime): ([\d.]+)", done.stdout))
    assert float(scores.pop("PPO without memory")) <= 0.45, done.stdout  # guessing one lamp of four: 0.25
    assert len(scores) == 2 and all(float(score) >= 0.9 for score in scores.values()), done.stdout
    assert "('state', ['batch', 64])" in done.stdout and "('next_state', ['batch', 64])" in done.stdout


def test_python_api_example_trains_a_wrapped_env_keeps_the_best_and_round_trips():
    done = subprocess.run([sys.executable, str(EXAMPLES / "python_api.py")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "env instance/CartPole.TimeAwareObservation-" in done.stdout and "observations (5,)" in done.stdout
    best = float(re.search(r"best evaluation ([\d.]+)", done.stdout).group(1))
    last, kept = map(float, re.search(r"last ([\d.]+), best ([\d.]+)", done.stdout).groups())
    # StopAtReturn(475) ended it; best.pt scores what it scored
    assert best >= 475 and kept == best and last <= best, done.stdout
    assert "equal predict's on 200 observations: True" in done.stdout
    assert Path(re.search(r"curve: (\S+)", done.stdout).group(1)).stat().st_size > 1000
