"""Thrust's envs as gymnasium envs: registered, passing check_env, and equal to gymnasium's own
CartPole-v1 and Pendulum-v1 observation for observation, including the time limits."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import thrust_app  # noqa: F401  (registers the envs)
from thrust_app.envs import UnknownEnvError, make_env

THRUST_IDS = [
    "thrust/Bandit-v0",
    "thrust/CartPole-v0",
    "thrust/Pendulum-v0",
    "thrust/Snake-v0",
    "thrust/MountainCar-v0",
    "thrust/Acrobot-v0",
    "thrust/MinAtarBreakout-v0",
    "thrust/MinAtarSpaceInvaders-v0",
]


@pytest.mark.parametrize("env_id", THRUST_IDS)
def test_check_env_passes(env_id):
    check_env(gym.make(env_id).unwrapped, skip_render_check=False)


@pytest.mark.parametrize("env_id", THRUST_IDS)
def test_rgb_frames_render(env_id):
    env = gym.make(env_id, render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) > 2  # something is drawn


def test_aliases_reach_gymnasium_and_unknown_names_are_explained():
    assert make_env("snake").observation_space.shape == (3, 10, 10)
    assert make_env("CartPole-v1").spec.id == "CartPole-v1"  # gymnasium's own ids still work
    with pytest.raises(UnknownEnvError, match="valid Thrust names: bandit"):
        make_env("cartpool")


def run_pair(ours, theirs, actions, sync=None):
    """Step both envs with the same actions (after `sync()`, where given, puts gymnasium's env in our state); return the
    steps taken and the largest obs difference."""
    worst = 0.0
    for t, action in enumerate(actions):
        if sync is not None:
            sync()
        o1, r1, term1, trunc1, _ = ours.step(action)
        o2, r2, term2, trunc2, _ = theirs.step(action)
        assert o1.dtype == o2.dtype == np.float32
        worst = max(worst, float(np.max(np.abs(o1 - o2))))
        assert abs(r1 - float(r2)) <= 1e-6, f"step {t}: reward {r1} vs {r2}"
        assert (term1, trunc1) == (term2, trunc2), f"step {t}: flags {(term1, trunc1)} vs {(term2, trunc2)}"
        if term1 or trunc1:
            return t + 1, worst
    return len(actions), worst


@pytest.mark.parametrize("mode", ["balanced", "random"])
def test_cartpole_equals_gymnasium_cartpole_v1(mode):
    ours, theirs = gym.make("thrust/CartPole-v0"), gym.make("CartPole-v1")
    for seed in range(3):
        obs, _ = ours.reset(seed=seed)
        theirs.reset(seed=seed)
        theirs.unwrapped.state = np.array(ours.unwrapped.core.state, dtype=np.float64)
        rng = np.random.default_rng(seed)
        worst, steps = 0.0, 0
        while True:
            action = (
                int(obs[2] + 0.5 * obs[3] + 0.01 * obs[0] + 0.1 * obs[1] > 0) if mode == "balanced" else int(rng.integers(2))
            )
            o1, r1, term1, trunc1, _ = ours.step(action)
            o2, r2, term2, trunc2, _ = theirs.step(action)
            steps += 1
            worst = max(worst, float(np.max(np.abs(o1 - o2))))
            assert r1 == float(r2) and (term1, trunc1) == (term2, trunc2), f"step {steps}"
            obs = o1
            if term1 or trunc1:
                break
        assert worst <= 1e-6
        if mode == "balanced":
            assert steps == 500 and trunc1  # the time limit, exactly where gymnasium puts it
        else:
            assert term1 and steps < 500


def test_pendulum_equals_gymnasium_pendulum_v1():
    """Step for step from the same state: gymnasium computes the torque's terms in float32 (NumPy 2 keeps float32 times
    a Python float in float32), the core in float64, so free-running trajectories part by that rounding, amplified
    ~100x where the pendulum passes its unstable top; from one state, one step agrees to 1e-6."""
    ours, theirs = gym.make("thrust/Pendulum-v0"), gym.make("Pendulum-v1")
    sync = lambda: setattr(theirs.unwrapped, "state", np.array(ours.unwrapped.core.state, dtype=np.float64))  # noqa: E731
    for seed in range(3):
        start_ours, start_theirs = ours.reset(seed=seed)[0], theirs.reset(seed=seed)[0]
        np.testing.assert_array_equal(start_ours, start_theirs)  # the same start state from the same seed
        rng = np.random.default_rng(seed)
        actions = [rng.uniform(-2, 2, size=(1,)).astype(np.float32) for _ in range(250)]
        actions[:5] = [np.array([2.0], np.float32), np.array([-2.0], np.float32)] * 2 + [np.array([0.0], np.float32)]
        steps, worst = run_pair(ours, theirs, actions, sync)
        assert steps == 200  # truncated by the 200-step limit, as Pendulum-v1
        assert worst <= 1e-6


@pytest.mark.parametrize(
    "ours_id, theirs_id",
    [("thrust/MountainCar-v0", "MountainCar-v0"), ("thrust/MountainCarContinuous-v0", "MountainCarContinuous-v0")],
)
def test_mountain_car_cores_equal_gymnasium_step_for_step(ours_id, theirs_id):
    """core/mountain_car.py: the same observations exactly (the continuous one's float32 roundings included), rewards
    and ends, over episodes that reach the flag (a policy pushing with the velocity) and ones cut by the limit."""
    continuous = "Continuous" in ours_id
    ends = set()
    for seed in range(6):
        ours, theirs = gym.make(ours_id), gym.make(theirs_id)
        obs, _ = ours.reset(seed=seed)
        theirs.reset(seed=seed)
        theirs.unwrapped.state = np.array(ours.unwrapped.core.state, dtype=np.float64)
        rng = np.random.default_rng(seed)
        while True:
            if continuous:
                push = rng.uniform(-1, 1, size=(1,)) if seed % 2 else np.array([1.0 if obs[1] >= 0 else -1.0])
                action = push.astype(np.float32)
            else:
                action = int(rng.integers(3)) if seed % 2 else (2 if obs[1] >= 0 else 0)
            o1, r1, term1, trunc1, _ = ours.step(action)
            o2, r2, term2, trunc2, _ = theirs.step(action)
            assert np.array_equal(o1, o2) and r1 == pytest.approx(float(r2), abs=1e-12) and (term1, trunc1) == (term2, trunc2)
            obs = o1
            if term1 or trunc1:
                ends.add("flag" if term1 else "limit")
                break
    assert ends == {"flag", "limit"}


def test_acrobot_core_equals_gymnasium_step_for_step():
    """core/acrobot.py: gymnasium's Acrobot-v1 (book equations, RK4 over dt = 0.2) to the bit: the same observations,
    rewards and ends over episodes that swing up (a policy pushing with the second link's velocity) and ones
    cut at 500 steps (random torques)."""
    ends = set()
    for seed in range(4):
        ours, theirs = gym.make("thrust/Acrobot-v0"), gym.make("Acrobot-v1")
        obs, _ = ours.reset(seed=seed)
        theirs.reset(seed=seed)
        theirs.unwrapped.state = np.array(ours.unwrapped.core.state, dtype=np.float32)  # the float32 start, as its own
        rng = np.random.default_rng(seed)
        steps = 0
        while True:
            action = int(rng.integers(3)) if seed % 2 else (2 if obs[5] >= 0 else 0)
            o1, r1, term1, trunc1, _ = ours.step(action)
            o2, r2, term2, trunc2, _ = theirs.step(action)
            assert np.array_equal(o1, o2) and r1 == r2 and (term1, trunc1) == (term2, trunc2), (seed, steps)
            assert ours.unwrapped.core.state == theirs.unwrapped.state.tolist()  # the float64 state itself
            obs, steps = o1, steps + 1
            if term1 or trunc1:
                ends.add("swung up" if term1 else "limit")
                break
    assert ends == {"swung up", "limit"}
