"""CleanRL as a peer: its own `ppo.py` and `dqn.py`, installed from PyPI into a venv of their own.

PyPI's `cleanrl` is release 0.4.8 (2021; GitHub's master is not on PyPI). Its scripts use the old
`gym` API (0.21, `gym.wrappers.Monitor`) and, for `ppo.py`, Stable-Baselines3 1.x's vec envs, so the
venv (`.bench/cleanrl-venv`) gets exactly that: torch==2.13.0 first, setuptools 65 (gym 0.21's
setup.py does not build with newer ones), gym==0.21.0, numpy<2, Stable-Baselines3 1.6.2, pandas,
tensorboard, then cleanrl==0.4.8 without its unused extras (wandb, seaborn). Nothing of CleanRL is
copied into Thrust: the scripts run as they ship, at their own defaults, with two command-line
changes, said in the table: `--cuda false` and `--gym-id CartPole-v1` (their default is
CartPole-v0, whose 200-step limit Thrust's CartPole does not have).

CleanRL's scripts log each episode's return to TensorBoard; their speed is taken from those
events' wall times (first to last episode, so Python and torch start-up are not counted) and
Thrust's from its own clock, evaluation excluded. Thrust runs the same algorithm with CleanRL's
values translated field by field (`THRUST_SETTINGS`).
"""

from __future__ import annotations

import os
import statistics
import subprocess
from pathlib import Path
from tempfile import TemporaryDirectory

from harness import peer_venv, stop_if_signalled
from validation import SETTINGS

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".bench" / "cleanrl-venv"
CLEANRL = "cleanrl==0.4.8"
#: In install order; each entry is one `pip install` (gym needs the old setuptools already in place).
INSTALL_STEPS = [
    ["torch==2.13.0"],
    ["setuptools==65.5.0", "wheel<0.40", "numpy<2"],
    ["--no-build-isolation", "gym==0.21.0"],
    ["--no-deps", "stable-baselines3==1.6.2", "cloudpickle", CLEANRL],
    ["pandas<2.3", "matplotlib", "tensorboard"],
]
COMMON_ARGS = ["--cuda", "false", "--gym-id", "CartPole-v1"]
#: --quick budgets: a smoke run (DQN's just past its 10k warm-up steps, so a few updates are timed).
QUICK_BUDGET = {"ppo": 20_000, "dqn": 12_000}

#: CleanRL 0.4.8's script defaults as Thrust config values, with each script's default budget: the
#: validation's CleanRL settings (those of CleanRL's current scripts) with what 0.4.8 sets differently.
THRUST_SETTINGS = {
    # ppo.py 0.4.8: Adam lr 3e-4 (current: 2.5e-4); the rest as now
    "ppo": (100_000, {**SETTINGS["cleanrl"]["ppo"], "learning_rate": 3e-4}),
    # dqn.py 0.4.8: a gradient step of batch 32 per env step after 10k, lr 7e-4, epsilon over 80% of the
    # budget, gradients clipped at 0.5 (current: batch 128 every 10 steps, lr 2.5e-4, 50%, no clipping)
    "dqn": (
        20_000,
        {
            **SETTINGS["cleanrl"]["dqn"],
            "learning_rate": 7e-4,
            "batch_size": 32,
            "train_freq": 1,
            "exploration_fraction": 0.8,
            "max_grad_norm": 0.5,
        },
    ),
}


def venv_python() -> Path:
    """The CleanRL venv's python, created and filled on first use (a few minutes, mostly torch)."""
    return peer_venv(VENV, INSTALL_STEPS, f"{CLEANRL} and its 2021-era dependencies")


