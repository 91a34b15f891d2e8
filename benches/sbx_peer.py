"""SBX (Stable-Baselines in JAX, `sbx-rl` 0.28) as a peer, on peers.py's pairs, in a venv of its own.

SBX is what an SB3 user installs for speed: SB3's API with JAX-compiled updates. Its venv
(`.bench/sbx-venv`) gets torch==2.13.0 first (SBX depends on SB3, which pulls a CUDA torch otherwise),
then sbx-rl with jax[cpu], then Thrust itself, so the peer's runs go through peers.py's own `run_sb3`
with the SB3 classes swapped for SBX's: the same env, zoo values, evaluation grid and clock on both
sides. Each run is one process pinned to one core (`sched_setaffinity`), the same core for both sides: JAX 0.10
computes on XLA threads of its own beside the Python thread, and even with SBX's one-thread `XLA_FLAGS` an
SBX run used 1.6 cores here unpinned, which made its TD3 twice as fast as on one. SBX pays JAX's compilation
of its update in every run, as SBX users do.

Thrust runs in its fastest CPU form (`FASTEST_UPDATE`: numba-compiled DQN and SAC, written-out PPO;
TD3 has its reference only) with numba's cache warm; what the first run on a machine pays to fill that
cache is measured separately (`cold_compile_s`: one run with an empty NUMBA_CACHE_DIR against a second
run on the filled one). Per pair: steps/s over the whole common stretch (SBX's compilation and Thrust's
cache load inside it) and over the steady stretch (from the first evaluation after updates began).

    python benches/peers.py --peer sbx [--seeds 5] [--only dqn,sac] [--quick] [--json PATH]
    python benches/sbx_peer.py LIB ALGO SEED BUDGET EVAL_EVERY STOP   # one run, as JSON (used by the above)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

from harness import peer_venv
from peers import EVAL_EVERY, EVAL_EVERY_BY_ALGO, PAIRS, QUICK_BUDGET, common_window_sps, run_sb3, run_thrust

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".bench" / "sbx-venv"
SBX = "sbx-rl==0.28.0"
#: In install order, one `pip install` each: torch pinned first, so SB3 (an SBX dependency) keeps the CPU build.
INSTALL_STEPS = [["torch==2.13.0"], [SBX, "jax[cpu]==0.10.2"], ["-e", str(ROOT)]]
#: SBX's one-XLA-thread flags (JAX still computes beside the Python thread with them: `one_run` also pins to one core).
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "XLA_FLAGS": XLA_ONE_THREAD}
ALGOS = ("ppo", "dqn", "sac", "td3")
#: Thrust's fastest CPU form of each update (`update` setting); TD3 runs its reference, the only form it has.
FASTEST_UPDATE = {"dqn": "numba", "sac": "numba"}


def venv_python() -> Path:
    """The SBX venv's python, created and filled on first use (a few minutes, mostly torch and jaxlib)."""
    return peer_venv(VENV, INSTALL_STEPS, f"{SBX} (JAX CPU) and Thrust")


