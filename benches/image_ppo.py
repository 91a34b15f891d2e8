"""PPO on image observations: training env-steps/s on MinAtar Breakout (10x10 frames, the small CNN) with N
envs, on the CPU and on CUDA; the row `benches/gpu_check.sh` runs on a lent GPU.

Each cell trains the MinAtar PPO preset (its rollout of N envs x 128 steps, 4 epochs of 256-sample
minibatches) for two iterations and reports the second's steps/s (the first pays the warm-up), evaluation
excluded. The envs step on the host in the training process; the CNN's forward (acting) and update run on
the device.

    python benches/image_ppo.py [--devices cpu,cuda] [--envs 8,64,256] [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import torch

from thrust_app.training.trainer import train

ENV = "MinAtar/Breakout-v1"
N_STEPS = 128


def steps_per_second(device: str, n_envs: int) -> float:
    """The second iteration's env-steps/s (a hook times the iterations; no evaluation runs in between)."""
    stamps: list[tuple[int, float]] = []

    def hook(trainer) -> None:
        stamps.append((trainer.step, time.perf_counter()))
        if len(stamps) == 2:
            trainer.request_stop()

    with TemporaryDirectory() as folder:
        train(
            "ppo", ENV, timesteps=10 * n_envs * N_STEPS, device=device, overrides={"n_envs": n_envs, "n_steps": N_STEPS},
            run_dir=Path(folder) / "run", eval_every=10**9, progress=False, log=lambda _: None, on_iteration=hook,
        )  # fmt: skip
    (step_a, time_a), (step_b, time_b) = stamps
    return (step_b - step_a) / (time_b - time_a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", default="cpu,cuda")
    parser.add_argument("--envs", default="8,64,256")
    parser.add_argument("--quick", action="store_true", help="8 envs only (a smoke run)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    envs = [8] if args.quick else [int(n) for n in args.envs.split(",")]
    results = []
    for device in args.devices.split(","):
        if device == "cuda" and not torch.cuda.is_available():
            print("/cuda skipped: no CUDA device on this machine")
            continue
        for n_envs in envs:
            sps = steps_per_second(device, n_envs)
            results.append({"name": f"ppo minatar N={n_envs} {device}", "steps_per_s": sps})
            print(f"PPO {ENV}, {n_envs} envs, {device}: {sps:,.0f} training env-steps/s")
    if args.json is not None:
        args.json.write_text(json.dumps({"results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
