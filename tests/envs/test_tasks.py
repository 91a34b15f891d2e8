"""thrust_app/envs/tasks.py: each small task has the answer it says it has: random play scores what its docstring
says, and the policy that uses what the task shows (the target, the remembered cue, the lit side) scores the best."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from thrust_app.envs import tasks


def play(env_id: str, choose, episodes: int = 40) -> float:
    env = gym.make(env_id)
    total = 0.0
    for episode in range(episodes):
        obs, _ = env.reset(seed=episode)
        memory: dict = {}
        done = False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(choose(env.unwrapped, obs, memory))
            total += reward
            done = terminated or truncated
    return total / episodes


def random_legal(env, obs, memory):
    return int(env.np_random.choice(np.flatnonzero(env.mask)))


@pytest.mark.parametrize(
    "env_id, choose, low, high",
    [
        ("ThrustTest/MaskedChoice-v0", random_legal, 5.0, 8.5),  # about 6.7
        ("ThrustTest/MaskedChoice-v0", lambda env, obs, m: int(np.argmax(obs[: tasks.N_ACTIONS])), 20.0, 20.0),
        ("ThrustTest/MaskedRecall-v0", random_legal, 2.3, 4.3),  # about 3.3
        # remembers the cue shown at the first step
        (
            "ThrustTest/MaskedRecall-v0",
            lambda env, obs, m: m.setdefault("cue", int(np.argmax(obs[: tasks.N_ACTIONS]))),
            10.0,
            10.0,
        ),
        ("ThrustTest/Camera-v0", lambda env, obs, m: int(env.np_random.integers(2)), 4.0, 6.0),  # about 5
        ("ThrustTest/Camera-v0", lambda env, obs, m: int(obs["camera"][:, :, 5:].sum() > 0), 10.0, 10.0),
        ("ThrustTest/Dials-v0", lambda env, obs, m: np.asarray(obs), 10.0, 10.0),
    ],
)
def test_each_task_scores_what_it_says(env_id, choose, low, high):
    assert low <= play(env_id, choose) <= high
