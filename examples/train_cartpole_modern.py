"""Train PPO on CartPole with the zoo's tuned settings and print the mean evaluation return.

The seed's second example. TOTAL_TIMESTEPS sets the budget (default 40000, as in the seed):

    python examples/train_cartpole_modern.py
    TOTAL_TIMESTEPS=100000 THRUST_DEVICE=cpu python examples/train_cartpole_modern.py
"""

from __future__ import annotations

import os
import tempfile

from thrust_app.training.trainer import train


def main() -> None:
    timesteps = int(os.environ.get("TOTAL_TIMESTEPS", "40000"))
    device = os.environ.get("THRUST_DEVICE", "auto")
    seed = int(os.environ.get("SEED", "0"))
    with tempfile.TemporaryDirectory() as runs:
        summary = train(
            "ppo", "cartpole", timesteps=timesteps, seed=seed, device=device, run_dir=f"{runs}/ppo", eval_episodes=20
        )
    print(
        f"mean return {summary['eval_mean']:.1f} +- {summary['eval_std']:.1f} over 20 episodes after "
        f"{summary['timesteps']:,} steps ({summary['wall_s']:.1f} s on {summary['device']}, "
        f"{summary['sps']:,.0f} steps/s)"
    )


if __name__ == "__main__":
    main()
