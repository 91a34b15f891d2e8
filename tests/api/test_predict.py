"""`Model.predict`'s conventions, SB3's: one observation or a batch, `(actions, state)` with a recurrent
policy's memory carried and cleared at episode starts, Dict observations as the env gives them, action
masks obeyed, stochastic actions drawn from the policy, bad observations refused in one line."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from thrust_app import DQN, PPO, SAC, TD3, RecurrentPPO
from thrust_app.api.predict import ObservationError, start_memory

QUIET = {"verbose": 0}


def test_recurrent_memory_is_carried_cleared_at_starts_and_equals_the_policys_steps(tmp_path):
    model = RecurrentPPO("CartPoleNoVel-v1", runs_root=tmp_path, n_steps=32, n_envs=2, lstm_hidden_size=16, **QUIET).learn(64)
    obs = np.random.default_rng(1).normal(size=(6, 2, 4)).astype(np.float32)
    state, actions = None, []
    for step in obs:
        action, state = model.predict(step, state=state)
        actions.append(action)
    assert state.shape == (2, model.policy.state_size)
    memory = torch.zeros(2, model.policy.state_size)  # the policy stepped by hand
    for step, action in zip(obs, actions, strict=True):
        _, expected, memory = model.policy.act(torch.as_tensor(step), state=memory)
        assert np.array_equal(action, expected.numpy())
    fresh, _ = model.predict(obs[0])
    cleared, _ = model.predict(obs[0], state=state, episode_start=[True, True])
    assert np.array_equal(fresh, cleared)
    assert start_memory(state, [True, False], 2, model.policy.state_size)[0].sum() == 0
    drawn = {tuple(model.predict(obs[0], deterministic=False)[0]) for _ in range(30)}
    assert len(drawn) > 1  # sampled, not the mode


def test_dict_observations_single_and_batched_as_the_env_gives_them(tmp_path):
    model = PPO("thrust/Cards-v0", runs_root=tmp_path, **QUIET).learn(512)
    vector = gym.make_vec("thrust/Cards-v0", num_envs=3, vectorization_mode="sync")
    batch, _ = vector.reset(seed=0)
    actions, _ = model.predict(batch)
    singles = [model.predict({key: value[i] for key, value in batch.items()})[0] for i in range(3)]
    assert actions.shape == (3,) and np.array_equal(actions, np.array(singles))


def test_action_masks_are_obeyed(tmp_path):
    model = PPO("thrust/Cards-v0", runs_root=tmp_path, **QUIET)  # untrained: its argmax ignores the rules
    env = gym.make("thrust/Cards-v0")
    obs, _ = env.reset(seed=3)
    flat = gym.spaces.flatten(env.observation_space, obs)
    batch = np.repeat(flat[None], 64, 0)
    masks = np.zeros((64, 6), bool)
    masks[np.arange(64), np.arange(64) % 6] = True  # one legal card per row
    for deterministic in (True, False):
        actions, _ = model.predict(batch, action_masks=masks, deterministic=deterministic)
        assert np.array_equal(actions, np.arange(64) % 6)


def test_stochastic_actions_follow_each_algorithms_exploration(tmp_path):
    obs = np.zeros((200, 4), np.float32)
    ppo = PPO("CartPole-v1", runs_root=tmp_path, **QUIET)
    assert set(ppo.predict(obs, deterministic=False)[0]) == {0, 1}
    assert len(set(ppo.predict(obs)[0])) == 1
    dqn = DQN("CartPole-v1", runs_root=tmp_path, **QUIET)  # epsilon 1 before training: uniform
    assert set(dqn.predict(obs, deterministic=False)[0]) == {0, 1}
    sac = SAC("Pendulum-v1", runs_root=tmp_path, **QUIET)
    drawn, _ = sac.predict(np.zeros((200, 3), np.float32), deterministic=False)
    assert drawn.shape == (200, 1) and np.all(np.abs(drawn) <= 2.0) and drawn.std() > 0.1
    td3 = TD3("Pendulum-v1", runs_root=tmp_path, **QUIET)  # SB3: TD3's predict is deterministic either way
    assert np.array_equal(td3.predict(obs[:5, :3], deterministic=False)[0], td3.predict(obs[:5, :3])[0])


def test_an_observation_of_the_wrong_shape_is_refused_in_one_line(tmp_path):
    model = PPO("CartPole-v1", runs_root=tmp_path, **QUIET)
    with pytest.raises(
        ObservationError, match=r"observation of shape \(3,\) does not fit this model: it takes \(4,\) or \(N, 4\)"
    ):
        model.predict(np.zeros(3))
    cards = PPO("thrust/Cards-v0", runs_root=tmp_path, **QUIET)
    with pytest.raises(ObservationError, match=r"observation has keys \['hand'\]; this model's observations have \["):
        cards.predict({"hand": np.zeros(2)})
