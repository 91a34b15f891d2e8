"""Sweep overhead: `thrust sweep` on each engine (embedded Optuna, Ray Tune) against the ideal.

    python benches/sweep_overhead.py [--trials 16] [--timesteps 8192] [--workers N] [--engines optuna,ray]

Runs the same PPO CartPole trials one after another in this process (the serial time), then as a sweep
on `--workers` parallel trials (default: one per core) with each engine. Ideal = serial time / workers;
the report gives each sweep's wall time against it and the overhead per trial (Optuna: worker
processes' start and torch import, study bookkeeping; Ray: starting the local Ray, its workers' torch
import, per-trial scheduling, reports and checkpoints through Tune's storage).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from harness import stop_if_signalled

from thrust_app.sweeps.launch import sweep
from thrust_app.training.trainer import train

LEARNING_RATES = (1e-3, 3e-4, 1e-4, 3e-3)


def sweep_file(folder: Path, trials: int, timesteps: int, workers: int, engine: str) -> Path:
    path = folder / f"overhead-{engine}.yaml"
    path.write_text(
        f"name: overhead-{engine}\nalgo: ppo\nenv: cartpole\ntimesteps: {timesteps}\nbase: {{n_steps: 32}}\n"
        f"search:\n  learning_rate: {{type: choice, values: {list(LEARNING_RATES)}}}\nengine: {engine}\n"
        f"trials: {trials}\nsampler: random\nworkers: {workers}\neval_every: {timesteps}\neval_episodes: 5\n"
    )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--timesteps", type=int, default=8192)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--engines", default="optuna,ray", help="comma-separated: optuna, ray")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        started = time.perf_counter()
        for index in range(args.trials):
            stop_if_signalled(
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
            )
        serial = time.perf_counter() - started
        walls = {}
        for engine in args.engines.split(","):
            started = time.perf_counter()
            path = sweep_file(root, args.trials, args.timesteps, args.workers, engine)
            sweep(path, runs_root=root / "runs", log=lambda _: None)
            walls[engine] = time.perf_counter() - started
    ideal = serial / args.workers
    print(f"{args.trials} trials x {args.timesteps:,} steps of PPO CartPole, {args.workers} parallel trials")
    print(f"serial in one process: {serial:.1f} s; ideal on {args.workers} workers: {ideal:.1f} s")
    for engine, wall in walls.items():
        print(
            f"{engine:>6}: wall time {wall:.1f} s = {wall / ideal:.2f}x ideal; "
            f"overhead {(wall - ideal) * args.workers / args.trials:.2f} s per trial"
        )
    if "ray" in walls:  # what a sweep on an already running cluster does not pay
        from thrust_app.sweeps.ray_engine import ray_session

        started = time.perf_counter()
        with ray_session(None, args.workers):
            pass
        startup = time.perf_counter() - started
        print(
            f"   ray: starting and stopping the local Ray alone takes {startup:.1f} s; without it "
            f"{(walls['ray'] - startup - ideal) * args.workers / args.trials:.2f} s per trial"
        )


if __name__ == "__main__":
    main()
