"""A user's env objects become ids Thrust makes copies from: the registered id where nothing was added, a
derived id whose spec re-creates the wrappers in another process, or a process-local copy of the object."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.classic_control import CartPoleEnv

from thrust_app.envs import make_env
from thrust_app.envs.instances import env_choice, is_instance_id, register_spec_json


class Doubled(gym.ObservationWrapper):
    """A user's wrapper that records none of its arguments: gymnasium cannot re-create it from a spec."""

    def observation(self, observation):
        return observation * 2


def test_ids_and_plain_made_envs_are_their_registered_id():
    assert env_choice("CartPole-v1").env_id == "CartPole-v1"
    choice = env_choice(gym.make("CartPole-v1", render_mode="rgb_array"))
    assert (choice.env_id, choice.n_envs, choice.spec_json) == ("CartPole-v1", None, None)


def test_recorded_wrappers_get_a_derived_id_whose_spec_re_creates_them():
    env = gym.wrappers.RescaleAction(gym.make("Pendulum-v1"), -1.0, 1.0)
    choice = env_choice(env)
    assert choice.env_id.startswith("instance/Pendulum.RescaleAction-") and choice.spec_json
    assert env_choice(gym.wrappers.RescaleAction(gym.make("Pendulum-v1"), -1.0, 1.0)).env_id == choice.env_id
    assert env_choice(gym.wrappers.RescaleAction(gym.make("Pendulum-v1"), -0.5, 0.5)).env_id != choice.env_id
    gym.registry.pop(choice.env_id)  # another process: only config.json's spec is known
    register_spec_json(choice.env_id, choice.spec_json)
    made = make_env(choice.env_id)
    assert made.action_space.high[0] == 1.0 and made.spec.max_episode_steps == 200


def test_other_objects_are_copied_as_they_were_handed_over():
    env = Doubled(gym.make("CartPole-v1"))
    choice = env_choice(env)
    assert is_instance_id(choice.env_id) and choice.spec_json is None
    copy = make_env(choice.env_id)
    obs, _ = copy.reset(seed=4)
    raw, _ = gym.make("CartPole-v1").reset(seed=4)
    assert np.allclose(obs, raw * 2)  # the user's wrapper came along
    own = env_choice(CartPoleEnv())
    assert "CartPoleEnv" in own.env_id and make_env(own.env_id) is not make_env(own.env_id)
    with pytest.raises(TypeError, match="takes no options"):
        make_env(own.env_id, gravity=1.0)


def test_vector_envs_give_their_single_env_and_count():
    assert env_choice(gym.make_vec("CartPole-v1", num_envs=5)).n_envs == 5
    sync = gym.vector.SyncVectorEnv([lambda: gym.make("Acrobot-v1")] * 2)
    assert (env_choice(sync).env_id, env_choice(sync).n_envs) == ("Acrobot-v1", 2)
    with pytest.raises(TypeError, match=r"env must be an id string, a gymnasium\.Env or a vector env, got list"):
        env_choice([1, 2])
