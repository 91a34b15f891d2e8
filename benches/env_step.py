"""Env-steps per second for CartPole: Thrust's core, Thrust's batched env at several N, gymnasium.

Run: `python benches/env_step.py [--seconds S]`. Each row steps with random actions for about S
seconds (after a short warm-up) and reports env-steps/s; rows alternate in rounds and the median
round is kept, since this host's speed drifts within seconds.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch

from thrust_app.envs.batched import make_batched
from thrust_app.envs.core import make_core

torch.set_num_threads(1)


def core_single() -> Callable[[int], int]:
    env = make_core("cartpole")
    env.reset(seed=0)
    rng = random.Random(0)

    def run(n: int) -> int:
        for _ in range(n):
            r = env.step(rng.randrange(2))
            if r.terminated or r.truncated:
                env.reset()
        return n

    return run


def batched(num_envs: int, backend: str) -> Callable[[int], int]:
    env = make_batched("cartpole", num_envs, seed=0, backend=backend)
    env.reset()
    if backend == "torch":
        gen = torch.Generator().manual_seed(0)
        draw = lambda: torch.randint(0, 2, (num_envs,), generator=gen)  # noqa: E731
    else:
        rng = np.random.default_rng(0)
        draw = lambda: rng.integers(0, 2, num_envs)  # noqa: E731

    def run(n: int) -> int:
        calls = max(1, n // num_envs)
        for _ in range(calls):
            env.step(draw())
        return calls * num_envs

    return run


def gym_single() -> Callable[[int], int]:
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    env.action_space.seed(0)

    def run(n: int) -> int:
        for _ in range(n):
            _, _, term, trunc, _ = env.step(env.action_space.sample())
            if term or trunc:
                env.reset()
        return n

    return run


def gym_vec(num_envs: int, mode: str) -> Callable[[int], int]:
    env = gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode=mode)
    env.reset(seed=0)
    env.action_space.seed(0)

    def run(n: int) -> int:
        calls = max(1, n // num_envs)
        for _ in range(calls):
            env.step(env.action_space.sample())
        return calls * num_envs

    return run


def measure(run: Callable[[int], int], seconds: float) -> float:
    n = 64
    while True:  # grow the chunk until one call takes a measurable time
        start = time.perf_counter()
        steps = run(n)
        elapsed = time.perf_counter() - start
        if elapsed > seconds / 4:
            break
        n *= 2
    start = time.perf_counter()
    steps = run(n)
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.6, help="time per row and round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, Callable[[int], int]] = {
        "thrust core, 1 env (pure Python)": core_single(),
        "thrust batched numpy, N=8": batched(8, "numpy"),
        "thrust batched numpy, N=64": batched(64, "numpy"),
        "thrust batched numpy, N=1024": batched(1024, "numpy"),
        "thrust batched torch cpu, N=1024": batched(1024, "torch"),
        "gymnasium CartPole-v1, 1 env": gym_single(),
        "gymnasium make_vec x8 (sync)": gym_vec(8, "sync"),
        "gymnasium make_vec x8 (vector_entry_point)": gym_vec(8, "vector_entry_point"),
    }
    for run in rows.values():
        measure(run, 0.05)  # warm-up
    results: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.rounds):
        for name, run in rows.items():
            results[name].append(measure(run, args.seconds))
    base = statistics.median(results["gymnasium CartPole-v1, 1 env"])
    print(f"{'CartPole stepping':45s} {'env-steps/s':>14s} {'vs gym 1 env':>13s}")
    for name, values in results.items():
        sps = statistics.median(values)
        print(f"{name:45s} {sps:14,.0f} {sps / base:12.2f}x")


if __name__ == "__main__":
    main()
