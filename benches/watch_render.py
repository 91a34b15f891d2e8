"""Seconds to play, render and encode one 500-step CartPole episode as the dashboard's Watch tab does.

    python benches/watch_render.py [--rounds 5]

Prints the median and the spread of the rounds for mp4 and webm, alternating (A B A B).
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from thrust_app.interop.video import record_episode


def balance(obs: np.ndarray) -> np.ndarray:
    """A hand-written CartPole controller that keeps the pole up for all 500 steps."""
    return np.array([int(obs[0][2] + 0.5 * obs[0][3] > 0)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    seconds: dict[str, list[float]] = {"mp4": [], "webm": []}
    for _ in range(args.rounds):
        for video_format in seconds:
            recording = record_episode(balance, "cartpole", seed=0, video_format=video_format)
            assert recording.steps == 500
            seconds[video_format].append(recording.seconds)
    for video_format, values in seconds.items():
        print(
            f"{video_format}: 500-step CartPole episode in {statistics.median(values):.2f} s "
            f"(rounds {min(values):.2f}-{max(values):.2f} s)"
        )


if __name__ == "__main__":
    main()
