"""Training speed of two Thrust source trees, side by side: did a change (a refactor, say) move it?

Each round trains every zoo pair (its preset, one torch thread, evaluation excluded from steps/s) once
with tree A and once with tree B, each in its own process with that tree first on PYTHONPATH, A and B
alternating within the round and their order swapped every other round (this host's speed drifts
within seconds, so only ratios taken side by side mean anything). Reports each pair's median training
steps/s per tree and the median of the per-round ratios B/A.

    python benches/tree_ab.py OLD_CHECKOUT NEW_CHECKOUT [--rounds 5] [--timesteps 20000]

e.g. with `git worktree add /tmp/old <commit>` for the old side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

#: The zoo pairs: (algo, env), each trained with its default preset.
PAIRS = (("ppo", "cartpole"), ("a2c", "cartpole"), ("dqn", "cartpole"), ("sac", "pendulum"))

#: One run in a child process: the summary's training steps/s on stdout.
CHILD = """
import json, sys
try:
    from thrust_app.training.trainer import train
except ImportError:  # a tree from before the package was split into folders
    from thrust_app.trainer import train
summary = train(sys.argv[1], sys.argv[2], timesteps=int(sys.argv[3]), seed=0, device="cpu", run_dir=sys.argv[4],
                eval_every=10**9, eval_episodes=1, progress=False, log=lambda _: None)
print(json.dumps({"sps": summary["sps"], "file": __import__("thrust_app").__file__}))
"""


def train_sps(tree: Path, algo: str, env: str, timesteps: int) -> float:
    """Training steps/s of one run of `algo` on `env` with the source in `tree`."""
    environment = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, algo, env, str(timesteps), str(Path(folder) / "run")],
            capture_output=True,
            text=True,
            env=environment,
            cwd=folder,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {algo} {env} failed: {done.stderr.strip().splitlines()[-1]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if not result["file"].startswith(str(tree)):
        raise SystemExit(f"{tree} was not the tree imported ({result['file']}): is thrust_app installed non-editably?")
    return result["sps"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree_a", type=Path, help="the first checkout (the baseline)")
    parser.add_argument("tree_b", type=Path, help="the second checkout (the change)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--timesteps", type=int, default=20_000, help="env steps per run (SAC: a tenth of it)")
    args = parser.parse_args()
    trees = (args.tree_a.resolve(), args.tree_b.resolve())
    sps: dict[tuple[str, str], dict[Path, list[float]]] = {pair: {tree: [] for tree in trees} for pair in PAIRS}
    for round_index in range(args.rounds):
        order = trees if round_index % 2 == 0 else trees[::-1]
        for algo, env in PAIRS:
            steps = args.timesteps // 10 if algo == "sac" else args.timesteps
            for tree in order:
                sps[(algo, env)][tree].append(train_sps(tree, algo, env, steps))
        print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr)
    print(f"| pair | {trees[0].name} steps/s | {trees[1].name} steps/s | ratio B/A (median of rounds) | range |")
    print("|---|---:|---:|---:|---|")
    for (algo, env), by_tree in sps.items():
        a, b = by_tree[trees[0]], by_tree[trees[1]]
        ratios = [new / old for old, new in zip(a, b, strict=True)]
        print(
            f"| {algo} {env} | {statistics.median(a):,.0f} | {statistics.median(b):,.0f} | "
            f"{statistics.median(ratios):.3f} | {min(ratios):.3f}-{max(ratios):.3f} |"
        )


if __name__ == "__main__":
    main()
