"""The locomotion core (envs/core/locomotion.py) on the desktop's MuJoCo (envs/mujoco_physics.py) equals gymnasium's
v5 envs step for step: observation, reward, termination and the time limit, from the same start state."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from thrust_app.envs.core import EnvError
from thrust_app.envs.core.locomotion import GEOM_FIELDS, LOCOMOTION_TASKS
from thrust_app.envs.mujoco_physics import make_locomotion_core


def twins(env_id: str, seed: int):
    """The core reset with `seed`, and gymnasium's env put in the core's start state."""
    core, env = make_locomotion_core(env_id), gym.make(env_id)
    first = core.reset(seed=seed)
    env.reset(seed=seed)
    qpos, qvel = core.physics.state()
    env.unwrapped.set_state(np.array(qpos), np.array(qvel))
    np.testing.assert_array_equal(first, env.unwrapped._get_obs())
    return core, env


def step_both(core, env, action: np.ndarray):
    mine = core.step(action.tolist())
    obs, reward, terminated, truncated, _ = env.step(action)
    np.testing.assert_array_equal(mine.obs, obs)
    assert mine.reward == reward
    assert (mine.terminated, mine.truncated) == (terminated, truncated)
    return mine


@pytest.mark.parametrize("env_id", sorted(LOCOMOTION_TASKS))
def test_random_episodes_equal_gymnasiums_to_the_last_bit(env_id):
    ends = set()
    for seed in range(3):
        core, env = twins(env_id, seed)
        rng = np.random.default_rng(seed)
        result = None
        while result is None or not (result.terminated or result.truncated):
            result = step_both(core, env, rng.uniform(-1, 1, core.action_space.size))
        ends.add("terminated" if result.terminated else "truncated")
        assert result.truncated == (core.steps == 1000)
    # the runners run out of time; the walkers fall over under random actions
    assert ends == ({"terminated"} if LOCOMOTION_TASKS[env_id].healthy_z else {"truncated"})


# a start state past each bound of the health test: height, torso angle, Hopper's state range (qpos[2:], qvel)
UNHEALTHY = {
    "Hopper-v5": [("qpos", 1, 0.65), ("qpos", 2, 0.25), ("qpos", 2, -0.25), ("qvel", 3, 150.0), ("qpos", 4, -120.0)],
    "Walker2d-v5": [("qpos", 1, 0.7), ("qpos", 1, 2.1), ("qpos", 2, 1.1), ("qpos", 2, -1.1)],
}


@pytest.mark.parametrize("env_id, where, index, value", [(e, *c) for e, cases in UNHEALTHY.items() for c in cases])
def test_each_health_bound_ends_the_episode_as_gymnasium_does(env_id, where, index, value):
    core, env = twins(env_id, 0)
    qpos, qvel = core.physics.state()
    {"qpos": qpos, "qvel": qvel}[where][index] = value
    core.physics.set_state(qpos, qvel)
    env.unwrapped.set_state(np.array(qpos), np.array(qvel))
    assert step_both(core, env, np.zeros(core.action_space.size)).terminated


def test_a_seed_gives_one_start_state_with_gymnasiums_noise_bounds():
    core = make_locomotion_core("Hopper-v5")
    assert core.reset(seed=3) == core.reset(seed=3) != core.reset(seed=4)
    qpos0 = core.physics.model.qpos0.tolist()
    core.reset(seed=5)
    qpos, qvel = core.physics.state()
    assert 0 < max(abs(a - b) for a, b in zip(qpos, qpos0, strict=True)) <= 5e-3
    assert 0 < max(abs(v) for v in qvel) <= 5e-3
    # HalfCheetah's velocities are 0.1 * N(0, 1): unbounded, spread as a normal's
    cheetah = make_locomotion_core("HalfCheetah-v5")
    draws = [v for seed in range(200) if cheetah.reset(seed=seed) for v in cheetah.physics.state()[1]]
    assert abs(np.std(draws) - 0.1) < 0.01 and max(map(abs, draws)) > 0.25


def test_the_drawing_state_holds_every_geom():
    core = make_locomotion_core("HalfCheetah-v5")
    core.reset(seed=0)
    drawn = core.render_state()
    assert drawn["view"] == "side" and len(drawn["geoms"]) == core.physics.model.ngeom
    assert set(drawn["geoms"][0]) == set(GEOM_FIELDS)
    assert drawn["geoms"][0]["type"] == 0  # the floor plane


def test_an_env_it_does_not_run_is_refused_in_one_line():
    with pytest.raises(EnvError, match="Ant-v5 is not a locomotion env the player runs; those are: HalfCheetah-v5"):
        make_locomotion_core("Ant-v5")
