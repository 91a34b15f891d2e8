"""PPO on many CartPoles at once: env step, policy and update on one device, at 1 to 4096 envs.

The seed's guide says what flips the CPU-vs-GPU verdict: many parallel environments batched into
one device dispatch. This bench runs PPO iterations (collect n_steps from every env, then 4 epochs
of 8 minibatches) with the batched CartPole either as numpy arrays on the host or as torch tensors
on the training device (no per-step copy to the host), and reports env-steps/s per setting.

    python benches/batched_ppo.py [--quick] [--devices cpu,cuda] [--envs 1,64,1024,4096]
                                  [--env-backends numpy,torch] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import available_devices, fmt_seconds, run_rounds

from thrust_app.algos import PPO
from thrust_app.config import apply_overrides
from thrust_app.device import cuda_summary, resolve_device
from thrust_app.envs.batched import make_batched
from thrust_app.tensors import EnvIO

N_STEPS = 16


def ppo_iteration(num_envs: int, backend: str, device: torch.device):
    samples = num_envs * N_STEPS
    config = apply_overrides(
        PPO.Config(), {"n_envs": num_envs, "n_steps": N_STEPS, "n_epochs": 4, "batch_size": max(64, samples // 8)}
    )
    env = make_batched("cartpole", num_envs, seed=0, backend=backend, device=str(device), check_actions=False)
    agent = PPO(env.observation_space.shape, env.action_space, config, device, seed=0)
    agent.apply_schedules(1.0)  # what the trainer does before each iteration: learning rate and clip range
    io = EnvIO(device)
    state = {"obs": io.reset(env)}

    def iterate():
        state["obs"] = agent.iteration(env, io, state["obs"]).obs

    return iterate, samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--devices", default="cpu,cuda")
    parser.add_argument("--envs", default="1,64,1024,4096")
    parser.add_argument(
        "--env-backends", default="numpy,torch", help="numpy (env on the host, a copy per step), torch (on the device)"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rounds, min_time = (2, 0.3) if args.quick else (5, 1.5)
    devices = available_devices(args.devices)
    benches, units, sync = {}, {}, {}
    for n in (int(v) for v in args.envs.split(",")):
        for d in devices:
            for backend in args.env_backends.split(","):
                key = f"N={n} {d} env:{backend}"
                benches[key], units[key] = ppo_iteration(n, backend, resolve_device(d))
                if d == "cuda":
                    sync[key] = torch.cuda.synchronize
    results = run_rounds(benches, rounds, min_time, min_time / 3, sync, units)
    print(f"{'setting':28s} {'per iteration':>14s} {'env-steps/s':>14s}")
    for key, m in results.items():
        print(f"{key:28s} {fmt_seconds(m.median):>14s} {m.rate:>14,.0f}")
    if args.json:
        host = {"machine": platform.machine(), "torch": torch.__version__, "cuda": cuda_summary()}
        args.json.write_text(
            json.dumps({"host": host, "n_steps": N_STEPS, "results": [m.as_dict() for m in results.values()]}, indent=2)
        )


if __name__ == "__main__":
    main()
