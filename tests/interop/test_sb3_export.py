"""Thrust runs as SB3 zips: for every algorithm SB3 has, SB3's own `load` and `predict` act as Thrust's policy
on 500 observations; what SB3's MlpPolicy cannot hold is refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
import stable_baselines3
import torch

from thrust_app import A2C, DDPG, DQN, PPO, SAC, TD3, RecurrentPPO
from thrust_app.interop.sb3_export import SB3ExportError, write_sb3_zip

CASES = [
    (PPO, "CartPole-v1", 1024, {"n_envs": 4, "n_steps": 64}),
    (PPO, "Pendulum-v1", 512, {"n_envs": 2, "n_steps": 128, "batch_size": 64}),
    (A2C, "CartPole-v1", 500, {}),
    (DQN, "CartPole-v1", 1500, {"learning_starts": 500}),
    (SAC, "Pendulum-v1", 400, {"learning_starts": 200}),
    (TD3, "Pendulum-v1", 400, {"learning_starts": 200}),
    (DDPG, "Pendulum-v1", 400, {"learning_starts": 200}),
    (PPO, "FrozenLake-v1", 512, {"n_envs": 4, "n_steps": 64}),  # a Discrete observation: SB3 one-hots it too
    (A2C, "Acrobot-v1", 500, {"normalize": False, "hidden": (32,), "vf_hidden": (16, 16)}),  # dict(pi=[32], vf=[16, 16])
    (SAC, "Pendulum-v1", 300, {"learning_starts": 100, "activation": "tanh", "hidden": (32, 32)}),  # activation_fn=Tanh
    (DQN, "Acrobot-v1", 600, {"learning_starts": 200, "activation": "tanh"}),
    (A2C, "Pendulum-v1", 400, {"normalize": False, "use_sde": True, "sde_sample_freq": 4}),  # gSDE's log_std matrix
]


@pytest.mark.parametrize("cls, env, steps, config", CASES, ids=[f"{c.__name__}-{e}" for c, e, _, _ in CASES])
def test_sb3_predicts_what_thrust_predicts(tmp_path, cls, env, steps, config):
    model = cls(env, runs_root=tmp_path, verbose=0, **config).learn(steps)
    path = write_sb3_zip(model.run_dir, tmp_path / f"{model.algo_name}.zip")
    sb3_model = getattr(stable_baselines3, cls.__name__).load(path, device="cpu")
    rng = np.random.default_rng(1)
    if env == "FrozenLake-v1":  # the env's own observations (Thrust's flat one-hots for Thrust's predict)
        states = rng.integers(0, 16, 500)
        obs, sb3_obs = np.eye(16, dtype=np.float32)[states], states
    else:
        obs = sb3_obs = rng.normal(size=(500, model.algo.obs_shape[0])).astype(np.float32)
    expected, got = model.predict(obs)[0], sb3_model.predict(sb3_obs, deterministic=True)[0]
    assert sb3_model.num_timesteps == model.num_timesteps
    if expected.dtype.kind == "i":
        assert np.array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, atol=1e-6)


def test_what_sb3s_mlp_policy_cannot_hold_is_refused_in_one_line(tmp_path):
    model = PPO("CartPole-v1", runs_root=tmp_path, verbose=0, normalize=True, n_envs=4, n_steps=64).learn(256)
    with pytest.raises(SB3ExportError, match=r"^no SB3 zip for this run: the run normalises observations"):
        write_sb3_zip(model.run_dir, tmp_path / "x.zip")
    memory = RecurrentPPO("CartPoleNoVel-v1", runs_root=tmp_path, verbose=0, n_steps=32, n_envs=2).learn(64)
    with pytest.raises(SB3ExportError, match="recurrent_ppo has no SB3 class here"):
        write_sb3_zip(memory.run_dir, tmp_path / "y.zip")


@pytest.mark.parametrize("cls", [SAC, TD3, DDPG])
def test_sb3s_critics_value_an_action_as_thrusts_do_where_the_bounds_are_not_one(tmp_path, cls):
    """On Pendulum's +-2 bounds the zip's critics and their targets, fed the action in [-1, 1] as SB3 feeds them,
    give Thrust's Q(s, a) for the same action in the env's units, so SB3 can go on training from the zip."""
    model = cls("Pendulum-v1", runs_root=tmp_path, verbose=0, learning_starts=100).learn(300)
    sb3_model = getattr(stable_baselines3, cls.__name__).load(write_sb3_zip(model.run_dir, tmp_path / "m.zip"))
    rng = np.random.default_rng(2)
    obs, unit = torch.as_tensor(rng.normal(size=(200, 3)), dtype=torch.float32), torch.rand(200, 1) * 2 - 1
    algo = model.algo
    for ours, theirs in ((algo.critic, sb3_model.critic), (algo.critic_target, sb3_model.critic_target)):
        with torch.no_grad():
            expected = torch.stack(ours(obs, algo.policy.scale(unit)))
            got = torch.stack([q.squeeze(-1) for q in theirs(obs, unit)])
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
