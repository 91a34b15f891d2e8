"""Seeds as a batch against seeds as processes: N seeds of PPO CartPole (the zoo preset) trained by
`thrust train --seeds` (one process, the nets stacked) and by `thrust sweep` (`seeds: N`, the embedded
Optuna engine, one process per seed, as many at a time as there are cores), alternating A B A B.

    python benches/batched_seeds.py [--seeds 1,8,32,128] [--timesteps 25600] [--rounds 2] [--env CartPole-v1]
                                    [--workers CORES] [--json .bench/batched_seeds.json] [--write-docs]

Both sides train the same runs: the preset's settings and evaluations (every timesteps/20, 10 episodes), one
torch thread per lone run and `--workers` threads for the batch (the whole machine on either side). Reported:
wall time from the command's start to its end (process starts, imports and evaluations included), the
aggregate env-steps/s (seeds x timesteps / wall), their ratio, and each side's final evaluations over the
seeds (mean, and IQM with its 95% bootstrap CI from `thrust compare`'s statistics) as the check that both
trained the same thing. `--write-docs` puts the table into docs/backends.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import replace_block

from thrust_app.runs.compare import group_stats

ROOT = Path(__file__).resolve().parent.parent


def final_evals(folder: Path) -> list[float]:
    """The final evaluation of every run under `folder`."""
    return [json.loads(path.read_text())["eval_mean"] for path in sorted(folder.rglob("summary.json"))]


def batched(seeds: int, timesteps: int, env: str, workers: int, folder: Path) -> float:
    """Wall time of `thrust train ppo ENV --seeds 0-(N-1)` in a fresh process."""
    started = time.perf_counter()
    command = [sys.executable, "-m", "thrust_app", "train", "ppo", env, "--seeds", f"0-{seeds - 1}", "--quiet"]
    command += ["--timesteps", str(timesteps), "--runs-root", str(folder), "--torch-threads", str(workers), "--device", "cpu"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def lone(seeds: int, timesteps: int, env: str, workers: int, folder: Path) -> float:
    """Wall time of `thrust sweep` of one trial (the preset's own values) and N seeds on `workers` processes."""
    spec = folder / "seeds.yaml"
    spec.write_text(
        f"name: seeds\nalgo: ppo\nenv: {env}\ntimesteps: {timesteps}\nseeds: {seeds}\ntrials: 1\nsampler: grid\n"
        f"workers: {workers}\nsearch:\n  gae_lambda: {{type: choice, values: [0.8]}}\n"  # the zoo's own value
    )
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "thrust_app", "sweep", str(spec), "--runs-root", str(folder / "runs")],
                   check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - started


def measure(seeds: int, args: argparse.Namespace) -> dict:
    """A B A B rounds of both sides for N seeds; the medians and the finals of the last round."""
    walls: dict[str, list[float]] = {"batched": [], "lone": []}
    finals: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for side, run in (("batched", batched), ("lone", lone)):
            with tempfile.TemporaryDirectory() as folder:
                walls[side].append(run(seeds, args.timesteps, args.env, args.workers, Path(folder)))
                finals[side] = final_evals(Path(folder))
    steps = seeds * args.timesteps
    row = {"seeds": seeds, "timesteps": args.timesteps, "env": args.env, "workers": args.workers}
    for side in walls:
        wall = sorted(walls[side])[len(walls[side]) // 2]
        stats = group_stats(side, finals[side])
        row[side] = {"walls_s": walls[side], "steps_per_s": steps / wall, "final_mean": stats.mean,
                     "final_iqm": {"iqm": stats.iqm, "low": stats.iqm_ci[0], "high": stats.iqm_ci[1]}}  # fmt: skip
    row["ratio"] = row["batched"]["steps_per_s"] / row["lone"]["steps_per_s"]
    return row


def with_ci(final: dict) -> str:
    """An IQM and its interval (none from one seed)."""
    interval = "" if final["low"] != final["low"] else f" [{final['low']:.1f}, {final['high']:.1f}]"  # NaN: one seed
    return f"{final['iqm']:.1f}{interval}"


def table(rows: list[dict]) -> list[str]:
    lines = [
        "| seeds | batched: env-steps/s | sweep of lone runs: env-steps/s | ratio | final eval IQM [95% CI], batched | lone |",
        "|---:|---:|---:|---:|---|---|",
    ]
    for row in rows:
        b, s = row["batched"], row["lone"]
        lines.append(
            f"| {row['seeds']} | {b['steps_per_s']:,.0f} | {s['steps_per_s']:,.0f} | **{row['ratio']:.2f}** | "
            f"{with_ci(b['final_iqm'])} | {with_ci(s['final_iqm'])} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,8,32,128", help="comma list of seed counts")
    parser.add_argument("--timesteps", type=int, default=25_600, help="env steps per seed (100 PPO iterations)")
    parser.add_argument("--rounds", type=int, default=2, help="A B rounds per seed count (the median is reported)")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="lone runs at a time; the batch's threads")
    parser.add_argument("--json", type=Path, default=ROOT / ".bench" / "batched_seeds.json")
    parser.add_argument("--write-docs", action="store_true", help="put the table into docs/backends.md")
    args = parser.parse_args()
    rows = []
    for seeds in (int(n) for n in args.seeds.split(",")):
        rows.append(measure(seeds, args))
        print("\n".join(table(rows)[-1:]), flush=True)
    print("\n".join(table(rows)))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(rows, indent=2))
    if args.write_docs:
        command = f"`python benches/batched_seeds.py --seeds {args.seeds} --timesteps {args.timesteps} --rounds {args.rounds}"
        command += f" --env {args.env}`"
        replace_block(ROOT / "docs" / "backends.md", "batched-seeds", [f"{command}, {args.workers} cores:", "", *table(rows)])


if __name__ == "__main__":
    main()