def script(name: str) -> Path:
    site = subprocess.run(
        [str(venv_python()), "-c", "import cleanrl, os; print(os.path.dirname(cleanrl.__file__))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return Path(site) / f"{name}.py"


def episode_events(run_root: Path) -> list[tuple[float, int, float]]:
    """(wall time, step, return) of every episode CleanRL logged under `run_root`."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (folder,) = list((run_root / "runs").iterdir())
    events = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    events.Reload()
    return [(e.wall_time, e.step, e.value) for e in events.Scalars("charts/episode_reward")]


def run_cleanrl(algo: str, seed: int, budget: int) -> dict:
    """One run of CleanRL's `algo`.py at its defaults (budget aside), one torch thread."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    args = [str(venv_python()), str(script(algo)), *COMMON_ARGS, "--seed", str(seed), "--total-timesteps", str(budget)]
    with TemporaryDirectory() as tmp:
        subprocess.run(args, cwd=tmp, env=env, check=True, stdout=subprocess.DEVNULL)
        events = episode_events(Path(tmp))
    (t0, step0, _), (t1, step1, _) = events[0], events[-1]
    return {
        "steps": budget,
        "sps": (step1 - step0) / (t1 - t0),
        "train_return_last20": statistics.fmean(ret for _, _, ret in events[-20:]),
    }


def run_thrust(algo: str, seed: int, budget: int) -> dict:
    """The same algorithm in Thrust with CleanRL's values, on Thrust's CartPole (CartPole-v1's dynamics)."""
    from thrust_app.runs.files import read_jsonl
    from thrust_app.training.trainer import train

    with TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        summary = stop_if_signalled(
            train(
                algo,
                "thrust/CartPole-v0",
                timesteps=budget,
                seed=seed,
                device="cpu",
                run_dir=run_dir,
                overrides=THRUST_SETTINGS[algo][1],
                eval_every=budget,
                progress=False,
                log=lambda _: None,
            )
        )
        returns = [ret for r in read_jsonl(run_dir / "metrics.jsonl") if r["kind"] == "train" for ret in r["episode_returns"]]
    return {"steps": summary["timesteps"], "sps": summary["sps"], "train_return_last20": statistics.fmean(returns[-20:])}


def compare(algos: list[str], seeds: int, quick: bool) -> list[dict]:
    """Thrust and CleanRL alternating per seed; one row per algorithm."""
    table = []
    for algo in algos:
        budget = QUICK_BUDGET[algo] if quick else THRUST_SETTINGS[algo][0]
        pairs = []
        for seed in range(1, seeds + 1):
            thrust, cleanrl = run_thrust(algo, seed, budget), run_cleanrl(algo, seed, budget)
            pairs.append((thrust, cleanrl))
            print(
                f"{algo} seed {seed}: Thrust {thrust['sps']:,.0f} steps/s (return {thrust['train_return_last20']:.0f}), "
                f"CleanRL {cleanrl['sps']:,.0f} steps/s (return {cleanrl['train_return_last20']:.0f})",
                flush=True,
            )
        table.append(
            {
                "algo": algo,
                "budget": budget,
                "thrust_sps": statistics.median(t["sps"] for t, _ in pairs),
                "cleanrl_sps": statistics.median(c["sps"] for _, c in pairs),
                "sps_ratio": statistics.median(t["sps"] / c["sps"] for t, c in pairs),
                "thrust_returns": [t["train_return_last20"] for t, _ in pairs],
                "cleanrl_returns": [c["train_return_last20"] for _, c in pairs],
            }
        )
    return table


def print_table(table: list[dict]) -> None:
    print(f"\n{'pair':14s} {'budget':>8s} {'Thrust steps/s':>15s} {'CleanRL steps/s':>16s} {'ratio':>7s}  last-20 returns")
    for row in table:
        returns = lambda values: "/".join(f"{v:.0f}" for v in values)  # noqa: E731
        print(
            f"{row['algo'] + ' CartPole':14s} {row['budget']:>8,} {row['thrust_sps']:>15,.0f} {row['cleanrl_sps']:>16,.0f} "
            f"{row['sps_ratio']:>6.2f}x  Thrust {returns(row['thrust_returns'])}, CleanRL {returns(row['cleanrl_returns'])}"
        )
