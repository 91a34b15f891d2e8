"""Screenshots of every dashboard view for docs/dashboard.md, taken in headless Debian Chromium.

    .venv/bin/python docs/screenshots.py [--out docs/img]

Trains a few short runs in a temporary runs folder (two PPO learning rates x 3 seeds on CartPole, a
DQN CartPole run, a 4-trial x 2-seed learning-rate sweep), starts `thrust app` on a free loopback
port over them, opens each tab and saves `dashboard-<tab>.png` (thrust_app.web.browser.dashboard_page
starts and stops the dashboard).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from thrust_app.training.trainer import train
from thrust_app.web.browser import dashboard_page

TABS = ["New run", "Training", "Runs", "Compare", "Sweeps", "Export & play", "Watch"]


def make_runs(root: Path) -> None:
    for lr in ("1e-3", "1e-4"):
        for seed in range(3):
            train(
                "ppo",
                "cartpole",
                timesteps=12_288,
                seed=seed,
                run_dir=root / f"ppo-cartpole-lr{lr}-s{seed}",
                eval_every=2048,
                eval_episodes=5,
                overrides={"learning_rate": lr},
                progress=False,
                log=lambda _: None,
            )
    train(
        "dqn",
        "cartpole",
        timesteps=6_000,
        seed=0,
        run_dir=root / "dqn-cartpole-s0",
        eval_every=1000,
        eval_episodes=5,
        overrides={"learning_starts": 500},
        progress=False,
        log=lambda _: None,
    )


def make_sweep(root: Path) -> None:
    """A small learning-rate search over 2 seeds, for the Sweeps tab."""
    from thrust_app.sweeps.launch import sweep

    spec = root.parent / "lr.yaml"
    spec.write_text(
        "name: ppo-cartpole-lr\nalgo: ppo\nenv: cartpole\ntimesteps: 12288\nbase: {n_steps: 32}\n"
        "search: {learning_rate: {type: loguniform, low: 1.0e-4, high: 3.0e-3}}\n"
        "trials: 4\nseeds: 2\neval_every: 2048\neval_episodes: 5\n"
    )
    sweep(spec, runs_root=root, log=lambda _: None)


def take(out: Path) -> None:
    with tempfile.TemporaryDirectory() as folder:
        runs = Path(folder) / "runs"
        make_runs(runs)
        make_sweep(runs)
        env = {**os.environ, "THRUST_RUNS_DIR": str(runs), "THRUST_EXPORT_DIR": str(Path(folder) / "export")}
        with dashboard_page(env) as page:
            for tab in TABS:
                page.get_by_role("tab", name=tab).click()
                time.sleep(4)  # charts render after the data arrives
                path = out / f"dashboard-{tab.split()[0].lower()}.png"
                page.screenshot(path=str(path), full_page=True)
                print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "img")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    take(args.out)


if __name__ == "__main__":
    main()
