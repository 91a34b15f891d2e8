"""Training speed on the MuJoCo presets: Thrust against Stable-Baselines3 on the same zoo settings, one torch
thread each, alternating Thrust, SB3, Thrust, SB3 in one process, no evaluations on the clock.

Each run trains its pair's preset (Thrust's, and SB3 with the values benches/parity.py translates field by
field, in VecNormalize where the preset normalises) for `--window` env steps past its warm-up, and the clock
covers that window only: for SAC and TD3 the steps after `learning_starts` (before it both sides act at random
and never update), for PPO and A2C the iterations after the first. Both clocks read at iteration boundaries,
after an iteration's update (Thrust's `on_iteration` hook, SB3's `on_rollout_start` and `on_training_end`).
Before the timed rounds each side trains each pair once, untimed, past its first update (imports, numba's
cache, first calls of each kernel). Reported: each round's Thrust/SB3 ratio of env-steps/s and their median,
the figure docs/backends.md quotes (the Continuous-control issue's goals: SAC and TD3 >= 2x, PPO >= 2.5x).

    python benches/mujoco_speed.py [--pairs sac:HalfCheetah-v5 td3:HalfCheetah-v5 ppo:HalfCheetah-v5]
        [--rounds 3] [--window 5000] [--set update=numba] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch
from harness import train_quietly
from parity import Job, sb3_model, thrust_config

PAIRS = ["sac:HalfCheetah-v5", "td3:HalfCheetah-v5", "ppo:HalfCheetah-v5"]


def warm_up_steps(config: dict) -> int:
    """Env steps before the clock starts: the random warm-up of an off-policy preset, the first iteration of an
    on-policy one."""
    if "learning_starts" in config:
        return config["learning_starts"]
    return config["n_steps"] * config["n_envs"]


def window_rate(marks: list[tuple[int, float]], start: int) -> float:
    """Env steps per second between the first mark at or past `start` and the last mark ((step, seconds) each)."""
    first = next(mark for mark in marks if mark[0] >= start)
    last = marks[-1]
    return (last[0] - first[0]) / (last[1] - first[1])


def thrust_rate(algo: str, env: str, overrides: list[str], start: int, budget: int, seed: int) -> float:
    marks: list[tuple[int, float]] = []
    train_quietly(
        algo,
        env,
        timesteps=budget,
        seed=seed,
        overrides=overrides,
        eval_every=10 * budget,  # none inside the window (the closing one comes after the last mark)
        checkpoint_every=10 * budget,
        on_iteration=lambda trainer: marks.append((trainer.step, time.perf_counter())),
    )
    return window_rate(marks, start)


def sb3_rate(algo: str, env: str, start: int, budget: int, seed: int) -> float:
    from stable_baselines3.common.callbacks import BaseCallback

    thrust_env, config, _ = thrust_config(algo, env, [])
    model, _, _, _ = sb3_model(Job(algo, env, "sb3", seed), thrust_env, config)
    marks: list[tuple[int, float]] = []

    class Marks(BaseCallback):
        """(env steps, seconds) after every update: at the start of each collection and at the end."""

        def _on_rollout_start(self) -> None:
            marks.append((self.num_timesteps, time.perf_counter()))

        def _on_training_end(self) -> None:
            marks.append((self.num_timesteps, time.perf_counter()))

        def _on_step(self) -> bool:
            return True

    model.learn(total_timesteps=budget, callback=Marks())
    return window_rate(marks, start)


def measure(pair: str, overrides: list[str], rounds: int, window: int) -> dict:
    """One pair's rounds: an untimed warm-up run of each side, then Thrust and SB3 alternating."""
    algo, env = pair.split(":")
    _, config, _ = thrust_config(algo, env, overrides)
    start = warm_up_steps(config)
    untimed = start + 2 * config.get("n_steps", 256) * config["n_envs"]  # two iterations, or 512 steps, of updates
    thrust_rate(algo, env, overrides, start, untimed, 0)
    sb3_rate(algo, env, start, untimed, 0)
    rates: list[tuple[float, float]] = []
    for seed in range(rounds):
        thrust = thrust_rate(algo, env, overrides, start, start + window, seed)
        rates.append((thrust, sb3_rate(algo, env, start, start + window, seed)))
        print(f"{pair} round {seed}: Thrust {rates[-1][0]:,.0f} steps/s, SB3 {rates[-1][1]:,.0f}, "
              f"{rates[-1][0] / rates[-1][1]:.2f}x", flush=True)  # fmt: skip
    ratios = [t / s for t, s in rates]
    return {
        "pair": pair,
        "settings": overrides,
        "thrust_sps": [t for t, _ in rates],
        "sb3_sps": [s for _, s in rates],
        "ratios": ratios,
        "median_ratio": statistics.median(ratios),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", nargs="+", default=PAIRS, help="ALGO:ENV, e.g. sac:Hopper-v5")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window", type=int, default=5000, help="env steps on the clock per run")
    parser.add_argument("--set", nargs="*", default=[], help="Thrust settings (KEY=VALUE), e.g. update=numba")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    results = [measure(pair, args.set, args.rounds, args.window) for pair in args.pairs]
    print(f"\n{'pair':22s} {'Thrust steps/s':>15s} {'SB3 steps/s':>12s} {'ratio (rounds)':>24s}")
    for r in results:
        spread = ", ".join(f"{x:.2f}" for x in r["ratios"])
        print(f"{r['pair']:22s} {statistics.median(r['thrust_sps']):>15,.0f} {statistics.median(r['sb3_sps']):>12,.0f} "
              f"{r['median_ratio']:>6.2f}x ({spread})")  # fmt: skip
    if args.json:
        host = {"machine": platform.machine(), "python": platform.python_version(), "torch": torch.__version__}
        args.json.write_text(json.dumps({"host": host, "window": args.window, "results": results}, indent=2))


if __name__ == "__main__":
    main()
