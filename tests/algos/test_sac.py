"""SAC follows the learning-rate schedule on all three of its optimizers."""

from __future__ import annotations

import pytest
import torch

from thrust_app.algos import SAC, SACConfig
from thrust_app.envs.core import Box
from thrust_app.runs.files import load_checkpoint
from thrust_app.training.trainer import train


def test_linear_schedule_sets_every_optimizers_learning_rate():
    sac = SAC(
        (3,),
        Box((-2.0,), (2.0,), (1,)),
        SACConfig(learning_rate=1e-3, lr_schedule="linear", hidden=(8, 8)),
        torch.device("cpu"),
        seed=0,
    )
    sac.apply_schedules(0.25)
    for optimizer in (sac.actor_opt, sac.critic_opt, sac.alpha_opt):
        assert optimizer.param_groups[0]["lr"] == 1e-3 * 0.25


def test_a_run_with_a_linear_schedule_ends_with_a_small_learning_rate(tmp_path):
    train(
        "sac",
        "pendulum",
        timesteps=300,
        device="cpu",
        run_dir=tmp_path,
        eval_episodes=1,
        progress=False,
        log=lambda _: None,
        overrides={"learning_starts": 100, "hidden": "16,16", "lr_schedule": "linear", "learning_rate": 1e-3},
    )
    state = load_checkpoint(tmp_path / "last.pt")["algo"]
    for name in ("actor_opt", "critic_opt", "alpha_opt"):  # the last iteration ran with 1/300 of training left
        assert state[name]["param_groups"][0]["lr"] == pytest.approx(1e-3 / 300), name
