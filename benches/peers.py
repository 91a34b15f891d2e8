"""Thrust against Stable-Baselines3 on the same work, in one run, alternating.

Pairs (rl-baselines3-zoo hyperparameters on both sides, 1 torch thread each): PPO, A2C and DQN on
CartPole, SAC and TD3 on Pendulum, recurrent PPO (sb3-contrib's RecurrentPPO, the zoo's ppo_lstm entry) on CartPole
with its velocities hidden. Thrust trains on its batched CartPole / Pendulum (gymnasium's
CartPole-v1 / Pendulum-v1 dynamics, tested equal); SB3 on gymnasium's envs in its DummyVecEnv.
Each run evaluates 10 deterministic episodes every 5k steps (SAC 1k; `--eval-every`; the same episodes on both sides:
Thrust's env and its trainer's seeds) and stops
once the mean reaches 475 (Pendulum: -200), or at the zoo's budget. Reported per pair: training
env-steps/s with evaluation time excluded, and training seconds to solve; medians over seeds and
the median of the per-seed Thrust/SB3 ratios.

Runs that stop when solved have different lengths, and a run's speed changes along the way (DQN
and SAC act at random before `learning_starts`, with no updates), so each seed's steps/s are taken
over the same stretch on both sides: up to the last evaluation both runs reached. Before the timed
pairs each library runs each algorithm once, untimed, on the quick budget, so that no pair pays the
process's first-run costs (lazy imports, first calls of each kernel).

    python benches/peers.py [--seeds 5] [--quick] [--json PATH] [--only ppo,dqn] [--eval-every STEPS] [--update numba]
    python benches/peers.py --peer cleanrl [--seeds 5]     # CleanRL's ppo.py / dqn.py, see cleanrl_peer.py
    python benches/peers.py --peer sbx [--seeds 5]         # SBX (JAX): PPO, DQN, SAC, TD3, see sbx_peer.py

Needs `pip install stable-baselines3` (with torch==2.13.0 installed first); the CleanRL and SBX peers make
their own venvs under .bench/ on first use.
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import statistics
import time
from pathlib import Path

import torch
from harness import RecurrentPredict, train_quietly

from thrust_app.envs.gym_adapter import register_envs
from thrust_app.training.evaluation import evaluate
from thrust_app.training.trainer import EVAL_SEED_OFFSET

EVAL_EVERY = 5000
#: SAC solves Pendulum within its first few thousand steps on both sides: evaluated every 5k, the solve-time
#: ratio would measure the evaluation grid, not the learning.
EVAL_EVERY_BY_ALGO = {"sac": 1000, "td3": 1000}
EVAL_EPISODES = 10


def linear(start: float):
    return lambda progress_remaining: progress_remaining * start


# algo -> (thrust env, gymnasium env, solve threshold, zoo budget, SB3 constructor kwargs, n_envs)
PAIRS = {
    "ppo": (
        "thrust/CartPole-v0",
        "CartPole-v1",
        475.0,
        100_000,
        dict(
            n_steps=32,
            batch_size=256,
            gae_lambda=0.8,
            gamma=0.98,
            n_epochs=20,
            ent_coef=0.0,
            learning_rate=linear(1e-3),
            clip_range=linear(0.2),
        ),
        8,
    ),
    "a2c": ("thrust/CartPole-v0", "CartPole-v1", 475.0, 200_000, dict(ent_coef=0.0), 8),
    "dqn": (
        "thrust/CartPole-v0",
        "CartPole-v1",
        475.0,
        50_000,
        dict(
            learning_rate=2.3e-3,
            batch_size=64,
            buffer_size=100_000,
            learning_starts=1000,
            gamma=0.99,
            target_update_interval=10,
            train_freq=256,
            gradient_steps=128,
            exploration_fraction=0.16,
            exploration_final_eps=0.04,
            policy_kwargs=dict(net_arch=[256, 256]),
        ),
        1,
    ),
    "sac": ("thrust/Pendulum-v0", "Pendulum-v1", -200.0, 20_000, dict(learning_rate=1e-3), 1),
    # the zoo's td3 Pendulum-v1 entry (Thrust's preset holds the same values); `noise_std` becomes the peer's
    # NormalActionNoise (run_sb3)
    "td3": (
        "thrust/Pendulum-v0",
        "Pendulum-v1",
        -200.0,
        20_000,
        dict(
            gamma=0.98,
            buffer_size=200_000,
            learning_starts=10_000,
            noise_std=0.1,
            gradient_steps=1,
            train_freq=1,
            learning_rate=1e-3,
            policy_kwargs=dict(net_arch=[400, 300]),
        ),
        1,
    ),
}
# sb3-contrib's RecurrentPPO with the zoo's ppo_lstm entry (its values are the ppo entry's for CartPole-v1, plus the
# LSTM's; observations and rewards normalised on both sides)
PAIRS["recurrent_ppo"] = (
    "thrust/CartPoleNoVel-v0",
    "CartPoleNoVel-v1",
    475.0,
    100_000,
    PAIRS["ppo"][4]
    | {
        "policy_kwargs": dict(
            ortho_init=False,
            activation_fn=torch.nn.ReLU,
            lstm_hidden_size=64,
            enable_critic_lstm=True,
            net_arch=dict(pi=[64], vf=[64]),
        )
    },
    8,
)
QUICK_BUDGET = {"ppo": 16_384, "a2c": 16_000, "dqn": 8_000, "sac": 1_500, "td3": 10_500, "recurrent_ppo": 8_192}
#: Pairs whose zoo entry sets `normalize: true`: the peer trains in SB3's VecNormalize (Thrust's preset has it too).
NORMALIZED = {"recurrent_ppo"}


def run_thrust(algo: str, seed: int, budget: int, stop: bool, eval_every: int = EVAL_EVERY, update: str | None = None) -> dict:
    env, _, threshold, _, _, _ = PAIRS[algo]
    overrides = {"update": update} if update else {}
    evals: list[tuple[int, float]] = []
    on_record = lambda r: evals.append((r["step"], r["train_s"])) if r["kind"] == "eval" else None  # noqa: E731
    s = train_quietly(
        algo,
        env,
        timesteps=budget,
        seed=seed,
        overrides=overrides,
        eval_every=eval_every,
        eval_episodes=EVAL_EPISODES,
        stop_at_return=threshold if stop else None,
        on_record=on_record,
    )
    solved = s["status"] == "solved"
    return {
        "steps": s["timesteps"],
        "train_s": s["train_s"],
        "sps": s["sps"],
        "evals": evals,
        "solved_at_step": s["timesteps"] if solved else None,
        "solve_s": s["train_s"] if solved else None,
    }


def run_sb3(algo: str, seed: int, budget: int, stop: bool, eval_every: int = EVAL_EVERY, library: str = "sb3") -> dict:
    """One run of the peer `library`: SB3 ("sb3") or SBX ("sbx", SB3's API in JAX; run in SBX's venv, sbx_peer.py)."""
    import importlib

    import numpy as np
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import VecNormalize

    thrust_env, gym_env, threshold, _, kwargs, n_envs = PAIRS[algo]
    peer = importlib.import_module({"sb3": "stable_baselines3", "sbx": "sbx"}[library])

    class SolveCallback(BaseCallback):
        """Evaluates like Thrust does, keeps evaluation time out of the clock, stops once solved."""

        def _on_training_start(self) -> None:
            self.start, self.eval_s, self.next_eval = time.perf_counter(), 0.0, eval_every
            self.solved_at_step = self.solve_s = None
            self.evals: list[tuple[int, float]] = []  # (step, training seconds so far) at each evaluation

        def _on_step(self) -> bool:
            if self.num_timesteps < self.next_eval:
                return True
            t0 = time.perf_counter()
            self.evals.append((self.num_timesteps, t0 - self.start - self.eval_s))
            normalize = env.normalize_obs if algo in NORMALIZED else lambda obs: obs
            if algo == "recurrent_ppo":
                act = RecurrentPredict(self.model, normalize)
            else:
                act = lambda obs: self.model.predict(normalize(obs), deterministic=True)[0]  # noqa: E731
            mean = evaluate(act, thrust_env, EVAL_EPISODES, seed + EVAL_SEED_OFFSET).mean  # the episodes Thrust's run plays
            self.eval_s += time.perf_counter() - t0
            self.next_eval += eval_every
            if mean >= threshold and self.solved_at_step is None:
                self.solved_at_step = self.num_timesteps
                self.solve_s = t0 - self.start - (self.eval_s - (time.perf_counter() - t0))
                return not stop
            return True

    register_envs()  # the zoo's NoVel ids are Thrust's registrations
    env = make_vec_env(gym_env, n_envs=n_envs, seed=seed)
    if algo in NORMALIZED:
        env = VecNormalize(env, gamma=kwargs["gamma"])
    if algo == "recurrent_ppo":
        import sb3_contrib

        model = sb3_contrib.RecurrentPPO("MlpLstmPolicy", env, seed=seed, device="cpu", verbose=0, **kwargs)
    else:
        if "noise_std" in kwargs:  # the zoo's noise_type normal
            from stable_baselines3.common.noise import NormalActionNoise

            n_actions = env.action_space.shape[0]
            noise = NormalActionNoise(np.zeros(n_actions), kwargs["noise_std"] * np.ones(n_actions))
            kwargs = {k: v for k, v in kwargs.items() if k != "noise_std"} | {"action_noise": noise}
        model = getattr(peer, algo.upper())("MlpPolicy", env, seed=seed, device="cpu", verbose=0, **kwargs)
    model.set_logger(Logger(None, []))  # SB3's default logger makes a /tmp/SB3-<time> folder on every learn()
    callback = SolveCallback()
    start = time.perf_counter()
    model.learn(total_timesteps=budget, callback=callback)
    train_s = time.perf_counter() - start - callback.eval_s
    return {
        "steps": model.num_timesteps,
        "train_s": train_s,
        "sps": model.num_timesteps / train_s,
        "evals": callback.evals,
        "solved_at_step": callback.solved_at_step,
        "solve_s": callback.solve_s,
    }


def common_window_sps(thrust: dict, sb3: dict) -> tuple[float, float]:
    """Each side's steps/s up to the last evaluation both runs reached (whole runs if either has none)."""
    k = min(len(thrust["evals"]), len(sb3["evals"]))
    if k == 0:
        return thrust["sps"], sb3["sps"]
    (t_steps, t_s), (b_steps, b_s) = thrust["evals"][k - 1], sb3["evals"][k - 1]
    return t_steps / t_s, b_steps / b_s


