"""rl-baselines3-zoo hyperparameter files: the zoo's own entries load as Thrust's presets, and a run's
settings export to a file that loads back to the same settings."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from thrust_app.algos import A2CConfig, DQNConfig, PPOConfig, SACConfig
from thrust_app.config import ConfigError
from thrust_app.training.presets import get_preset
from thrust_app.training.run_spec import make_spec
from thrust_app.training.zoo_yaml import from_zoo_yaml, to_zoo_yaml

#: rl-baselines3-zoo hyperparams/ppo.yml and dqn.yml, CartPole-v1, as the zoo writes them.
ZOO_PPO = """
CartPole-v1:
  n_envs: 8
  policy: 'MlpPolicy'
  n_timesteps: !!float 1e5
  n_steps: 32
  batch_size: 256
  gae_lambda: 0.8
  gamma: 0.98
  n_epochs: 20
  ent_coef: 0.0
  learning_rate: lin_0.001
  clip_range: lin_0.2
"""
ZOO_DQN = """
CartPole-v1:
  n_timesteps: !!float 5e4
  policy: 'MlpPolicy'
  learning_rate: !!float 2.3e-3
  batch_size: 64
  buffer_size: 100000
  learning_starts: 1000
  gamma: 0.99
  target_update_interval: 10
  train_freq: 256
  gradient_steps: 128
  exploration_fraction: 0.16
  exploration_final_eps: 0.04
  policy_kwargs: "dict(net_arch=[256, 256])"
"""


#: rl-baselines3-zoo hyperparams/a2c.yml and ppo.yml, Pendulum-v1 (gSDE), as the zoo writes them.
ZOO_A2C_PENDULUM = """
Pendulum-v1:
  normalize: True
  n_envs: 8
  n_timesteps: !!float 1e6
  policy: 'MlpPolicy'
  ent_coef: 0.0
  max_grad_norm: 0.5
  n_steps: 8
  gae_lambda: 0.9
  vf_coef: 0.4
  gamma: 0.9
  use_rms_prop: True
  normalize_advantage: False
  learning_rate: lin_7e-4
  use_sde: True
  policy_kwargs: "dict(log_std_init=-2, ortho_init=False)"
"""
ZOO_PPO_PENDULUM = """
Pendulum-v1:
  n_envs: 4
  n_timesteps: !!float 1e5
  policy: 'MlpPolicy'
  n_steps: 1024
  gae_lambda: 0.95
  gamma: 0.9
  n_epochs: 10
  ent_coef: 0.0
  learning_rate: !!float 1e-3
  clip_range: 0.2
  use_sde: True
  sde_sample_freq: 4
"""


def fields(config_cls) -> set[str]:
    return {field.name for field in dataclasses.fields(config_cls)}


@pytest.mark.parametrize(
    "text, algo, config_cls",
    [
        (ZOO_PPO, "ppo", PPOConfig),
        (ZOO_DQN, "dqn", DQNConfig),
        (ZOO_PPO_PENDULUM, "ppo", PPOConfig),
        (ZOO_A2C_PENDULUM, "a2c", A2CConfig),
    ],
)
def test_the_zoos_entries_are_thrusts_presets(text, algo, config_cls):
    env_id, timesteps, overrides = from_zoo_yaml(text, fields(config_cls))
    preset = get_preset(algo, env_id)
    assert timesteps == preset.timesteps
    loaded = make_spec(algo, env_id, timesteps, overrides=overrides).config
    assert loaded == make_spec(algo, env_id).config


def test_a_run_exported_as_zoo_yaml_loads_back_to_the_same_settings():
    spec = make_spec("ppo", "cartpole", 50_000, overrides={"gamma": 0.97, "hidden": "32,32", "activation": "relu"})
    text = to_zoo_yaml(dataclasses.asdict(spec))
    assert "\nCartPole-v1:\n" in text and "learning_rate: lin_0.001" in text
    kwargs = yaml.safe_load(text)["CartPole-v1"]["policy_kwargs"]
    assert kwargs == "dict(net_arch=[32, 32], activation_fn=nn.ReLU, log_std_init=0.0, ortho_init=True)"
    assert "#   update: handwritten" in text
    env_id, timesteps, overrides = from_zoo_yaml(text, fields(PPOConfig))
    assert (env_id, timesteps) == ("CartPole-v1", 50_000)
    assert make_spec("ppo", env_id, timesteps, overrides=overrides).config == {**spec.config, "update": "handwritten"}


#: rl-baselines3-zoo hyperparams/ppo_lstm.yml, CartPoleNoVel-v1, as the zoo writes it.
ZOO_PPO_LSTM = """
CartPoleNoVel-v1:
  normalize: True
  n_envs: 8
  n_timesteps: !!float 1e5
  policy: 'MlpLstmPolicy'
  n_steps: 32
  batch_size: 256
  gae_lambda: 0.8
  gamma: 0.98
  n_epochs: 20
  ent_coef: 0.0
  learning_rate: lin_0.001
  clip_range: lin_0.2
  policy_kwargs: "dict(
                    ortho_init=False,
                    activation_fn=nn.ReLU,
                    lstm_hidden_size=64,
                    enable_critic_lstm=True,
                    net_arch=dict(pi=[64], vf=[64])
                  )"
