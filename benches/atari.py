"""Atari: Thrust against Stable-Baselines3 2.9.2 on ALE/Breakout-v5 with the zoo's PPO and DQN settings.

Both sides train on the same env work: the zoo's Atari preprocessing (Thrust's `atari` pipeline: noop
reset, frame skip 4, 84x84 grey, life loss and reward sign for training, 4 frames stacked; SB3 gets the
very same gymnasium env in its DummyVecEnv / SubprocVecEnv), NatureCNN, one torch thread, A B A B
alternating in one process. Reported: training env-steps/s (env steps and updates, no evaluation), the
Thrust/SB3 ratio per round, what a 100,000-transition replay buffer holds on each side, and where an
update's time goes: the same NatureCNN's forward+backward timed alone on the minibatch shapes (the floor
no implementation of the update can go below with these convolutions on this CPU).

    python benches/atari.py [--rounds 2] [--ppo-steps 2048] [--dqn-steps 3000] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
import torch

from thrust_app.envs import make_env
from thrust_app.envs.pipeline import Pipeline
from thrust_app.training.presets import get_preset
from thrust_app.training.trainer import train

ENV = "ALE/Breakout-v5"
PIPELINE = Pipeline("atari", 4)


def stop_at(steps: int):
    """An iteration hook that ends the run at `steps` as stopped: no closing evaluation (an untrained policy's
    Breakout game can last its full 27,000 steps)."""
    return lambda trainer: trainer.request_stop() if trainer.step >= steps else None


def thrust_sps(algo: str, steps: int, extra: dict) -> float:
    """Thrust's training env-steps/s over `steps` (the summary's train_s: no evaluation)."""
    with TemporaryDirectory() as folder:
        summary = train(
            algo, ENV, timesteps=steps + 1, overrides=extra, run_dir=Path(folder) / "run", eval_every=10**9,
            progress=False, log=lambda _: None, on_iteration=stop_at(steps),
        )  # fmt: skip
    return summary["timesteps"] / summary["train_s"]


def sb3_model(algo: str, n_envs: int, vec_env: str, learning_starts: int):
    """SB3 with the zoo's atari entry for `algo`, on Thrust's pipeline env (the same frames)."""
    import stable_baselines3 as sb3
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    make = [lambda: make_env(ENV, PIPELINE, training=True)] * n_envs
    venv = SubprocVecEnv(make) if vec_env == "async" else DummyVecEnv(make)
    venv.seed(0)
    if algo == "ppo":
        model = sb3.PPO(
            "CnnPolicy", venv, n_steps=128, n_epochs=4, batch_size=256, learning_rate=lambda p: 2.5e-4 * p,
            clip_range=lambda p: 0.1 * p, vf_coef=0.5, ent_coef=0.01, seed=0, verbose=0, device="cpu",
        )  # fmt: skip
    else:
        model = sb3.DQN(
            "CnnPolicy", venv, buffer_size=100_000, learning_rate=1e-4, batch_size=32, learning_starts=learning_starts,
            target_update_interval=1000, train_freq=4, gradient_steps=1, exploration_fraction=0.1,
            exploration_final_eps=0.01, seed=0, verbose=0, device="cpu",
        )  # fmt: skip
    model.set_logger(Logger(None, []))
    return model


def sb3_sps(algo: str, steps: int, n_envs: int, vec_env: str, learning_starts: int) -> float:
    model = sb3_model(algo, n_envs, vec_env, learning_starts)
    started = time.perf_counter()
    model.learn(steps)
    seconds = time.perf_counter() - started
    model.get_env().close()
    return model.num_timesteps / seconds


def buffer_memory() -> dict[str, float]:
    """GB a 100,000-transition Atari replay buffer holds: Thrust's (frames shared), SB3's with and without
    optimize_memory_usage (allocated, not touched: numpy's nbytes)."""
    from gymnasium.spaces import Box, Discrete
    from stable_baselines3.common.buffers import ReplayBuffer as SB3Buffer

    from thrust_app.algos.frame_replay import FrameSharingReplay

    shared = FrameSharingReplay(100_000, (4, 84, 84), (), torch.int64, torch.device("cpu"), torch.uint8, 1)
    ours = shared.frames.nbytes + sum(
        t.numel() * t.element_size() for t in (shared.actions, shared.rewards, shared.terminated)
    )
    space = Box(0, 255, (4, 84, 84), np.uint8)
    sizes = {"thrust (frames shared)": ours / 1e9}
    for optimize in (False, True):
        sb3 = SB3Buffer(
            100_000, space, Discrete(4), "cpu", optimize_memory_usage=optimize, handle_timeout_termination=not optimize
        )
        held = sb3.observations.nbytes + (0 if optimize else sb3.next_observations.nbytes)
        sizes[f"sb3 (optimize_memory_usage={optimize})"] = (held + sb3.actions.nbytes + sb3.rewards.nbytes) / 1e9
    return sizes


def conv_floor(repeats: int = 10) -> dict[str, float]:
    """Seconds of NatureCNN's forward+backward alone on a PPO minibatch (256) and a DQN one (32 x 2 nets'
    forwards + 1 backward), and of an acting forward on 8 envs: the convolutions' floor on this CPU."""
    from thrust_app.nets.policies import NatureCNN

    net = NatureCNN((4, 84, 84))
    timings = {}
    for name, batch, backward in (("fwd+bwd 256", 256, True), ("fwd+bwd 32", 32, True), ("fwd 8", 8, False)):
        obs = torch.randint(0, 256, (batch, 4, 84, 84), dtype=torch.uint8)
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            if backward:
                net(obs).sum().backward()
            else:
                with torch.no_grad():
                    net(obs)
            best = min(best, time.perf_counter() - started)
        timings[name] = best
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ppo-steps", type=int, default=2048)
    parser.add_argument("--dqn-steps", type=int, default=3000)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    dqn_start = 1000  # the zoo waits 100,000 steps; a short bench starts learning after 1,000 on both sides
    rows = {
        "ppo sync (8 envs)": (
            lambda: thrust_sps("ppo", args.ppo_steps, {"vec_env": "sync"}),
            lambda: sb3_sps("ppo", args.ppo_steps, 8, "sync", 0),
        ),
        "ppo async (8 envs, worker processes)": (
            lambda: thrust_sps("ppo", args.ppo_steps, {"vec_env": "async"}),
            lambda: sb3_sps("ppo", args.ppo_steps, 8, "async", 0),
        ),
        "ppo envpool (Thrust) vs DummyVecEnv (SB3)": (
            lambda: thrust_sps("ppo", args.ppo_steps, {"vec_env": "envpool"}),
            lambda: sb3_sps("ppo", args.ppo_steps, 8, "sync", 0),
        ),
        "dqn (1 env)": (
            lambda: thrust_sps("dqn", args.dqn_steps, {"learning_starts": dqn_start}),
            lambda: sb3_sps("dqn", args.dqn_steps, 1, "sync", dqn_start),
        ),
    }
    results: dict[str, dict[str, list[float]]] = {}
    for round_index in range(args.rounds):
        for name, (ours, theirs) in rows.items():
            first, second = (ours, theirs) if round_index % 2 == 0 else (theirs, ours)
            a, b = first(), second()
            thrust, sb3 = (a, b) if round_index % 2 == 0 else (b, a)
            entry = results.setdefault(name, {"thrust": [], "sb3": [], "ratio": []})
            entry["thrust"].append(thrust)
            entry["sb3"].append(sb3)
            entry["ratio"].append(thrust / sb3)
            print(
                f"round {round_index + 1} {name}: thrust {thrust:.0f} steps/s, sb3 {sb3:.0f} steps/s, ratio {thrust / sb3:.2f}"
            )
    floor = conv_floor()
    preset = get_preset("ppo", ENV).config
    minibatches = preset["n_epochs"] * preset["n_envs"] * preset["n_steps"] // preset["batch_size"]
    ppo_floor = (minibatches * floor["fwd+bwd 256"] + preset["n_steps"] * floor["fwd 8"]) / (
        preset["n_envs"] * preset["n_steps"]
    )
    report = {
        "machine": f"{platform.processor() or platform.machine()}, torch {torch.__version__}, 1 thread",
        "results": results,
        "median_ratio": {name: statistics.median(r["ratio"]) for name, r in results.items()},
        "buffer_gb_100k": buffer_memory(),
        "conv_seconds": floor,
        "ppo_conv_floor_steps_per_s": 1.0 / ppo_floor,
    }
    print(json.dumps(report, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
