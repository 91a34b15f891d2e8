"""Validation: every algorithm on every Thrust env it fits, several seeds, written to docs/validation.md.

Not a test: these are full learning runs (about an hour on 2 cores). Each run uses the env's preset
budget, evaluates 10 deterministic episodes every 5k steps (every 500 on the bandit), and records
when it first met its target. Results accumulate in a JSON file, so an interrupted validation
continues where it stopped.

    python benches/validation.py                       # all pairs, 3 seeds, 2 jobs in parallel
    python benches/validation.py --only ppo:cartpole --seeds 1
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (algo, env, target return, what the issue asks) — a run meets its target once an evaluation reaches it.
PAIRS = [
    ("a2c", "bandit", 0.98, "accuracy >= 98%"),
    ("ppo", "bandit", 0.98, "accuracy >= 98%"),
    ("dqn", "bandit", 0.98, "accuracy >= 98%"),
    ("ppo", "cartpole", 475.0, "eval >= 475 within 100k steps"),
    ("a2c", "cartpole", 475.0, "eval >= 475 within 200k steps"),
    ("dqn", "cartpole", 475.0, "eval >= 475 within 50k steps"),
    ("sac", "pendulum", -200.0, "eval >= -200 within 20k steps"),
    ("ppo", "pendulum", -300.0, "eval >= -300 within 200k steps"),
    ("a2c", "pendulum", -300.0, "(no target; reported)"),
    ("ppo", "snake", None, "clearly beats a random policy"),
    ("dqn", "snake", None, "clearly beats a random policy"),
]


def run_one(job: tuple[str, str, int]) -> dict:
    import torch

    from thrust_app.algos.base import deterministic_action
    from thrust_app.evaluation import evaluate
    from thrust_app.runs import read_jsonl
    from thrust_app.trainer import load_policy, train

    algo, env, seed = job
    target = next(t for a, e, t, _ in PAIRS if (a, e) == (algo, env))
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        eval_every = 500 if env == "bandit" else 5000
        summary = train(
            algo,
            env,
            seed=seed,
            device="cpu",
            run_dir=run_dir,
            eval_every=eval_every,
            eval_episodes=10,
            progress=False,
            log=lambda _: None,
        )
        evals = [(r["step"], r["eval_mean"]) for r in read_jsonl(run_dir / "metrics.jsonl") if r["kind"] == "eval"]
        final_episodes = 1000 if env == "bandit" else 50
        spec, policy = load_policy(run_dir)

        def act(obs):
            with torch.no_grad():
                return deterministic_action(policy, torch.as_tensor(obs)).numpy()

        final = evaluate(act, spec.env, final_episodes, seed=2_000_000)
    met = next((step for step, mean in evals if target is not None and mean >= target), None)
    met_s = None
    if met is not None:
        met_s = summary["wall_s"] * met / summary["timesteps"]  # approximate: wall time is spread evenly
    return {
        "algo": algo,
        "env": env,
        "seed": seed,
        "timesteps": summary["timesteps"],
        "wall_s": summary["wall_s"],
        "sps": summary["sps"],
        "evals": evals,
        "target": target,
        "target_met_at_step": met,
        "target_met_at_s": met_s,
        "final_mean": final.mean,
        "final_std": final.std,
        "final_episodes": final_episodes,
    }


def random_baseline(env: str, episodes: int = 200) -> float:
    from thrust_app.envs.core import Discrete, make_core
    from thrust_app.evaluation import evaluate

    space = make_core(env).action_space
    rng = random.Random(0)
    assert isinstance(space, Discrete)
    return evaluate(lambda obs: [rng.randrange(space.n) for _ in obs], env, episodes, seed=3_000_000).mean


def fmt_steps(values: list, target) -> str:
    if target is None:
        return "—"
    done = [v for v in values if v is not None]
    if not done:
        return "not met"
    text = f"{statistics.median(done):,.0f}" if len(done) == len(values) else f"{len(done)}/{len(values)} met"
    return text


def write_markdown(results: list[dict], out: Path, seeds: int) -> None:
    lines = [
        "# Validation",
        "",
        "Every algorithm on every Thrust env it fits, each with its preset (`thrust_app/presets.py`), "
        f"{seeds} seeds, CPU, 1 torch thread. Produced by `python benches/validation.py` "
        f"on {time.strftime('%Y-%m-%d')}; host: {platform.machine()}, {mp.cpu_count()} cores, Python "
        f"{platform.python_version()}.",
        "",
        "- *target met at*: the first evaluation (10 deterministic episodes, every 5k steps; 500 on the bandit) "
        "whose mean reached the target; median over seeds, or how many seeds met it.",
        "- *final eval*: the trained policy on fresh seeds (1000 episodes on the bandit, 50 elsewhere), "
        "mean over seeds and, in brackets, each seed.",
        "- *wall*: median seconds per run, evaluations included. Two runs shared the 2 cores at all times, so "
        "steps/s here are lower than a lone run's (`docs/backends.md` has those).",
        "",
        "| algo | env | target | steps | target met at (steps) | wall (s) | train steps/s | final eval |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for algo, env, target, note in PAIRS:
        rows = [r for r in results if (r["algo"], r["env"]) == (algo, env)]
        if not rows:
            continue
        finals = [r["final_mean"] for r in rows]
        fmt = (lambda v: f"{v:.1%}") if env == "bandit" else (lambda v: f"{v:.1f}")
        solved = fmt_steps([r["target_met_at_step"] for r in rows], target)
        lines.append(
            f"| {algo} | {env} | {note} | {rows[0]['timesteps']:,} | {solved} "
            f"| {statistics.median(r['wall_s'] for r in rows):.0f} | {statistics.median(r['sps'] for r in rows):,.0f} "
            f"| {fmt(statistics.fmean(finals))} ({', '.join(fmt(v) for v in finals)}) |"
        )
    lines += [
        "",
        "Random-policy baselines (same evaluation): "
        f"bandit {random_baseline('bandit'):.1%}, snake {random_baseline('snake'):.2f} "
        "(mean return: +1 per food, -1 for dying).",
        "",
    ]
    out.write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (each uses one torch thread)")
    parser.add_argument("--only", nargs="*", default=None, help="algo:env pairs, e.g. ppo:cartpole")
    parser.add_argument("--results", type=Path, default=ROOT / ".bench" / "validation.json")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "validation.md")
    args = parser.parse_args()
    args.results.parent.mkdir(parents=True, exist_ok=True)
    results = json.loads(args.results.read_text()) if args.results.exists() else []
    done = {(r["algo"], r["env"], r["seed"]) for r in results}
    pairs = [(a, e) for a, e, _, _ in PAIRS if args.only is None or f"{a}:{e}" in args.only]
    todo = [(a, e, s) for a, e in pairs for s in range(args.seeds) if (a, e, s) not in done]
    print(f"{len(todo)} runs to do, {len(done)} already in {args.results}", flush=True)
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        for result in pool.imap_unordered(run_one, todo):
            results.append(result)
            args.results.write_text(json.dumps(results, indent=1))
            print(
                f"{result['algo']:4s} {result['env']:9s} seed {result['seed']}: final {result['final_mean']:.3f}, "
                f"target met at {result['target_met_at_step']}, {result['wall_s']:.0f} s",
                flush=True,
            )
    write_markdown([r for r in results if r["seed"] < args.seeds], args.out, args.seeds)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    sys.exit(main())
