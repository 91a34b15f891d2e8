"""Trainer throughput, the seed's eight groups, each written once and run on every backend present.

Groups (suffixed with the backend: `/cpu` always, `/cuda` when torch sees a GPU):
  a2c_train_step, ppo_train_step, dqn_train_step, sac_train_step
      one gradient update on a ready batch (A2C: one 8x5 rollout; PPO: one 256-sample minibatch;
      DQN: one 64-sample batch of the zoo's 256x256 Q-net; SAC: one 256-sample batch, 256x256 nets)
  a2c_train_step_autograd, ppo_train_step_autograd, dqn_train_step_autograd, sac_train_step_autograd,
  ppo_cartpole_steps_per_sec_autograd
      the same with `update=reference`, the reference path: the ratio to the group above is what
      the written-out backward (actor_critic_backward.py, dqn_backward.py, sac_backward.py) saves, in the same rounds
  ppo_rollout, ppo_rollout_torch
      one rollout of the zoo's PPO preset (8 envs x 32 steps) with `acting="numpy"` (numpy, numpy_rollout.py)
      and with `acting="torch"` (the reference); on CUDA both act through torch
  ppo_train_step_graph, dqn_train_step_graph, sac_train_step_graph (CUDA only)
      the update captured as a CUDA graph and replayed (`cuda_graphs=True`, cuda_graphs.py)
  a2c_cartpole_steps_per_sec, ppo_cartpole_steps_per_sec, dqn_cartpole_steps_per_sec,
  sac_pendulum_steps_per_sec
      one full iteration (collect + update) with the env's preset; reported per iteration and as
      env-steps/s. Comparable within an algorithm, not across (iterations differ in size).

    python benches/trainer_throughput.py [--quick] [--json PATH] [--devices cpu,cuda]

Rounds alternate backends (cpu, cuda, cpu, cuda, ...); the table shows the median per call, the
min-max spread of the rounds, and the cuda/cpu ratio. Warm-up calls are excluded.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Measurement, available_devices, fmt_seconds, run_rounds

from thrust_app.algos import ALGOS
from thrust_app.algos.rollout import collect_rollout, compute_gae
from thrust_app.config import apply_overrides
from thrust_app.envs.batched import make_batched
from thrust_app.envs.tensors import EnvIO
from thrust_app.speed.switches import apply_speed
from thrust_app.training.device import cuda_summary, resolve_device
from thrust_app.training.presets import get_preset

PAIRS = {
    "a2c": "thrust/CartPole-v0",
    "ppo": "thrust/CartPole-v0",
    "dqn": "thrust/CartPole-v0",
    "sac": "thrust/Pendulum-v0",
    "td3": "thrust/Pendulum-v0",
}


def build(algo: str, device: torch.device, env_id: str | None = None, **extra):
    env_id = env_id or PAIRS[algo]
    cls = ALGOS[algo]
    config = apply_overrides(apply_overrides(cls.Config(), get_preset(algo, env_id).config), extra)
    env = make_batched(env_id, config.n_envs, seed=0)
    agent = cls(env.observation_space.shape, env.action_space, config, device, seed=0)
    agent.apply_schedules(1.0)
    apply_speed(agent, env)  # the speed switches as a run resolves them (speed/switches.py)
    io = EnvIO(device)
    return agent, env, io, io.reset(env)


def train_step(algo: str, device: torch.device, update: str = "handwritten", **extra) -> Callable[[], object]:
    """One update on a batch that is ready (collected once, before timing), its gradients computed the
    `update` way (handwritten: written out; reference: autograd); `extra` are further DQN/SAC settings."""
    if algo in ("dqn", "sac"):
        agent, env, io, obs = build(algo, device, learning_starts=1, update=update, **extra)
        while agent.buffer.size < 2048:
            obs = agent.iteration(env, io, obs).obs
        return agent.train_step
    if algo == "ppo":  # 256 samples = one minibatch
        agent, env, io, obs = build(algo, device, n_envs=8, n_steps=32, n_epochs=1, update=update, **extra)
    else:
        agent, env, io, obs = build(algo, device, update=update, **extra)
    config = agent.config
    rollout, _ = collect_rollout(env, io, obs, agent.net, config.n_steps, config.gamma)
    advantages, returns = compute_gae(
        rollout.rewards, rollout.values, rollout.dones, rollout.last_values, config.gamma, config.gae_lambda
    )
    return lambda: agent.update(rollout, advantages, returns)


def rollout(algo: str, device: torch.device, **extra) -> Callable[[], object]:
    """One rollout of the preset (A2C, PPO), collected the way `acting` says (in `extra`; fast by default)."""
    agent, env, io, obs = build(algo, device, **extra)
    state = {"obs": obs}

    def collect():
        rollout, state["obs"] = agent.collect(env, io, state["obs"])
        return rollout

    return collect


def full_loop(algo: str, device: torch.device, **extra) -> tuple[Callable[[], object], float]:
    """One collect+update iteration; returns the call and the env steps it takes."""
    agent, env, io, obs = build(algo, device, **({"learning_starts": 1} if algo in ("dqn", "sac") else extra))
    state = {"obs": obs}

    def iterate():
        iteration = agent.iteration(env, io, state["obs"])
        state["obs"] = iteration.obs
        return iteration

    steps = iterate().steps
    return iterate, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: short rounds (under a minute)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--devices", default="cpu,cuda", help="backends to try (default cpu,cuda)")
    args = parser.parse_args()
    rounds, min_time, warmup = (3, 0.15, 0.1) if args.quick else (7, 1.0, 0.5)

    devices = available_devices(args.devices)
    benches, units, sync = {}, {}, {}
    for group, algo, extra in [
        ("a2c_train_step", "a2c", {}),
        ("a2c_train_step_autograd", "a2c", {"update": "reference"}),
        ("ppo_train_step", "ppo", {}),
        ("ppo_train_step_autograd", "ppo", {"update": "reference"}),
        ("dqn_train_step", "dqn", {}),
        ("dqn_train_step_autograd", "dqn", {"update": "reference"}),
        ("sac_train_step", "sac", {}),
        ("sac_train_step_autograd", "sac", {"update": "reference"}),
        ("ppo_train_step_graph", "ppo", {"cuda_graphs": True}),
        ("dqn_train_step_graph", "dqn", {"cuda_graphs": True}),
        ("sac_train_step_graph", "sac", {"cuda_graphs": True}),
    ]:
        for d in devices:
            if group.endswith("_graph") and d != "cuda":
                continue  # a CUDA graph on the CPU is refused in one line by the algorithm itself
            benches[f"{group}/{d}"] = train_step(algo, resolve_device(d), **extra)
    for group, algo, extra in [("ppo_rollout", "ppo", {}), ("ppo_rollout_torch", "ppo", {"acting": "torch"})]:
        for d in devices:
            benches[f"{group}/{d}"] = rollout(algo, resolve_device(d), **extra)
    for group, algo, extra in [
        ("a2c_cartpole_steps_per_sec", "a2c", {}),
        ("ppo_cartpole_steps_per_sec", "ppo", {}),
        ("ppo_cartpole_steps_per_sec_autograd", "ppo", {"update": "reference"}),
        ("dqn_cartpole_steps_per_sec", "dqn", {}),
        ("sac_pendulum_steps_per_sec", "sac", {}),
    ]:
        for d in devices:
            benches[f"{group}/{d}"], units[f"{group}/{d}"] = full_loop(algo, resolve_device(d), **extra)
    for name in benches:
        if name.endswith("/cuda"):
            sync[name] = torch.cuda.synchronize
    results = run_rounds(benches, rounds, min_time, warmup, sync, units)
    print_table(results, devices)
    if args.json:
        host = {
            "machine": platform.machine(),
            "processor": platform.processor(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "cuda": cuda_summary(),
            "threads": torch.get_num_threads(),
        }
        args.json.write_text(
            json.dumps({"host": host, "quick": args.quick, "results": [m.as_dict() for m in results.values()]}, indent=2)
        )
        print(f"wrote {args.json}")


def print_table(results: dict[str, Measurement], devices: list[str]) -> None:
    groups = list(dict.fromkeys(name.split("/")[0] for name in results))
    header = f"{'group':30s}" + "".join(f"{d + ' median (min-max)':>30s}" for d in devices)
    if "cuda" in devices:
        header += f"{'cuda/cpu':>10s}"
    header += f"{'cpu env-steps/s':>17s}"
    print(header)
    for g in groups:
        row = f"{g:30s}"
        for d in devices:
            m = results.get(f"{g}/{d}")
            lo, hi = m.spread if m else (0, 0)
            row += f"{fmt_seconds(m.median) + ' (' + fmt_seconds(lo) + '-' + fmt_seconds(hi) + ')' if m else '-':>30s}"
        cpu = results.get(f"{g}/cpu")
        if "cuda" in devices:
            row += f"{results[f'{g}/cuda'].median / cpu.median:>9.2f}x" if cpu else f"{'-':>10s}"
        row += f"{cpu.rate:>17,.0f}" if cpu and "steps_per_sec" in g else f"{'':>17s}"
        print(row)


if __name__ == "__main__":
    main()
