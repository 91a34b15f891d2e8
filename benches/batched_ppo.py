"""PPO on many CartPoles at once: env step, policy and update on one device, at 1 to 4096 envs.

The seed's guide says what flips the CPU-vs-GPU verdict: many parallel environments batched into
one device dispatch. This bench runs PPO iterations (collect n_steps from every env, then 4 epochs
of 8 minibatches) with the batched CartPole either as numpy arrays on the host or as torch tensors
on the training device (no per-step copy to the host), and reports env-steps/s per setting. On CUDA
it also counts the iteration's host synchronisations (`torch.cuda.set_sync_debug_mode`): a number
that does not grow with n_steps means no host round trip per env step.

    python benches/batched_ppo.py [--quick] [--devices cpu,cuda] [--envs 1,64,1024,4096]
                                  [--env-backends numpy,torch] [--n-steps 16] [--minibatches 8] [--json PATH]
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import available_devices, fmt_seconds, run_rounds

from thrust_app.algos import PPO
from thrust_app.algos.rollout import compute_gae
from thrust_app.config import apply_overrides
from thrust_app.envs.batched import make_batched
from thrust_app.envs.tensors import EnvIO
from thrust_app.speed.switches import apply_speed
from thrust_app.training.device import cuda_summary, resolve_device


def ppo_iteration(num_envs: int, backend: str, device: torch.device, n_steps: int, minibatches: int, graphs: bool):
    """One PPO iteration on `num_envs` batched CartPoles (`backend`'s arrays) and the env steps it takes;
    `graphs`: minibatch steps replayed from a CUDA graph (`cuda_graphs=True`)."""
    samples = num_envs * n_steps
    settings = {"n_envs": num_envs, "n_steps": n_steps, "n_epochs": 4, "batch_size": max(64, samples // minibatches)}
    config = apply_overrides(PPO.Config(), {**settings, "cuda_graphs": graphs})
    env = make_batched("cartpole", num_envs, seed=0, backend=backend, device=str(device), check_actions=False)
    agent = PPO(env.observation_space.shape, env.action_space, config, device, seed=0)
    agent.apply_schedules(1.0)  # what the trainer does before each iteration: learning rate and clip range
    apply_speed(agent, env)  # the speed switches, capturing the minibatch step among them
    io = EnvIO(device)
    state = {"obs": io.reset(env)}

    def iterate():
        state["obs"] = agent.iteration(env, io, state["obs"]).obs

    def phases() -> dict[str, float]:
        """Seconds of one iteration's collect, GAE and update, each waited for (the device synchronised)."""
        clock, times = time.perf_counter, {}
        start = clock()
        rollout, state["obs"] = agent.collect(env, io, state["obs"])
        torch.cuda.synchronize()
        times["collect"], start = clock() - start, clock()
        gamma, gae_lambda = agent.config.gamma, agent.config.gae_lambda
        advantages, returns = compute_gae(
            rollout.rewards, rollout.values, rollout.dones, rollout.last_values, gamma, gae_lambda
        )
        torch.cuda.synchronize()
        times["gae"], start = clock() - start, clock()
        agent.update(rollout, advantages, returns)
        torch.cuda.synchronize()
        times["update"] = clock() - start
        return times

    iterate.phases = phases
    return iterate, samples


def host_syncs(iterate) -> int:
    """How many times one call of `iterate` makes the host wait for the GPU (copies to the host, `.item()`,
    `.tolist()`, data-dependent shapes), as CUDA's sync debug mode reports them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            iterate()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(warning.message) for warning in caught)


def profile(key: str, iterate) -> None:
    """Print where one iteration's time goes: the phases, then the ops that take the most device time."""
    times = iterate.phases()
    print(f"{key}: " + ", ".join(f"{name} {fmt_seconds(seconds)}" for name, seconds in times.items()))
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        iterate()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=12, max_name_column_width=40))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--devices", default="cpu,cuda")
    parser.add_argument("--envs", default="1,64,1024,4096")
    parser.add_argument(
        "--env-backends", default="numpy,torch", help="numpy (env on the host, a copy per step), torch (on the device)"
    )
    parser.add_argument("--n-steps", type=int, default=16, help="steps collected from every env per iteration")
    parser.add_argument("--minibatches", type=int, default=8, help="minibatches per epoch (4 epochs)")
    parser.add_argument(
        "--cuda-graphs", choices=("off", "on", "both"), default="both", help="CUDA rows: eager, captured, or both"
    )
    parser.add_argument("--profile", action="store_true", help="CUDA rows: print the phases and the top ops of one iteration")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rounds, min_time = (2, 0.3) if args.quick else (5, 1.5)
    devices = available_devices(args.devices)
    benches, units, sync, syncs = {}, {}, {}, {}
    for n in (int(v) for v in args.envs.split(",")):
        for d in devices:
            graph_choices = {"off": [False], "on": [True], "both": [False, True]}[args.cuda_graphs] if d == "cuda" else [False]
            for backend, graphs in itertools.product(args.env_backends.split(","), graph_choices):
                key = f"N={n} {d} env:{backend}" + (" graphs" if graphs else "")
                iterate, units[key] = ppo_iteration(n, backend, resolve_device(d), args.n_steps, args.minibatches, graphs)
                benches[key] = iterate
                if d == "cuda":
                    iterate()  # the first iteration initialises CUDA's libraries (and captures the graph)
                    sync[key] = torch.cuda.synchronize
                    syncs[key] = host_syncs(iterate)
    results = run_rounds(benches, rounds, min_time, min_time / 3, sync, units)
    print(f"n_steps {args.n_steps}, 4 epochs of {args.minibatches} minibatches")
    print(f"{'setting':35s} {'per iteration':>14s} {'env-steps/s':>14s} {'host syncs/iteration':>22s}")
    for key, m in results.items():
        print(f"{key:35s} {fmt_seconds(m.median):>14s} {m.rate:>14,.0f} {syncs.get(key, '-'):>22}")
    for key in syncs if args.profile else ():
        profile(key, benches[key])
    if args.json:
        host = {"machine": platform.machine(), "torch": torch.__version__, "cuda": cuda_summary()}
        rows = [{**m.as_dict(), "host_syncs_per_iteration": syncs.get(m.name)} for m in results.values()]
        report = {"host": host, "n_steps": args.n_steps, "minibatches": args.minibatches, "results": rows}
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