def one_run(lib: str, algo: str, seed: int, budget: int, eval_every: int, stop: bool, env: dict | None = None) -> dict:
    """One run in a fresh process on one core: SBX in its venv, Thrust in this interpreter (cold-cache runs
    need a process of their own too)."""
    python = venv_python() if lib == "sbx" else Path(sys.executable)
    args = [str(python), __file__, lib, algo, str(seed), str(budget), str(eval_every), str(int(stop))]
    core = {max(os.sched_getaffinity(0))}
    out = subprocess.run(
        args,
        env={**os.environ, **ONE_THREAD, **(env or {})},
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, core),
    )
    if out.returncode != 0:
        raise RuntimeError(f"{lib} {algo} seed {seed} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def steady_window_sps(thrust: dict, sbx: dict, learning_starts: int) -> tuple[float, float] | None:
    """Each side's steps/s between the first evaluation after updates began and the last one both reached
    (None when fewer than two such evaluations): compilation and cache loads fall before that stretch."""
    k = min(len(thrust["evals"]), len(sbx["evals"]))
    first = next((i for i in range(k) if thrust["evals"][i][0] > learning_starts), None)
    if first is None or first >= k - 1:
        return None
    rate = lambda evals: (evals[k - 1][0] - evals[first][0]) / (evals[k - 1][1] - evals[first][1])  # noqa: E731
    return rate(thrust["evals"]), rate(sbx["evals"])


def cold_compile_s(algo: str, budget: int) -> float:
    """Seconds the first run on a machine spends filling numba's cache: a run on an empty cache folder
    minus a run of the same seed on the folder it filled."""
    with TemporaryDirectory() as cache:
        runs = [one_run("thrust", algo, 0, budget, budget, False, {"NUMBA_CACHE_DIR": cache}) for _ in range(2)]
    return runs[0]["train_s"] - runs[1]["train_s"]


def compare(algos: list[str], seeds: int, quick: bool) -> dict:
    """Thrust and SBX alternating per seed (Thrust, SBX, Thrust, SBX, ...); one row per algorithm."""
    rows, runs = [], []
    for algo in algos:
        budget = QUICK_BUDGET[algo] if quick else PAIRS[algo][3]
        eval_every = EVAL_EVERY_BY_ALGO.get(algo, EVAL_EVERY)
        learning_starts = PAIRS[algo][4].get("learning_starts", 0 if algo == "ppo" else 100)
        pairs = []
        for seed in range(seeds):
            thrust = one_run("thrust", algo, seed, budget, eval_every, not quick)
            sbx = one_run("sbx", algo, seed, budget, eval_every, not quick)
            pairs.append((thrust, sbx))
            runs += [
                {"lib": "thrust", "algo": algo, "seed": seed, **thrust},
                {"lib": "sbx", "algo": algo, "seed": seed, **sbx},
            ]
            print(f"{algo} seed {seed}: Thrust {thrust['sps']:,.0f} steps/s, SBX {sbx['sps']:,.0f} steps/s", flush=True)
        whole = [common_window_sps(t, s) for t, s in pairs]
        steady = [w for w in (steady_window_sps(t, s, learning_starts) for t, s in pairs) if w]
        rows.append(
            {
                "algo": algo,
                "env": PAIRS[algo][1],
                "thrust_update": FASTEST_UPDATE.get(algo, "handwritten" if algo == "ppo" else "reference"),
                "thrust_sps": statistics.median(t for t, _ in whole),
                "sbx_sps": statistics.median(s for _, s in whole),
                "ratio": statistics.median(t / s for t, s in whole),
                "ratios": [t / s for t, s in whole],
                "steady_ratio": statistics.median(t / s for t, s in steady) if steady else None,
                "solved": (sum(t["solve_s"] is not None for t, _ in pairs), sum(s["solve_s"] is not None for _, s in pairs)),
                "cold_compile_s": cold_compile_s(algo, QUICK_BUDGET[algo]) if algo in FASTEST_UPDATE else None,
                "seeds": seeds,
            }
        )
    return {"peer": SBX, "quick": quick, "table": rows, "runs": runs}


def print_table(result: dict) -> None:
    fmt = lambda v, spec: "—" if v is None else format(v, spec)  # noqa: E731
    print(
        f"\n{'pair':16s} {'Thrust update':>13s} {'Thrust steps/s':>15s} {'SBX steps/s':>12s} {'ratio':>7s} {'steady':>7s}  "
        "per seed  solved (Thrust, SBX)  numba cold s"
    )
    for row in result["table"]:
        print(
            f"{row['algo'] + ' ' + row['env']:16s} {row['thrust_update']:>13s} "
            f"{row['thrust_sps']:>15,.0f} {row['sbx_sps']:>12,.0f} "
            f"{row['ratio']:>6.2f}x {fmt(row['steady_ratio'], '.2f'):>6s}x  {', '.join(f'{r:.2f}' for r in row['ratios'])}  "
            f"{row['solved']}  {fmt(row['cold_compile_s'], '.1f')}"
        )


def main() -> None:
    """One run as a JSON line: `LIB ALGO SEED BUDGET EVAL_EVERY STOP` (LIB: thrust or sbx)."""
    lib, algo, seed, budget, eval_every, stop = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
    if lib == "sbx":
        result = run_sb3(algo, seed, budget, bool(stop), eval_every, library="sbx")
    else:
        import torch

        torch.set_num_threads(1)
        result = run_thrust(algo, seed, budget, bool(stop), eval_every, update=FASTEST_UPDATE.get(algo))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
