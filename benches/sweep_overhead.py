"""Sweep overhead: `thrust sweep` (embedded Optuna, worker processes) against the ideal.

    python benches/sweep_overhead.py [--trials 16] [--timesteps 8192] [--workers N]

Runs the same PPO CartPole trials twice: one after another in this process (the serial time), then as
a sweep on `--workers` processes (default: one per core). Ideal = serial time / workers; the report
gives the sweep's wall time against it and the overhead per trial (process start, torch import,
study bookkeeping).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from thrust_app.sweep import sweep
from thrust_app.trainer import train

LEARNING_RATES = (1e-3, 3e-4, 1e-4, 3e-3)


def sweep_file(folder: Path, trials: int, timesteps: int, workers: int) -> Path:
    path = folder / "overhead.yaml"
    path.write_text(
        f"name: overhead\nalgo: ppo\nenv: cartpole\ntimesteps: {timesteps}\nbase: {{n_steps: 32}}\n"
        f"search:\n  learning_rate: {{type: choice, values: {list(LEARNING_RATES)}}}\n"
        f"trials: {trials}\nsampler: random\nworkers: {workers}\neval_every: {timesteps}\neval_episodes: 5\n"
    )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--timesteps", type=int, default=8192)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        started = time.perf_counter()
        for index in range(args.trials):
            train(
                "ppo",
                "cartpole",
                timesteps=args.timesteps,
                seed=index,
                device="cpu",
                run_dir=root / f"serial-{index}",
                eval_every=args.timesteps,
                eval_episodes=5,
                progress=False,
                log=lambda _: None,
                overrides={"n_steps": 32, "learning_rate": LEARNING_RATES[index % len(LEARNING_RATES)]},
            )
        serial = time.perf_counter() - started
        started = time.perf_counter()
        sweep(sweep_file(root, args.trials, args.timesteps, args.workers), runs_root=root / "runs", log=lambda _: None)
        wall = time.perf_counter() - started
    ideal = serial / args.workers
    print(f"{args.trials} trials x {args.timesteps:,} steps of PPO CartPole, {args.workers} workers")
    print(f"serial in one process: {serial:.1f} s; ideal on {args.workers} workers: {ideal:.1f} s")
    print(
        f"sweep wall time: {wall:.1f} s = {wall / ideal:.2f}x ideal; "
        f"overhead {(wall - ideal) * args.workers / args.trials:.2f} s per trial"
    )


if __name__ == "__main__":
    main()