def median_or_none(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="1 seed, short budgets, no solving: SPS only")
    parser.add_argument("--only", default=",".join(PAIRS))
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--eval-every",
        type=int,
        help=f"steps between evaluations, both sides (default {EVAL_EVERY:,}; SAC {EVAL_EVERY_BY_ALGO['sac']:,})",
    )
    parser.add_argument("--peer", choices=["sb3", "cleanrl", "sbx"], default="sb3", help="which library to run against")
    parser.add_argument(
        "--update",
        choices=["handwritten", "numba", "reference"],
        help="Thrust's `update` setting (default: the config's, handwritten; numba exists for dqn and sac)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.peer == "cleanrl":
        import cleanrl_peer

        algos = [a for a in args.only.split(",") if a in cleanrl_peer.THRUST_SETTINGS]
        table = cleanrl_peer.compare(algos, 1 if args.quick else args.seeds, args.quick)
        cleanrl_peer.print_table(table)
        if args.json:
            args.json.write_text(json.dumps({"peer": cleanrl_peer.CLEANRL, "quick": args.quick, "table": table}, indent=2))
        return
    if args.peer == "sbx":
        import sbx_peer

        result = sbx_peer.compare(
            [a for a in args.only.split(",") if a in sbx_peer.ALGOS], 1 if args.quick else args.seeds, args.quick
        )
        sbx_peer.print_table(result)
        if args.json:
            args.json.write_text(json.dumps(result, indent=2))
        return
    seeds = 1 if args.quick else args.seeds
    algos = args.only.split(",")
    thrust = functools.partial(run_thrust, update=args.update)
    if not args.quick:  # each library runs each algorithm once, untimed: no pair pays the process's first-run costs
        for algo in algos:
            for fn in (thrust, run_sb3):
                fn(algo, seeds, QUICK_BUDGET[algo], stop=False)
    runs: list[dict] = []
    for seed in range(seeds):
        for algo in algos:  # alternate: Thrust, SB3, Thrust, SB3, ...
            budget = QUICK_BUDGET[algo] if args.quick else PAIRS[algo][3]
            for lib, fn in (("thrust", thrust), ("sb3", run_sb3)):
                eval_every = args.eval_every or EVAL_EVERY_BY_ALGO.get(algo, EVAL_EVERY)
                r = {"lib": lib, "algo": algo, "seed": seed, **fn(algo, seed, budget, not args.quick, eval_every)}
                runs.append(r)
                print(
                    f"{lib:6s} {algo} seed {seed}: {r['sps']:8,.0f} steps/s, solved at "
                    f"{r['solved_at_step']} ({r['solve_s'] and round(r['solve_s'], 1)} s)",
                    flush=True,
                )
    table = summarize(runs, algos, seeds)
    print_table(table)
    if args.json:
        host = {
            "machine": platform.machine(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "sb3": __import__("stable_baselines3").__version__,
        }
        args.json.write_text(json.dumps({"host": host, "quick": args.quick, "runs": runs, "table": table}, indent=2))


def summarize(runs: list[dict], algos: list[str], seeds: int) -> list[dict]:
    table = []
    for algo in algos:
        pairs = [
            (
                next(r for r in runs if (r["lib"], r["algo"], r["seed"]) == ("thrust", algo, s)),
                next(r for r in runs if (r["lib"], r["algo"], r["seed"]) == ("sb3", algo, s)),
            )
            for s in range(seeds)
        ]
        solve_ratios = [t["solve_s"] / b["solve_s"] for t, b in pairs if t["solve_s"] and b["solve_s"]]
        sps = [common_window_sps(t, b) for t, b in pairs]
        table.append(
            {
                "algo": algo,
                "env": PAIRS[algo][1],
                "thrust_sps": statistics.median(t for t, _ in sps),
                "sb3_sps": statistics.median(b for _, b in sps),
                "sps_ratio": statistics.median(t / b for t, b in sps),
                "thrust_solve_s": median_or_none([t["solve_s"] for t, _ in pairs]),
                "sb3_solve_s": median_or_none([b["solve_s"] for _, b in pairs]),
                "thrust_solved": sum(t["solve_s"] is not None for t, _ in pairs),
                "sb3_solved": sum(b["solve_s"] is not None for _, b in pairs),
                "solve_time_ratio": median_or_none(solve_ratios),
                "seeds": seeds,
            }
        )
    return table


def print_table(table: list[dict]) -> None:
    print(
        f"\n{'pair':18s} {'Thrust steps/s':>15s} {'SB3 steps/s':>12s} {'ratio':>7s} "
        f"{'Thrust solve s':>15s} {'SB3 solve s':>12s} {'ratio':>7s}"
    )
    fmt = lambda v, spec: "—" if v is None else format(v, spec)  # noqa: E731
    for row in table:
        print(
            f"{row['algo'] + ' ' + row['env']:18s} {row['thrust_sps']:>15,.0f} {row['sb3_sps']:>12,.0f} "
            f"{row['sps_ratio']:>6.2f}x {fmt(row['thrust_solve_s'], '.1f'):>15s} {fmt(row['sb3_solve_s'], '.1f'):>12s} "
            f"{fmt(row['solve_time_ratio'], '.2f'):>6s}x"
        )


if __name__ == "__main__":
    main()