"""


def test_the_zoos_ppo_lstm_entry_is_the_recurrent_preset_and_exports_back():
    from thrust_app.algos import RecurrentPPOConfig

    env_id, timesteps, overrides = from_zoo_yaml(ZOO_PPO_LSTM, fields(RecurrentPPOConfig))
    assert (
        make_spec("recurrent_ppo", env_id, timesteps, overrides=overrides).config == make_spec("recurrent_ppo", env_id).config
    )
    spec = make_spec("recurrent_ppo", "cartpole-novel", overrides={"critic_rnn": "shared", "rnn_type": "gru"})
    text = to_zoo_yaml(dataclasses.asdict(spec))
    assert "\nCartPoleNoVel-v1:\n" in text and "policy: MlpLstmPolicy" in text and "shared_lstm=True" in text
    _, _, again = from_zoo_yaml(text, fields(RecurrentPPOConfig))
    assert make_spec("recurrent_ppo", "cartpole-novel", overrides=again).config == {**spec.config, "rnn_type": "lstm"}


@pytest.mark.parametrize(
    "normalize, want",
    [
        ("true", {"normalize": True}),
        ("\"{'norm_obs': True, 'norm_reward': False}\"", {"normalize": True, "norm_obs": True, "norm_reward": False}),
    ],
)
def test_the_zoos_normalize_reads_as_thrusts_normalisation_and_back(normalize, want):
    """The zoo writes `normalize: true` or a dict of VecNormalize's arguments (its MuJoCo PPO entries)."""
    _, _, overrides = from_zoo_yaml(f"HalfCheetah-v5:\n  normalize: {normalize}\n", fields(PPOConfig))
    assert overrides == want
    spec = make_spec("ppo", "cartpole", 1000, overrides=overrides)
    _, _, again = from_zoo_yaml(to_zoo_yaml(dataclasses.asdict(spec)), fields(PPOConfig))
    assert make_spec("ppo", "cartpole", 1000, overrides=again).config == spec.config


def test_policy_and_value_sizes_of_their_own_round_trip():
    text = "CartPole-v1:\n  policy_kwargs: 'dict(net_arch=dict(pi=[64], vf=[32, 32]))'\n"
    _, _, overrides = from_zoo_yaml(text, fields(PPOConfig))
    assert overrides == {"hidden": (64,), "vf_hidden": (32, 32)}
    spec = make_spec("ppo", "cartpole", 1000, overrides=overrides)
    _, _, again = from_zoo_yaml(to_zoo_yaml(dataclasses.asdict(spec)), fields(PPOConfig))
    assert make_spec("ppo", "cartpole", 1000, overrides=again).config == spec.config
    with pytest.raises(ConfigError, match="this algorithm's policy and value MLPs share one net_arch"):
        from_zoo_yaml("CartPole-v1:\n  policy_kwargs: 'dict(net_arch=dict(pi=[64], vf=[32]))'\n", fields(DQNConfig))


@pytest.mark.parametrize(
    "text, message",
    [
        ("CartPole-v1:\n  use_sde_at_warmup: true\n", "no setting for the zoo keys use_sde_at_warmup"),
        ("CartPole-v1:\n  policy_kwargs: 'dict(use_expln=True)'\n", "no setting for use_expln"),
        ("CartPole-v1:\n  policy_kwargs: 'dict(lstm_hidden_size=64)'\n", "no setting for lstm_hidden_size"),  # PPO's
        ("CartPole-v1:\n  policy_kwargs: 'dict(activation_fn=nn.ELU)'\n", "no setting for activation_fn=nn.ELU"),
        ("CartPole-v1:\n  policy_kwargs: '__import__(\"os\")'\n", "expected dict"),
        ("- just\n- a list\n", "expected a zoo hyperparameter file"),
        ("CartPole-v1: [unclosed\n", "not a YAML file"),
        ("CartPole-v1:\n  normalize: \"{'gamma': 0.9}\"\n", "Thrust reads true/false or a dict of norm_obs"),
    ],
)
def test_what_thrust_cannot_read_is_named(text, message):
    with pytest.raises(ConfigError, match=message):
        from_zoo_yaml(text, fields(PPOConfig))


