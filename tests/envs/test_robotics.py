"""thrust_app/envs/robotics.py: gymnasium-robotics' Fetch envs start under the pinned MuJoCo (the joint-type fix),
SAC with HER trains on FetchReach briefly and its evaluation reports the success rate, and a missing package is
one line naming the extra."""

from __future__ import annotations

import sys

import mujoco
import numpy as np
import pytest

from thrust_app.envs import env_observation_parts, make_env
from thrust_app.envs.robotics import PlainJointTypes, joint_types_unequal, register_robotics
from thrust_app.training.trainer import train


def test_fetch_reach_starts_and_observes_its_goals():
    env = make_env("FetchReach-v4")
    obs, _ = env.reset(seed=0)
    _, reward, _, _, info = env.step(env.action_space.sample())
    assert obs.shape == (16,) and reward in (-1.0, 0.0) and "is_success" in info
    parts = env_observation_parts("FetchReach-v4")
    assert [(part.name, part.size) for part in parts] == [
        ("obs.achieved_goal", 3),
        ("obs.desired_goal", 3),
        ("obs.observation", 10),
    ]
    env.close()


def test_the_joint_types_fix_makes_the_members_compare_equal_both_ways():
    fixed = PlainJointTypes(mujoco)
    hinge = np.int32(int(mujoco.mjtJoint.mjJNT_HINGE))
    assert hinge in (fixed.mjtJoint.mjJNT_HINGE, fixed.mjtJoint.mjJNT_SLIDE)
    assert fixed.mj_name2id is mujoco.mj_name2id  # the rest of MuJoCo as it is
    assert joint_types_unequal(mujoco) == (hinge not in (mujoco.mjtJoint.mjJNT_HINGE,))


def test_sac_with_her_trains_on_fetch_reach_and_reports_its_success_rate(tmp_path):
    overrides = {"replay_buffer_class": "HerReplayBuffer", "learning_starts": 100, "hidden": "32,32", "batch_size": 32}
    summary = train(
        "sac", "FetchReach-v4", timesteps=300, seed=0, device="cpu", run_dir=tmp_path, overrides=overrides,
        eval_every=300, eval_episodes=2, progress=False, log=lambda _: None,
    )  # fmt: skip
    assert summary["status"] == "finished" and summary["eval_success_rate"] in (0.0, 0.5, 1.0)


def test_a_missing_gymnasium_robotics_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gymnasium_robotics", None)
    with pytest.raises(ModuleNotFoundError, match=r"FetchPush-v4 is a gymnasium-robotics env: pip install .*\[robotics\]"):
        register_robotics("FetchPush-v4")
