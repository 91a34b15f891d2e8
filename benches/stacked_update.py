"""A seed batch's update step alone, with its towers' tanh as `Activation` (2 sigmoid(2z) - 1, what the batch
uses) or as torch.tanh: N PPO seeds' stacked minibatch step (`StackedOnPolicy.step`, the zoo's CartPole preset:
256 samples a seed, 64x64 tanh towers), the two alternating A B A B in one process.

    python benches/stacked_update.py [--seeds 32] [--rounds 5] [--steps 100] [--threads 2]

Reported: milliseconds per minibatch step of every seed (the median over rounds) and the speed-up of
`Activation` on torch.tanh (each round's ratio, their median).
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial

import torch

from thrust_app.algos import build_algorithm
from thrust_app.speed.stacked_seeds import StackedOnPolicy, ppo_minibatch_loss
from thrust_app.training.run_spec import make_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100, help="minibatch steps timed per setting and round")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (a seed batch takes the machine's cores)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    spec = make_spec("ppo", "thrust/CartPole-v0", device="cpu")
    algos = [build_algorithm("ppo", spec.env, spec.config, torch.device("cpu"), seed) for seed in range(args.seeds)]
    batch = StackedOnPolicy(algos, [torch.Generator() for _ in algos])
    n, size, config = args.seeds, batch.config.batch_size, batch.config
    torch.manual_seed(0)
    obs, actions = torch.randn(n, size, *algos[0].obs_shape), torch.randint(0, 2, (n, size))
    samples = (obs, actions, -torch.rand(n, size), *torch.randn(3, n, size))  # old log pi, old V, A, R
    loss = partial(ppo_minibatch_loss, clip_range=config.clip_range, config=config)
    activations = {"Activation": batch.towers.activate, "torch.tanh": torch.tanh}
    times: dict[str, list[float]] = {name: [] for name in activations}
    for _ in range(args.rounds):
        for name, activate in activations.items():
            batch.towers.activate = activate
            for _ in range(5):
                batch.step(loss, *samples)
            start = time.perf_counter()
            for _ in range(args.steps):
                batch.step(loss, *samples)
            times[name].append((time.perf_counter() - start) / args.steps * 1e3)
    ratio = statistics.median(b / a for a, b in zip(times["Activation"], times["torch.tanh"], strict=True))
    print(f"{n} PPO CartPole seeds, {args.threads} torch threads, {args.rounds} rounds: ms per minibatch step (median)")
    for name, ms in times.items():
        print(f"  {name:12s} {statistics.median(ms):7.2f}")
    print(f"  Activation: {ratio:.2f}x torch.tanh's step (median of the rounds' ratios)")


if __name__ == "__main__":
    main()