#: rl-baselines3-zoo hyperparams/dqn.yml, atari, as the zoo writes it (under a game's id).
ZOO_DQN_ATARI = """
ALE/Breakout-v5:
  env_wrapper:
    - stable_baselines3.common.atari_wrappers.AtariWrapper
  frame_stack: 4
  policy: 'CnnPolicy'
  n_timesteps: !!float 1e7
  buffer_size: 100000
  learning_rate: !!float 1e-4
  batch_size: 32
  learning_starts: 100000
  target_update_interval: 1000
  train_freq: 4
  gradient_steps: 1
  exploration_fraction: 0.1
  exploration_final_eps: 0.01
  optimize_memory_usage: False
"""


def test_the_zoos_atari_entry_is_the_atari_preset_and_exports_back():
    fields = {field.name for field in dataclasses.fields(DQNConfig)}
    env_id, timesteps, overrides = from_zoo_yaml(ZOO_DQN_ATARI, fields)
    preset = get_preset("dqn", env_id)
    assert timesteps == preset.timesteps and overrides == preset.config  # AtariWrapper -> env_wrapper atari
    spec = make_spec("dqn", env_id)
    text = to_zoo_yaml({"config": spec.config, "timesteps": spec.timesteps, "env": spec.env, "algo": "dqn"})
    assert "CnnPolicy" in text and "AtariWrapper" in text and "net_arch" not in text
    assert from_zoo_yaml(text, fields)[2]["env_wrapper"] == "atari"
    with pytest.raises(ConfigError, match=r"env_wrapper .*MyWrapper.*: Thrust has the zoo's AtariWrapper"):
        from_zoo_yaml(ZOO_DQN_ATARI.replace("stable_baselines3.common.atari_wrappers.AtariWrapper", "my.MyWrapper"), fields)


#: rl-baselines3-zoo hyperparams/sac.yml, FetchReach-v1, as the zoo writes it, but for the env's version.
ZOO_SAC_HER = """
FetchReach-v4:
  n_timesteps: !!float 20000
  policy: 'MultiInputPolicy'
  buffer_size: 1000000
  ent_coef: 'auto'
  batch_size: 256
  gamma: 0.95
  learning_rate: 0.001
  learning_starts: 1000
  normalize: True
  replay_buffer_class: HerReplayBuffer
  replay_buffer_kwargs: "dict(
    goal_selection_strategy='future',
    n_sampled_goal=4
  )"
  policy_kwargs: "dict(net_arch=[64, 64], n_critics=1)"
"""


def test_the_zoos_her_entry_is_the_fetch_preset_and_exports_back():
    env_id, timesteps, overrides = from_zoo_yaml(ZOO_SAC_HER, fields(SACConfig))
    assert (env_id, timesteps) == ("FetchReach-v4", get_preset("sac", env_id).timesteps)
    assert overrides["replay_buffer_class"] == "HerReplayBuffer" and overrides["n_sampled_goal"] == 4
    assert overrides["normalize"] is True and overrides["n_critics"] == 1
    spec = make_spec("sac", env_id, timesteps, overrides=overrides)
    assert spec.config == make_spec("sac", env_id).config
    exported = to_zoo_yaml(dataclasses.asdict(spec))
    entry = yaml.safe_load(exported)["FetchReach-v4"]
    assert entry["replay_buffer_kwargs"] == "dict(n_sampled_goal=4, goal_selection_strategy='future')"
    env_id, timesteps, overrides = from_zoo_yaml(exported, fields(SACConfig))
    assert make_spec("sac", env_id, timesteps, overrides=overrides).config == spec.config
    with pytest.raises(ConfigError, match=r"replay_buffer_kwargs .*no setting for copy_info_dict"):
        from_zoo_yaml(ZOO_SAC_HER.replace("n_sampled_goal=4", "copy_info_dict=True"), fields(SACConfig))
    with pytest.raises(ConfigError, match="ent_coef 'often': expected auto"):
        from_zoo_yaml(ZOO_SAC_HER.replace("'auto'", "'often'"), fields(SACConfig))
