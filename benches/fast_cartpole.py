"""The fastest CartPole solve on one core: training seconds until an evaluation's mean return reaches 475.

    python benches/fast_cartpole.py [--seeds 10] [--no-sb3]

For each seed, in one process with one torch thread, alternating the contenders seed by seed (the host's
speed drifts): Thrust's PPO with `--preset fast`, with the default (zoo) preset at its default evaluation
interval and evaluated every 1,024 steps, and Stable-Baselines3's PPO at the zoo's CartPole settings
evaluated every 1,024 steps (the same hyperparameters as the row above it). "Training seconds" leave
the evaluations out (Thrust's train clock; for SB3, the wall time minus the time its evaluations took);
a seed that never solves within the budget counts as unsolved.
Prints a markdown table (median and max seconds, median steps, seeds solved).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from thrust_app.presets import get_preset
from thrust_app.trainer import train

THRESHOLD = 475.0
EVAL_EVERY = 1024
EVAL_EPISODES = 10


def thrust_solve(seed: int, preset: str, eval_every: int | None = None) -> tuple[float | None, int | None]:
    """(training seconds, env steps) at the first evaluation >= 475, or (None, None)."""
    with tempfile.TemporaryDirectory() as folder:
        summary = train(
            "ppo",
            "cartpole",
            seed=seed,
            device="cpu",
            preset=preset,
            eval_every=eval_every,
            stop_at_return=THRESHOLD,
            run_dir=Path(folder) / "run",
            progress=False,
            log=lambda _: None,
        )
    return summary["solved_at_train_s"], summary["solved_at_step"]


def sb3_solve(seed: int, budget: int) -> tuple[float | None, int | None]:
    """SB3's PPO at the zoo's CartPole settings, evaluated every EVAL_EVERY steps on gymnasium's CartPole-v1."""
    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    zoo = get_preset("ppo", "CartPole-v1").config
    schedule = {key: zoo[key] for key in ("learning_rate", "clip_range")}

    class SolveClock(BaseCallback):
        """Evaluates every EVAL_EVERY steps (its time kept apart) and stops training at the solve."""

        def __init__(self) -> None:
            super().__init__()
            self.eval_env = gym.make("CartPole-v1")
            self.eval_s = 0.0
            self.solved: tuple[float, int] | None = None
            self.started = time.perf_counter()
            self.next_eval = EVAL_EVERY

        def _on_step(self) -> bool:
            if self.num_timesteps < self.next_eval:
                return True
            self.next_eval += EVAL_EVERY
            started = time.perf_counter()
            returns = []
            for episode in range(EVAL_EPISODES):
                obs, _ = self.eval_env.reset(seed=1_000_000 + seed + episode)
                done, total = False, 0.0
                while not done:
                    action, _ = self.model.predict(obs, deterministic=True)
                    obs, reward, terminated, truncated, _ = self.eval_env.step(action)
                    total, done = total + float(reward), terminated or truncated
                returns.append(total)
            self.eval_s += time.perf_counter() - started
            if np.mean(returns) >= THRESHOLD:
                self.solved = (time.perf_counter() - self.started - self.eval_s, self.num_timesteps)
                return False
            return True

    env = make_vec_env("CartPole-v1", n_envs=zoo["n_envs"], seed=seed)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=zoo["n_steps"],
        batch_size=zoo["batch_size"],
        gae_lambda=zoo["gae_lambda"],
        gamma=zoo["gamma"],
        n_epochs=zoo["n_epochs"],
        ent_coef=zoo["ent_coef"],
        learning_rate=lambda remaining: schedule["learning_rate"] * remaining,  # the zoo's lin_1e-3
        clip_range=lambda remaining: schedule["clip_range"] * remaining,  # the zoo's lin_0.2
        seed=seed,
        device="cpu",
    )
    clock = SolveClock()
    model.learn(budget, callback=clock)
    return clock.solved if clock.solved else (None, None)


def row(name: str, results: list[tuple[float | None, int | None]]) -> str:
    seconds = [s for s, _ in results if s is not None]
    steps = [n for _, n in results if n is not None]
    if not seconds:
        return f"| {name} | - | - | - | 0/{len(results)} |"
    return (
        f"| {name} | {statistics.median(seconds):.2f} | {max(seconds):.2f} | {statistics.median(steps):,.0f} "
        f"| {len(seconds)}/{len(results)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--no-sb3", action="store_true", help="leave Stable-Baselines3 out")
    args = parser.parse_args()
    torch.set_num_threads(1)
    contenders = {
        "Thrust PPO `--preset fast` (16 envs x 16 steps, eval every 1,024)": lambda seed: thrust_solve(seed, "fast"),
        "Thrust PPO default preset (zoo; eval every 5,000)": lambda seed: thrust_solve(seed, "default"),
        "Thrust PPO default preset, eval every 1,024 (SB3's settings below)": lambda seed: thrust_solve(
            seed, "default", EVAL_EVERY
        ),
    }
    if not args.no_sb3:
        budget = get_preset("ppo", "CartPole-v1").timesteps
        contenders["SB3 2.x PPO, zoo settings, eval every 1,024"] = lambda seed: sb3_solve(seed, budget)
    results: dict[str, list] = {name: [] for name in contenders}
    for seed in range(args.seeds):
        for name, solve in contenders.items():
            results[name].append(solve(seed))
        print(f"seed {seed}: " + "; ".join(f"{results[n][-1][0]}" for n in contenders), flush=True)
    print(f"\nPPO CartPole, training seconds to a mean eval return >= 475 ({args.seeds} seeds, one core)\n")
    print("| contender | median s | max s | median steps | solved |")
    print("|---|---|---|---|---|")
    for name in contenders:
        print(row(name, results[name]))


if __name__ == "__main__":
    main()
