"""The fastest CartPole solve on one core: training seconds until an evaluation's mean return reaches 475.

    python benches/fast_cartpole.py [--seeds 10] [--no-sb3]
    python benches/fast_cartpole.py --gpu [--seeds 5]     # the `gpu` preset on CUDA (benches/gpu_check.sh runs it)

For each seed, in one process with one torch thread, alternating the contenders seed by seed (the host's
speed drifts): Thrust's PPO with `--preset fast` (the zoo's settings, evaluated every 1,024 steps), with the
default (zoo) preset at its default evaluation interval, with the zoo's settings over 16 envs x 16 steps
(the same 256-step rollout in half the vector steps), and Stable-Baselines3's PPO at the zoo's CartPole
settings evaluated every 1,024 steps (the same hyperparameters as the fast preset). "Training seconds" leave
the evaluations out (Thrust's train clock; for SB3, the wall time minus the time its evaluations took);
a seed that never solves within the budget counts as unsolved. `--gpu` runs Thrust's `--preset gpu` on CUDA
instead (4,096 envs on the device, the update and the collection captured as CUDA graphs), also reporting
the seconds to the solve with the evaluations in.
Prints a markdown table (median and max seconds, median steps, seeds solved).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import torch

from thrust_app.training.presets import get_preset
from thrust_app.training.trainer import train

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import stop_if_signalled
from peers import run_sb3

THRESHOLD = 475.0
EVAL_EVERY = 1024


def thrust_solve(seed: int, preset: str, overrides: dict | None = None) -> tuple[float | None, int | None]:
    """(training seconds, env steps) at the first evaluation >= 475, or (None, None)."""
    summary = thrust_run(seed, preset, overrides)
    return summary["solved_at_train_s"], summary["solved_at_step"]


def thrust_run(seed: int, preset: str, overrides: dict | None = None, device: str = "cpu") -> dict:
    """The summary of a Thrust PPO run from `preset`, stopped at the first evaluation >= 475."""
    with tempfile.TemporaryDirectory() as folder:
        summary = stop_if_signalled(
            train(
                "ppo",
                "cartpole",
                seed=seed,
                device=device,
                preset=preset,
                overrides=overrides,
                stop_at_return=THRESHOLD,
                run_dir=Path(folder) / "run",
                progress=False,
                log=lambda _: None,
            )
        )
    return summary


def sb3_solve(seed: int, budget: int) -> tuple[float | None, int | None]:
    """SB3's PPO at the zoo's CartPole settings (benches/peers.py's runner: evaluation time kept out of the
    clock), stopped at the solve."""
    result = run_sb3("ppo", seed, budget, stop=True, eval_every=EVAL_EVERY)
    return result["solve_s"], result["solved_at_step"]


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
    parser.add_argument("--gpu", action="store_true", help="Thrust's `--preset gpu` on CUDA (no CPU contenders)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.gpu:
        if not torch.cuda.is_available():
            sys.exit("fast_cartpole --gpu: no CUDA device here (torch.cuda.is_available() is False); run it on a GPU")
        gpu_table(args.seeds)
        return
    contenders = {
        "Thrust PPO `--preset fast` (the zoo's settings, 8 envs x 32 steps, eval every 1,024)": lambda seed: thrust_solve(
            seed, "fast"
        ),
        "Thrust PPO default preset (the zoo's; eval every 5,000)": lambda seed: thrust_solve(seed, "default"),
        "Thrust PPO, the zoo's settings over 16 envs x 16 steps, eval every 1,024": lambda seed: thrust_solve(
            seed, "fast", {"n_envs": 16, "n_steps": 16}
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


def gpu_table(seeds: int) -> None:
    """`--preset gpu` on CUDA, seed by seed: seconds to the solve, training only and with the evaluations in."""
    summaries = []
    for seed in range(seeds):
        summaries.append(thrust_run(seed, "gpu", device="cuda"))
        solved = summaries[-1]
        print(f"seed {seed}: {solved['solved_at_train_s']} s training, {solved['solved_at_s']} s in all", flush=True)
    print(f"\nPPO CartPole on CUDA, `--preset gpu`, seconds to a mean eval return >= 475 ({seeds} seeds)\n")
    print("| seconds | median s | max s | median steps | solved |")
    print("|---|---|---|---|---|")
    for name, key in (("training", "solved_at_train_s"), ("with the evaluations", "solved_at_s")):
        print(row(name, [(summary[key], summary["solved_at_step"]) for summary in summaries]))


if __name__ == "__main__":
    main()
