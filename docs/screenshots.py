"""Screenshots of every dashboard view for docs/dashboard.md, taken in headless Debian Chromium.

    .venv/bin/python docs/screenshots.py [--out docs/img]

Trains a few short runs in a temporary runs folder (two PPO learning rates x 3 seeds on CartPole, a
DQN CartPole run), starts `thrust app` on a free loopback port over them, opens each tab and saves
`dashboard-<tab>.png`. Everything it starts is stopped by its process group.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from thrust_app.trainer import train
from thrust_app.web.browser import CHROMIUM, CHROMIUM_ARGS

TABS = ["New run", "Training", "Runs", "Compare", "Export & play", "Watch"]


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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def take(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        runs = Path(folder) / "runs"
        make_runs(runs)
        port = free_port()
        env = {**os.environ, "THRUST_RUNS_DIR": str(runs), "THRUST_EXPORT_DIR": str(Path(folder) / "export")}
        app = subprocess.Popen(
            [sys.executable, "-m", "thrust_app", "app", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 1100})
                deadline = time.time() + 90
                while True:
                    try:
                        page.goto(f"http://127.0.0.1:{port}/", timeout=5000)
                        page.get_by_text("Start training").wait_for(timeout=30_000)
                        break
                    except Exception:
                        if time.time() > deadline:
                            raise
                        time.sleep(1)
                for tab in TABS:
                    page.get_by_role("tab", name=tab).click()
                    time.sleep(4)  # charts render after the data arrives
                    path = out / f"dashboard-{tab.split()[0].lower()}.png"
                    page.screenshot(path=str(path), full_page=True)
                    print(f"wrote {path}")
                browser.close()
        finally:
            os.killpg(app.pid, signal.SIGTERM)
            app.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "img")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    take(args.out)


if __name__ == "__main__":
    main()
