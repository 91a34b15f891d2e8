"""Validation: every algorithm on every Thrust env it fits, and under the settings users bring.

Not a test: these are full learning runs (one to two hours on 2 cores). Two tables, both written to
docs/validation.md (and the headline rows into the README between its `validation` markers):

- *presets*: every (algorithm, env) pair with Thrust's preset (`thrust_app/training/presets.py`);
- *settings*: each algorithm on its benchmark env (PPO, A2C, DQN on CartPole; SAC on Pendulum) under
  three sources of hyperparameters — Thrust's preset (the rl-baselines3-zoo's), CleanRL's script
  defaults, Stable-Baselines3's constructor defaults — translated field by field (`SETTINGS`), at the
  preset's step budget.

Every run evaluates 10 deterministic episodes every 5k steps (every 500 on the bandit) and records
when it first met its target; runs always use their whole budget, so the final evaluation also
shows whether a solved policy stays solved. Results accumulate in a JSON file, so an interrupted
validation continues where it stopped.

    python benches/validation.py                       # everything, 3 seeds, 2 jobs in parallel
    python benches/validation.py --only dqn:cartpole:cleanrl --seeds 1
    python benches/validation.py --only own            # the own-env section alone (recurrent, masks, spaces)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (algo, env, target return, what is asked) — a run meets its target once an evaluation reaches it.
PAIRS = [
    ("a2c", "bandit", 0.98, "accuracy >= 98%"),
    ("ppo", "bandit", 0.98, "accuracy >= 98%"),
    ("dqn", "bandit", 0.98, "accuracy >= 98%"),
    ("ppo", "cartpole", 475.0, "eval >= 475 within 100k steps"),
    ("a2c", "cartpole", 475.0, "eval >= 475 within 200k steps"),
    ("dqn", "cartpole", 475.0, "eval >= 475 within 50k steps"),
    ("sac", "pendulum", -200.0, "eval >= -200 within 20k steps"),
    ("td3", "pendulum", -200.0, "eval >= -200 within 20k steps"),
    ("ddpg", "pendulum", -200.0, "eval >= -200 within 20k steps"),
    ("ppo", "pendulum", -300.0, "eval >= -300 within 100k steps"),
    ("a2c", "pendulum", -300.0, "eval >= -300 within 1M steps"),
    ("ppo", "snake", None, "clearly beats a random policy"),
    ("dqn", "snake", None, "clearly beats a random policy"),
    ("ppo", "MinAtar/Breakout-v1", 5.0, "eval >= 5 within 500k steps (random: 0.3)"),
    ("dqn", "MinAtar/Breakout-v1", 5.0, "eval >= 5 within 250k steps (random: 0.3)"),
]
#: "Your own env": memory, action masks and the spaces users bring (thrust_app/envs/tasks.py, the zoo's
#: velocity-free envs, gymnasium's Discrete-observation envs): (algo, env, settings, target, what is asked).
#: Settings "zoo": the pair's preset, or the algorithm's defaults where it has none; "memoryless": recurrent
#: PPO's preset values on feed-forward PPO (the fields PPO has), the same budget.
OWN_ENV_ROWS = [
    ("recurrent_ppo", "CartPoleNoVel-v1", "zoo", 450.0, "eval >= 450 within 100k (sb3-contrib's benchmark: 500)"),
    ("ppo", "CartPoleNoVel-v1", "memoryless", 450.0, "the same, no memory"),
    ("recurrent_ppo", "PendulumNoVel-v1", "zoo", -300.0, "eval >= -300 within 100k (sb3-contrib's, gSDE: -218)"),
    ("ppo", "PendulumNoVel-v1", "memoryless", -300.0, "the same, no memory"),
    ("recurrent_ppo", "ThrustTest/MaskedRecall-v0", "zoo", 9.0, "masks + memory: eval >= 9 of 10 (random legal: 3.3)"),
    ("ppo", "ThrustTest/MaskedChoice-v0", "zoo", 15.0, "masks: eval >= 15 of 20 (random legal: 6.7)"),
    ("dqn", "ThrustTest/MaskedChoice-v0", "zoo", 15.0, "masks: eval >= 15 of 20 (random legal: 6.7)"),
    ("ppo", "ThrustTest/Dials-v0", "zoo", 9.0, "MultiDiscrete actions: eval >= 9 of 10 (random: 3.6)"),
    ("ppo", "FrozenLake-v1", "zoo", 0.5, "Discrete observations: success >= 0.5 (slippery; random: 0.015)"),
    ("ppo", "Taxi-v4", "zoo", 0.0, "Discrete observations: eval >= 0 (random: about -770)"),
]
TARGETS = {(algo, env): target for algo, env, target, _ in PAIRS} | {(r[0], r[1]): r[3] for r in OWN_ENV_ROWS}
#: Budgets cut from the preset's where a full one does not fit this machine (MinAtar's presets: 5M steps).
BUDGETS = (
    {("ppo", "MinAtar/Breakout-v1"): 500_000, ("dqn", "MinAtar/Breakout-v1"): 250_000}
    | {(algo, env): 50_000 for algo, env in (("recurrent_ppo", "ThrustTest/MaskedRecall-v0"), ("ppo", "ThrustTest/Dials-v0"))}
    | {(algo, "ThrustTest/MaskedChoice-v0"): 50_000 for algo in ("ppo", "dqn")}
)

#: The env each algorithm is validated on under every settings source.
SETTINGS_ENV = {"ppo": "cartpole", "a2c": "cartpole", "dqn": "cartpole", "sac": "pendulum"}

#: Hyperparameters from other sources as Thrust config values, every field the source sets (on top of
#: Thrust's defaults, not the preset). "zoo" is the preset itself. Budgets stay the preset's; CleanRL's
#: schedules (lr annealing, the epsilon decay) are fractions of the budget, so they scale with it.
SETTINGS: dict[str, dict[str, dict]] = {
    "cleanrl": {
        # cleanrl/ppo.py: 4 envs x 128 steps, 4 minibatches (of 128), 4 epochs, lr 2.5e-4 annealed,
        # ent 0.01, clip_vloss with clip_coef 0.2, vf_coef 0.5 on 0.5 * MSE (= 0.25 here)
        "ppo": dict(
            n_envs=4,
            n_steps=128,
            batch_size=128,
            n_epochs=4,
            learning_rate=2.5e-4,
            lr_schedule="linear",
            gamma=0.99,
            gae_lambda=0.95,
            clip_range=0.2,
            clip_schedule="constant",
            clip_range_vf=0.2,
            ent_coef=0.01,
            vf_coef=0.25,
            max_grad_norm=0.5,
            normalize_advantage=True,
            hidden=(64, 64),
        ),
        # cleanrl/dqn.py: MSE loss, 120-84 net, no gradient clipping, target copied every 500 steps
        "dqn": dict(
            n_envs=1,
            learning_rate=2.5e-4,
            buffer_size=10_000,
            learning_starts=10_000,
            batch_size=128,
            train_freq=10,
            gradient_steps=1,
            target_update_interval=500,
            tau=1.0,
            gamma=0.99,
            exploration_fraction=0.5,
            exploration_initial_eps=1.0,
            exploration_final_eps=0.05,
            double_dqn=False,
            max_grad_norm=1e9,
            loss="mse",
            hidden=(120, 84),
        ),
        # cleanrl/sac_continuous_action.py: q lr 1e-3 (also the temperature's), 5k warm-up steps
        "sac": dict(
            n_envs=1,
            learning_rate=1e-3,
            buffer_size=1_000_000,
            learning_starts=5_000,
            batch_size=256,
            train_freq=1,
            gradient_steps=1,
            tau=0.005,
            gamma=0.99,
            init_alpha=1.0,
            auto_alpha=True,
            hidden=(256, 256),
        ),
    },
    "sb3": {
        "ppo": dict(
            n_envs=1,
            n_steps=2048,
            batch_size=64,
            n_epochs=10,
            learning_rate=3e-4,
            lr_schedule="constant",
            gamma=0.99,
            gae_lambda=0.95,
            clip_range=0.2,
            clip_schedule="constant",
            clip_range_vf=0.0,
            ent_coef=0.0,
            vf_coef=0.5,
            max_grad_norm=0.5,
            normalize_advantage=True,
            hidden=(64, 64),
        ),
        "a2c": dict(
            n_envs=1,
            n_steps=5,
            learning_rate=7e-4,
            lr_schedule="constant",
            gamma=0.99,
            gae_lambda=1.0,
            ent_coef=0.0,
            vf_coef=0.5,
            max_grad_norm=0.5,
            rms_prop_eps=1e-5,
            normalize_advantage=False,
            hidden=(64, 64),
        ),
        "dqn": dict(
            n_envs=1,
            learning_rate=1e-4,
            buffer_size=1_000_000,
            learning_starts=100,
            batch_size=32,
            train_freq=4,
            gradient_steps=1,
            target_update_interval=10_000,
            tau=1.0,
            gamma=0.99,
            exploration_fraction=0.1,
            exploration_initial_eps=1.0,
            exploration_final_eps=0.05,
            double_dqn=False,
            max_grad_norm=10.0,
            loss="huber",
            hidden=(64, 64),
        ),
        "sac": dict(
            n_envs=1,
            learning_rate=3e-4,
            buffer_size=1_000_000,
            learning_starts=100,
            batch_size=256,
            train_freq=1,
            gradient_steps=1,
            tau=0.005,
            gamma=0.99,
            init_alpha=1.0,
            auto_alpha=True,
            hidden=(256, 256),
        ),
    },
}

#: What a source sets that Thrust cannot express, said under the table.
SETTINGS_GAPS = {
    ("cleanrl", "ppo"): "value clipping is CleanRL's max(clipped, unclipped) loss; Thrust's clip_range_vf is SB3's "
    "(clipped only)",
    ("cleanrl", "dqn"): "CleanRL acts epsilon-greedily from step 0; Thrust's warm-up (learning_starts) acts uniformly "
    "at random",
    ("cleanrl", "sac"): "CleanRL's actor lr is 3e-4 and its actor updates twice every second step; Thrust has one lr "
    "(1e-3, CleanRL's q lr) and updates the actor every step",
    ("cleanrl", "a2c"): "CleanRL has no A2C",
}

SOURCE_NAMES = {"zoo": "Thrust preset (zoo)", "cleanrl": "CleanRL defaults", "sb3": "SB3 defaults"}
#: The own-env section's settings names.
OWN_SOURCE_NAMES = {"zoo": "preset (or defaults)", "memoryless": "recurrent preset, no memory"}


def job_overrides(algo: str, env: str, source: str) -> dict:
    """The --set values of a job: none for the preset; otherwise every field the preset sets, reset to
    Thrust's default, then the source's values."""
    if source == "zoo":
        return {}
    from thrust_app.algos import get_algo
    from thrust_app.training.presets import get_preset
    from thrust_app.training.run_spec import resolve_env_name

    if source == "memoryless":
        fields = vars(get_algo(algo).Config())
        return {k: v for k, v in get_preset("recurrent_ppo", resolve_env_name(env)).config.items() if k in fields}

    defaults = get_algo(algo).Config()
    preset = get_preset(algo, resolve_env_name(env))
    return {**{key: getattr(defaults, key) for key in preset.config}, **SETTINGS[source][algo]}


def run_one(job: tuple[str, str, str, int]) -> dict:
    from harness import stop_if_signalled

    from thrust_app.algos.base import NumpyPolicy
    from thrust_app.envs.pipeline import Pipeline
    from thrust_app.runs.files import read_jsonl
    from thrust_app.training.evaluation import evaluate
    from thrust_app.training.presets import get_preset
    from thrust_app.training.run_spec import resolve_env_name
    from thrust_app.training.trainer import load_policy, train

    algo, env, source, seed = job
    target = TARGETS[(algo, env)]
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        summary = stop_if_signalled(
            train(
                algo,
                env,
                timesteps=BUDGETS.get((algo, env), get_preset(algo, resolve_env_name(env)).timesteps),
                seed=seed,
                device="cpu",
                run_dir=run_dir,
                overrides=job_overrides(algo, env, source),
                eval_every=500 if env == "bandit" else 5000,
                eval_episodes=10,
                progress=False,
                log=lambda _: None,
            )
        )
        records = read_jsonl(run_dir / "metrics.jsonl")
        final_episodes = 1000 if env == "bandit" else 50
        spec, policy = load_policy(run_dir)
        final = evaluate(NumpyPolicy(policy), spec.env, final_episodes, seed=2_000_000, pipeline=Pipeline.of(spec.config))
    evals = [r for r in records if r["kind"] == "eval"]
    met = next((r for r in evals if target is not None and r["eval_mean"] >= target), None)
    train_returns = [ret for r in records if r["kind"] == "train" for ret in r["episode_returns"]]
    return {
        "algo": algo,
        "env": env,
        "source": source,
        "seed": seed,
        "timesteps": summary["timesteps"],
        "wall_s": summary["wall_s"],
        "sps": summary["sps"],
        "evals": [(r["step"], r["eval_mean"]) for r in evals],
        "target": target,
        "target_met_at_step": met["step"] if met else None,
        "target_met_at_train_s": met["train_s"] if met else None,
        "train_return_last20": statistics.fmean(train_returns[-20:]) if train_returns else None,
        "final_mean": final.mean,
        "final_std": final.std,
        "final_episodes": final_episodes,
    }


def random_baseline(env: str, episodes: int = 200) -> float:
    """A uniformly random policy's mean return, in the env as the presets make it (MinAtar's pipeline)."""
    from thrust_app.envs import env_spaces
    from thrust_app.envs.core import Discrete
    from thrust_app.envs.pipeline import Pipeline
    from thrust_app.training.evaluation import evaluate
    from thrust_app.training.presets import get_preset
    from thrust_app.training.run_spec import resolve_env_name

    pipeline = Pipeline.of(get_preset("ppo", resolve_env_name(env)).config)
    space = env_spaces(env, pipeline)[1]
    rng = random.Random(0)
    assert isinstance(space, Discrete)
    act = lambda obs: [rng.randrange(space.n) for _ in obs]  # noqa: E731
    return evaluate(act, env, episodes, seed=3_000_000, pipeline=pipeline).mean


def met_cell(rows: list[dict], key: str, fmt: str) -> str:
    """Median over the seeds that met the target, with how many did when not all."""
    if rows[0]["target"] is None:
        return "—"
    done = [r[key] for r in rows if r[key] is not None]
    if not done:
        return f"**not met** (0/{len(rows)})"
    text = format(statistics.median(done), fmt)
    return text if len(done) == len(rows) else f"{text} (**{len(done)}/{len(rows)} met**)"


def value_format(env: str):
    return (lambda v: f"{v:.1%}") if env == "bandit" else (lambda v: f"{v:.1f}")


def finals_cell(rows: list[dict]) -> str:
    fmt = value_format(rows[0]["env"])
    finals = [r["final_mean"] for r in rows]
    return f"{fmt(statistics.fmean(finals))} ({', '.join(fmt(v) for v in finals)})"


def rows_of(results: list[dict], algo: str, env: str, source: str) -> list[dict]:
    return sorted((r for r in results if (r["algo"], r["env"], r["source"]) == (algo, env, source)), key=lambda r: r["seed"])


def presets_table(results: list[dict]) -> list[str]:
    lines = [
        "| algo | env | target | steps | target met at (steps) | wall (s) | train steps/s | final eval |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for algo, env, _, note in PAIRS:
        rows = rows_of(results, algo, env, "zoo")
        if rows:
            lines.append(
                f"| {algo} | {env} | {note} | {rows[0]['timesteps']:,} | {met_cell(rows, 'target_met_at_step', ',.0f')} "
                f"| {statistics.median(r['wall_s'] for r in rows):.0f} | {statistics.median(r['sps'] for r in rows):,.0f} "
                f"| {finals_cell(rows)} |"
            )
    return lines


def own_env_table(results: list[dict]) -> list[str]:
    """The own-env rows: final-eval IQM with its 95% bootstrap CI over the seeds (`thrust compare`'s statistics)."""
    from thrust_app.runs.compare import group_stats

    lines = [
        "| algo | env | settings | target | steps | target met at (steps) | final eval IQM [95% CI] | each seed "
        "| train steps/s |",
        "|---|---|---|---|---:|---:|---|---|---:|",
    ]
    for algo, env, source, _, note in OWN_ENV_ROWS:
        rows = rows_of(results, algo, env, source)
        if rows:
            stats = group_stats(algo, [r["final_mean"] for r in rows])
            fmt = "{:.2f}" if env == "FrozenLake-v1" else "{:.1f}"
            lines.append(
                f"| {algo} | {env} | {OWN_SOURCE_NAMES[source]} | {note} | {rows[0]['timesteps']:,} "
                f"| {met_cell(rows, 'target_met_at_step', ',.0f')} | {fmt.format(stats.iqm)} "
                f"[{fmt.format(stats.iqm_ci[0])}, {fmt.format(stats.iqm_ci[1])}] "
                f"| {', '.join(fmt.format(r['final_mean']) for r in rows)} "
                f"| {statistics.median(r['sps'] for r in rows):,.0f} |"
            )
    return lines


def settings_table(results: list[dict]) -> list[str]:
    lines = [
        "| algo | env | settings | steps | target met at (steps) | train s to target | final eval "
        "| training return, last 20 episodes |",
        "|---|---|---|---:|---:|---:|---|---|",
    ]
    for algo, env in SETTINGS_ENV.items():
        for source in SOURCE_NAMES:
            rows = rows_of(results, algo, env, source)
            if source != "zoo" and algo not in SETTINGS[source]:
                lines.append(f"| {algo} | {env} | {SOURCE_NAMES[source]} | — | {SETTINGS_GAPS[(source, algo)]} | | | |")
            elif rows:
                last20 = ", ".join(f"{r['train_return_last20']:.0f}" for r in rows)
                lines.append(
                    f"| {algo} | {env} | {SOURCE_NAMES[source]} | {rows[0]['timesteps']:,} "
                    f"| {met_cell(rows, 'target_met_at_step', ',.0f')} | {met_cell(rows, 'target_met_at_train_s', '.1f')} "
                    f"| {finals_cell(rows)} | {last20} |"
                )
    return lines


def settings_notes() -> list[str]:
    lines = []
    for source in ("cleanrl", "sb3"):
        for algo, values in SETTINGS[source].items():
            sets = " ".join(f"{key}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for key, v in values.items())
            lines.append(f"- {SOURCE_NAMES[source]}, {algo}: `{sets}`")
    lines += ["", "What Thrust cannot express exactly:", ""]
    lines += [f"- {SOURCE_NAMES[source]}, {algo}: {text}" for (source, algo), text in SETTINGS_GAPS.items()]
    return lines


def write_markdown(results: list[dict], out: Path, seeds: int, when: str) -> None:
    host = f"{platform.machine()}, {mp.cpu_count()} cores, Python {platform.python_version()}"
    lines = [
        "# Validation",
        "",
        f"Produced by `python benches/validation.py` (`make validate`) on {when}; host: {host}; CPU, 1 torch "
        f"thread per run, two runs in parallel, {seeds} seeds (0..{seeds - 1}) per row.",
        "",
        "- *target met at*: the first evaluation (10 deterministic episodes, every 5k steps; 500 on the bandit) "
        "whose mean reached the target; median over the seeds that met it, and how many did when not all. "
        "A row that never met it says **not met**.",
        "- *final eval*: the policy at the end of the budget on fresh seeds (1000 episodes on the bandit, 50 "
        "elsewhere): mean over seeds and, in brackets, each seed.",
        "- *wall*: median seconds per run, evaluations included; *train s to target*: training seconds (evaluation "
        "excluded) until the evaluation that met the target. Two runs shared the 2 cores, so speeds here are "
        "lower than a lone run's (`docs/backends.md` has those).",
        "",
        "## Every algorithm on every env, Thrust's presets",
        "",
        *presets_table(results),
        "",
        "Random-policy baselines (same evaluation): "
        f"bandit {random_baseline('bandit'):.1%}, snake {random_baseline('snake'):.2f} "
        f"(mean return: +1 per food, -1 for dying), MinAtar Breakout {random_baseline('MinAtar/Breakout-v1'):.2f}.",
        "",
        "## The settings users bring",
        "",
        "Each algorithm on its benchmark env under three sources of hyperparameters, at the preset's budget: "
        "Thrust's preset (the rl-baselines3-zoo's values; the same runs as above), CleanRL's script defaults "
        "and Stable-Baselines3's constructor defaults, translated to Thrust's fields as listed below.",
        "",
        *settings_table(results),
        "",
        "The settings, as `--set` values:",
        "",
        *settings_notes(),
        "",
    ]
    # the own-env section (written on its own, `own_env_section`) and the parity section (benches/parity.py) stay
    old = out.read_text() if out.exists() else ""
    kept = [m.group(0) for m in re.finditer(r"<!-- (own-env|parity):start -->.*?<!-- \1:end -->", old, re.S)]
    out.write_text("\n".join(lines) + "".join(f"\n{block}\n" for block in kept))


def own_env_section(results: list[dict], seeds: int, when: str) -> list[str]:
    return [
        "## Your own env: memory, action masks, spaces",
        "",
        f"Produced by `python benches/validation.py --only own` on {when}, {seeds} seeds per row. Recurrent PPO "
        "against feed-forward PPO on the zoo's velocity-free envs (sb3-contrib's RecurrentPPO benchmark), the "
        "action-mask and memory tasks of `thrust_app/envs/tasks.py`, a MultiDiscrete-action task, and gymnasium's "
        "Discrete-observation envs (one-hot, as SB3). Final eval: 50 fresh episodes per seed; its IQM over the "
        "seeds with a 95% percentile-bootstrap CI (`thrust compare`'s statistics).",
        "",
        *own_env_table(results),
    ]


def readme_rows(results: list[dict], when: str, seeds: int) -> list[str]:
    """The README's results rows that come from this validation."""

    def met(algo: str, env: str, source: str = "zoo") -> str:
        rows = rows_of(results, algo, env, source)
        return met_cell(rows, "target_met_at_step", ",.0f") if rows else "not run"

    def train_returns(algo: str, env: str, source: str) -> str:
        rows = rows_of(results, algo, env, source)
        return ", ".join(f"{r['train_return_last20']:.0f}" for r in rows) if rows else "not run"

    def final(algo: str, env: str) -> str:
        rows = rows_of(results, algo, env, "zoo")
        return value_format(env)(statistics.fmean(r["final_mean"] for r in rows)) if rows else "not run"

    return [
        f"| bandit, A2C / PPO / DQN (validation, {when}) | final accuracy {final('a2c', 'bandit')} / "
        f"{final('ppo', 'bandit')} / {final('dqn', 'bandit')} (random: {random_baseline('bandit'):.0%}) |",
        f"| CartPole, PPO / A2C / DQN, presets | eval >= 475 at {met('ppo', 'cartpole')} / {met('a2c', 'cartpole')} / "
        f"{met('dqn', 'cartpole')} steps (median of {seeds} seeds; budgets 100k / 200k / 50k) |",
        f"| CartPole at CleanRL's defaults, PPO / DQN | eval >= 475 at {met('ppo', 'cartpole', 'cleanrl')} / "
        f"{met('dqn', 'cartpole', 'cleanrl')} steps; DQN's training return over its last 20 episodes "
        f"{train_returns('dqn', 'cartpole', 'cleanrl')} (random policy: about 22) |",
        f"| CartPole at SB3's defaults, PPO / A2C / DQN | eval >= 475 at {met('ppo', 'cartpole', 'sb3')} / "
        f"{met('a2c', 'cartpole', 'sb3')} / {met('dqn', 'cartpole', 'sb3')} steps |",
        f"| Pendulum, SAC preset / CleanRL / SB3 | eval >= -200 at {met('sac', 'pendulum')} / "
        f"{met('sac', 'pendulum', 'cleanrl')} / {met('sac', 'pendulum', 'sb3')} steps (budget 20k) |",
        f"| Pendulum, PPO preset | eval >= -300 at {met('ppo', 'pendulum')} steps (budget 100k) |",
        f"| Snake, DQN / PPO | {final('dqn', 'snake')} / {final('ppo', 'snake')} food per episode "
        f"(random policy: {random_baseline('snake'):.2f}) |",
        f"| MinAtar Breakout, PPO / DQN (500k / 250k steps) | final eval {final('ppo', 'MinAtar/Breakout-v1')} / "
        f"{final('dqn', 'MinAtar/Breakout-v1')}; eval >= 5 at {met('ppo', 'MinAtar/Breakout-v1')} / "
        f"{met('dqn', 'MinAtar/Breakout-v1')} steps (random policy: {random_baseline('MinAtar/Breakout-v1'):.2f}) |",
    ]


def own_env_readme_rows(results: list[dict]) -> list[str]:
    """The README's rows from the own-env section."""

    def final(algo: str, env: str, source: str = "zoo") -> str:
        rows = rows_of(results, algo, env, source)
        return f"{statistics.fmean(r['final_mean'] for r in rows):.1f}" if rows else "not run"

    return [
        f"| CartPole, velocities hidden (CartPoleNoVel-v1, 100k steps), recurrent PPO / feed-forward PPO | final eval "
        f"{final('recurrent_ppo', 'CartPoleNoVel-v1')} / {final('ppo', 'CartPoleNoVel-v1', 'memoryless')} |",
        f"| Masks and memory together (MaskedRecall, recurrent PPO, 50k steps) | final eval "
        f"{final('recurrent_ppo', 'ThrustTest/MaskedRecall-v0')} of 10 (random legal play: 3.3) |",
    ]


def write_readme(results: list[dict], readme: Path, when: str, seeds: int) -> None:
    """Replace the rows between the README's validation markers."""
    from harness import replace_block

    replace_block(readme, "validation", readme_rows(results, when, seeds))


def all_jobs(seeds: int) -> list[tuple[str, str, str, int]]:
    pairs = [(algo, env, "zoo") for algo, env, _, _ in PAIRS]
    for source in ("cleanrl", "sb3"):
        pairs += [(algo, env, source) for algo, env in SETTINGS_ENV.items() if algo in SETTINGS[source]]
    pairs += [(algo, env, source) for algo, env, source, _, _ in OWN_ENV_ROWS]
    return [(*pair, seed) for pair in pairs for seed in range(seeds)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (each uses one torch thread)")
    parser.add_argument("--only", nargs="*", default=None, help="algo:env[:settings] rows, e.g. dqn:cartpole:cleanrl")
    parser.add_argument("--results", type=Path, default=ROOT / ".bench" / "validation.json")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "validation.md")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    args = parser.parse_args()
    from harness import hold_results, save_results

    args.results.parent.mkdir(parents=True, exist_ok=True)
    hold_results(args.results)  # one writer per results file, until this process ends
    results = json.loads(args.results.read_text()) if args.results.exists() else []
    done = {(r["algo"], r["env"], r["source"], r["seed"]) for r in results}
    own = {(algo, env, source) for algo, env, source, _, _ in OWN_ENV_ROWS}

    def wanted(job: tuple) -> bool:  # `own` names the own-env section
        name = f"{job[0]}:{job[1]}:{job[2]}"
        return args.only is None or any(name.startswith(o) or (o == "own" and job[:3] in own) for o in args.only)

    todo = [job for job in all_jobs(args.seeds) if job not in done and wanted(job)]
    # longest first, so the pool does not end on one long run
    todo.sort(key=lambda job: job[1] in ("snake", "pendulum", "MinAtar/Breakout-v1", "PendulumNoVel-v1"), reverse=True)
    print(f"{len(todo)} runs to do, {len(done)} already in {args.results}", flush=True)
    start = time.monotonic()
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        for index, result in enumerate(pool.imap_unordered(run_one, todo), 1):
            results.append(result)
            save_results(args.results, results)
            print(
                f"[{index}/{len(todo)}, {time.monotonic() - start:.0f} s] {result['algo']} {result['env']} "
                f"{result['source']} seed {result['seed']}: final {result['final_mean']:.3f}, target met at "
                f"{result['target_met_at_step']}, {result['wall_s']:.0f} s",
                flush=True,
            )
    kept = [r for r in results if r["seed"] < args.seeds]
    when = time.strftime("%Y-%m-%d")
    is_own = lambda r: (r["algo"], r["env"], r["source"]) in own  # noqa: E731
    if any(is_own(r) for r in kept):
        from harness import replace_block

        replace_block(args.out, "own-env", own_env_section([r for r in kept if is_own(r)], args.seeds, when))
        replace_block(args.readme, "own-env", own_env_readme_rows([r for r in kept if is_own(r)]))
    if any(not is_own(r) for r in kept):  # the other tables only from a results file that holds their runs
        write_markdown([r for r in kept if not is_own(r)], args.out, args.seeds, when)
        write_readme([r for r in kept if not is_own(r)], args.readme, when, args.seeds)
    print(f"wrote {args.out} and the results rows of {args.readme}")


if __name__ == "__main__":
    sys.exit(main())
