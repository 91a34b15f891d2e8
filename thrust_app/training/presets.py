"""Tuned starting points per (algorithm, env): config values, a step budget, and where they come from.

`--set key=value` overrides any of them. An env without a preset trains on the algorithm's defaults
(SB3's) for `DEFAULT_TIMESTEPS` steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..config import ConfigError

DEFAULT_TIMESTEPS = 100_000

ZOO = "rl-baselines3-zoo hyperparams/{algo}.yml, {env}"


@dataclass(frozen=True)
class Preset:
    timesteps: int
    config: dict[str, Any] = field(default_factory=dict)
    source: str = "Stable-Baselines3 defaults"
    #: Env steps between evaluations when the user gives none (None: timesteps / 20, at least 1,000).
    eval_every: int | None = None
    #: Stop once an evaluation's mean return reaches this, when the user gives none (None: train to the budget).
    stop_at_return: float | None = None
    #: Where the env's arrays live when the user gives none: "torch" (on the training device) or "numpy" (the host).
    env_backend: str = "numpy"


_CARTPOLE_IDS = ("thrust/CartPole-v0", "CartPole-v1")
_PENDULUM_IDS = ("thrust/Pendulum-v0", "Pendulum-v1")

_PRESETS: dict[tuple[str, str], Preset] = {}
#: Presets picked by name (`thrust train ppo cartpole --preset fast`), beside each pair's default one.
_NAMED: dict[tuple[str, str, str], Preset] = {}
DEFAULT_PRESET = "default"


def _add(algo: str, env_ids: tuple[str, ...], preset: Preset, name: str = DEFAULT_PRESET) -> None:
    for env_id in env_ids:
        if name == DEFAULT_PRESET:
            _PRESETS[(algo, env_id)] = preset
        else:
            _NAMED[(algo, env_id, name)] = preset


_add(
    "ppo",
    _CARTPOLE_IDS,
    Preset(
        100_000,
        {
            "n_envs": 8,
            "n_steps": 32,
            "batch_size": 256,
            "gae_lambda": 0.8,
            "gamma": 0.98,
            "n_epochs": 20,
            "ent_coef": 0.0,
            "learning_rate": 1e-3,
            "lr_schedule": "linear",
            "clip_range": 0.2,
            "clip_schedule": "linear",
        },
        ZOO.format(algo="ppo", env="CartPole-v1"),
    ),
)
# The fastest solve on one core: the zoo's settings, evaluated every 1,024 steps (a run is caught soon after
# it solves) and stopped at the solve. benches/fast_cartpole.py measures it against the default preset, the
# same settings over 16 envs x 16 steps, and SB3.
_add(
    "ppo",
    _CARTPOLE_IDS,
    Preset(
        100_000,
        dict(_PRESETS[("ppo", "CartPole-v1")].config),
        "the zoo's settings, evaluated every 1,024 steps and stopped at the solve (benches/fast_cartpole.py)",
        eval_every=1024,
        stop_at_return=475.0,
    ),
    name="fast",
)
# CartPole on a GPU: 4,096 envs as torch tensors on the device, 16 steps each, 4 epochs of 8 minibatches, the
# collection and the minibatch steps replayed as CUDA graphs (backends.md, GPU check: 4.9M env-steps/s on an
# H200). The zoo's other settings with constant schedules (a graph keeps the values it was captured with),
# evaluated every iteration: solved after a median 1.2M steps on an H200 (5 seeds), 1.7-1.9M on one CPU core
# (2 seeds, about 14 s). Thrust's CartPole only: gymnasium's CartPole-v1 has no torch arrays.
_add(
    "ppo",
    ("thrust/CartPole-v0",),
    Preset(
        10_000_000,
        dict(_PRESETS[("ppo", "CartPole-v1")].config)
        | {"n_envs": 4096, "n_steps": 16, "batch_size": 8192, "n_epochs": 4, "lr_schedule": "constant"}
        | {"clip_schedule": "constant", "cuda_graphs": True},
        "for a GPU (--device cuda): 4,096 envs on the device, the zoo's other settings with constant schedules, "
        "CUDA graphs, evaluated every iteration and stopped at the solve (benches/fast_cartpole.py --gpu)",
        eval_every=65_536,
        stop_at_return=475.0,
        env_backend="torch",
    ),
    name="gpu",
)
_add(
    "a2c",
    _CARTPOLE_IDS,
    Preset(
        200_000, {"n_envs": 8, "ent_coef": 0.0}, ZOO.format(algo="a2c", env="CartPole-v1") + " (budget cut from 500k to 200k)"
    ),
)
_add(
    "dqn",
    _CARTPOLE_IDS,
    Preset(
        50_000,
        {
            "learning_rate": 2.3e-3,
            "batch_size": 64,
            "buffer_size": 100_000,
            "learning_starts": 1000,
            "gamma": 0.99,
            "target_update_interval": 10,
            "train_freq": 256,
            "gradient_steps": 128,
            "exploration_fraction": 0.16,
            "exploration_final_eps": 0.04,
            "hidden": (256, 256),
        },
        ZOO.format(algo="dqn", env="CartPole-v1"),
    ),
)
# Thrust's own: the zoo's values with the learning rate annealed linearly to 0, so the last updates are the
# smallest and the policy the run ends with is less often one that has just forgotten. Over seeds 0-9 it
# ended >= 475 on 8, the zoo preset on 13 of 20 and SB3's zoo entry on 12 of 20 (docs/CHANGELOG.md).
_add(
    "dqn",
    _CARTPOLE_IDS,
    Preset(
        50_000,
        dict(_PRESETS[("dqn", "CartPole-v1")].config) | {"lr_schedule": "linear"},
        "the zoo's settings with the learning rate annealed linearly to 0 (Thrust's choice, benches/parity.py)",
    ),
    name="annealed",
)
_add("sac", _PENDULUM_IDS, Preset(20_000, {"learning_rate": 1e-3}, ZOO.format(algo="sac", env="Pendulum-v1")))
# TD3 and DDPG share the zoo's entries for these envs, value for value.
_ZOO_PENDULUM_TD3 = {
    "gamma": 0.98,
    "buffer_size": 200_000,
    "learning_starts": 10_000,
    "noise_type": "normal",
    "noise_std": 0.1,
    "gradient_steps": 1,
    "train_freq": 1,
    "learning_rate": 1e-3,
    "hidden": (400, 300),
}
_ZOO_MOUNTAIN_CAR_TD3 = {
    "noise_type": "ornstein-uhlenbeck",
    "noise_std": 0.5,
    "gradient_steps": 1,
    "train_freq": 1,
    "learning_rate": 1e-3,
    "batch_size": 256,
    "hidden": (400, 300),
}
for _algo in ("td3", "ddpg"):
    _add(_algo, _PENDULUM_IDS, Preset(20_000, _ZOO_PENDULUM_TD3, ZOO.format(algo=_algo, env="Pendulum-v1")))
    _add(
        _algo,
        ("MountainCarContinuous-v0", "thrust/MountainCarContinuous-v0"),
        Preset(300_000, _ZOO_MOUNTAIN_CAR_TD3, ZOO.format(algo=_algo, env="MountainCarContinuous-v0")),
    )
_add(
    "ppo",
    _PENDULUM_IDS,
    Preset(
        100_000,
        {"n_envs": 4, "n_steps": 1024, "gae_lambda": 0.95, "gamma": 0.9, "n_epochs": 10, "ent_coef": 0.0}
        | {"learning_rate": 1e-3, "clip_range": 0.2, "batch_size": 64, "use_sde": True, "sde_sample_freq": 4},
        ZOO.format(algo="ppo", env="Pendulum-v1"),
    ),
)
# The same without gSDE, which the player's in-tab PPO (TensorFlow.js) does not have: its Pendulum preset.
_add(
    "ppo",
    _PENDULUM_IDS,
    Preset(
        200_000,
        _PRESETS[("ppo", "Pendulum-v1")].config | {"use_sde": False, "sde_sample_freq": -1, "log_std_init": -0.5},
        ZOO.format(algo="ppo", env="Pendulum-v1") + " without gSDE (for PPO without it, as the in-tab trainer); "
        "log_std_init -0.5 and 200k steps instead",
    ),
    name="no-sde",
)
_add(
    "a2c",
    _PENDULUM_IDS,
    Preset(
        1_000_000,
        {"normalize": True, "n_envs": 8, "n_steps": 8, "gae_lambda": 0.9, "gamma": 0.9, "ent_coef": 0.0, "vf_coef": 0.4}
        | {"max_grad_norm": 0.5, "normalize_advantage": False, "learning_rate": 7e-4, "lr_schedule": "linear"}
        | {"use_sde": True, "log_std_init": -2.0, "ortho_init": False},
        ZOO.format(algo="a2c", env="Pendulum-v1"),
    ),
)

# MuJoCo (gymnasium's v5 tasks; the zoo's entries are for v4, the same tasks): the zoo's entries as they are.
_MUJOCO = ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5")
_ZOO_MUJOCO = "rl-baselines3-zoo hyperparams/{algo}.yml, {env} (the zoo's v4 entry)"
_SB3_PPO = {"n_envs": 1, "n_steps": 2048, "batch_size": 64}  # the zoo's untuned entries run SB3's defaults
_TUNED_PPO_NET = {"log_std_init": -2.0, "ortho_init": False, "activation": "relu", "hidden": (256, 256)}
_PPO_MUJOCO = {
    "HalfCheetah-v5": {"batch_size": 64, "gamma": 0.98, "learning_rate": 2.0633e-05, "ent_coef": 0.000401762}
    | {"clip_range": 0.1, "n_epochs": 20, "gae_lambda": 0.92, "max_grad_norm": 0.8, "vf_coef": 0.58096}
    | _TUNED_PPO_NET,
    "Hopper-v5": {"batch_size": 32, "gamma": 0.999, "learning_rate": 9.80828e-05, "ent_coef": 0.00229519}
    | {"clip_range": 0.2, "n_epochs": 5, "gae_lambda": 0.99, "max_grad_norm": 0.7, "vf_coef": 0.835671}
    | _TUNED_PPO_NET,
    "Walker2d-v5": {"batch_size": 32, "gamma": 0.99, "learning_rate": 5.05041e-05, "ent_coef": 0.000585045}
    | {"clip_range": 0.1, "n_epochs": 20, "gae_lambda": 0.95, "max_grad_norm": 1.0, "vf_coef": 0.871923},
    "Humanoid-v5": {"batch_size": 256, "gamma": 0.95, "learning_rate": 3.56987e-05, "ent_coef": 0.00238306}
    | {"clip_range": 0.3, "n_epochs": 5, "gae_lambda": 0.9, "max_grad_norm": 2.0, "vf_coef": 0.431892}
    | _TUNED_PPO_NET,
}
for _env in _MUJOCO:
    _long = 2_000_000 if _env == "Humanoid-v5" else 1_000_000
    _source = lambda algo, env=_env: _ZOO_MUJOCO.format(algo=algo, env=env.replace("-v5", "-v4"))  # noqa: E731
    _tuned = _env in _PPO_MUJOCO
    _ppo = {"normalize": True, "n_envs": 1, "n_steps": 512} | _PPO_MUJOCO[_env] if _tuned else _SB3_PPO | {"normalize": True}
    _add("ppo", (_env,), Preset(10_000_000 if _env == "Humanoid-v5" else 1_000_000, _ppo, _source("ppo")))
    _add("a2c", (_env,), Preset(_long, {"normalize": True, "n_envs": 1}, _source("a2c")))
    _add("sac", (_env,), Preset(_long, {"learning_starts": 10_000}, _source("sac")))
    _td3 = {"learning_starts": 10_000, "noise_type": "normal", "noise_std": 0.1, "learning_rate": 1e-3}
    _add("td3", (_env,), Preset(_long, _td3 | {"batch_size": 256, "hidden": (400, 300)}, _source("td3")))

# Goal envs (gymnasium-robotics' Fetch tasks; the zoo's entry is for FetchReach-v1, v4 the same task): the zoo's SAC
# with HER, normalised, one critic; benches/parity.py measures it against SB3 on the same settings.
_add(
    "sac",
    ("FetchReach-v4",),
    Preset(
        20_000,
        {"buffer_size": 1_000_000, "batch_size": 256, "gamma": 0.95, "learning_rate": 1e-3, "learning_starts": 1000}
        | {"replay_buffer_class": "HerReplayBuffer", "goal_selection_strategy": "future", "n_sampled_goal": 4}
        | {"hidden": (64, 64), "n_critics": 1, "normalize": True},
        ZOO.format(algo="sac", env="FetchReach-v1"),
    ),
)

# Memory tests (the zoo's velocity-free envs, hyperparams/ppo_lstm.yml, sb3-contrib's RecurrentPPO benchmark): the
# zoo's values; its policy_kwargs as fields (ortho_init=False, ReLU, lstm_hidden_size 64, a critic LSTM of its own,
# net_arch pi=[64], vf=[64] as hidden (64,)).
_ZOO_LSTM_NET = {"ortho_init": False, "activation": "relu", "lstm_hidden_size": 64, "critic_rnn": "separate", "hidden": (64,)}
_add(
    "recurrent_ppo",
    ("CartPoleNoVel-v1", "thrust/CartPoleNoVel-v0"),
    Preset(
        100_000,
        # the zoo's ppo_lstm entry is its ppo entry for CartPole-v1, normalised, with the LSTM
        _PRESETS[("ppo", "CartPole-v1")].config | {"normalize": True} | _ZOO_LSTM_NET,
        ZOO.format(algo="ppo_lstm", env="CartPoleNoVel-v1"),
    ),
)
_add(
    "recurrent_ppo",
    ("PendulumNoVel-v1", "thrust/PendulumNoVel-v0"),
    Preset(
        100_000,
        {"normalize": True, "n_envs": 4, "n_steps": 1024, "gae_lambda": 0.95, "gamma": 0.9, "n_epochs": 10}
        | {"ent_coef": 0.0, "learning_rate": 1e-3, "clip_range": 0.2, "use_sde": True, "sde_sample_freq": 4}
        | _ZOO_LSTM_NET,
        ZOO.format(algo="ppo_lstm", env="PendulumNoVel-v1"),
    ),
)

# MountainCar's sparse reward: the zoo's PPO entry (16 envs x 16 steps, normalised; its budget is 1M steps).
_add(
    "ppo",
    ("MountainCar-v0", "thrust/MountainCar-v0"),
    Preset(
        1_000_000,
        {"normalize": True, "n_envs": 16, "n_steps": 16, "gae_lambda": 0.98, "gamma": 0.99, "n_epochs": 4, "ent_coef": 0.0},
        ZOO.format(algo="ppo", env="MountainCar-v0"),
    ),
)

# MountainCarContinuous: the zoo's PPO entry (one env x 8 steps, normalised, gSDE with log_std_init -3.29 and
# torch's default init; its budget is 20k steps).
_add(
    "ppo",
    ("MountainCarContinuous-v0", "thrust/MountainCarContinuous-v0"),
    Preset(
        20_000,
        {"normalize": True, "n_envs": 1, "n_steps": 8, "batch_size": 256, "gamma": 0.9999, "learning_rate": 7.77e-05}
        | {"ent_coef": 0.00429, "clip_range": 0.1, "n_epochs": 10, "gae_lambda": 0.9, "max_grad_norm": 5.0, "vf_coef": 0.19}
        | {"use_sde": True, "log_std_init": -3.29, "ortho_init": False},
        ZOO.format(algo="ppo", env="MountainCarContinuous-v0"),
    ),
)

# Acrobot: the zoo's entries for PPO (16 envs x 256 steps, normalised), A2C (16 envs, normalised) and DQN.
_add(
    "ppo",
    ("Acrobot-v1", "thrust/Acrobot-v0"),
    Preset(
        1_000_000,
        {"normalize": True, "n_envs": 16, "n_steps": 256, "gae_lambda": 0.94, "gamma": 0.99, "n_epochs": 4, "ent_coef": 0.0},
        ZOO.format(algo="ppo", env="Acrobot-v1"),
    ),
)
_add(
    "a2c",
    ("Acrobot-v1", "thrust/Acrobot-v0"),
    Preset(500_000, {"normalize": True, "n_envs": 16, "ent_coef": 0.0}, ZOO.format(algo="a2c", env="Acrobot-v1")),
)

# The bandit: one-step episodes, so gamma does not matter; small budgets, frequent updates.
_add(
    "ppo",
    ("thrust/Bandit-v0",),
    Preset(4_000, {"n_envs": 8, "n_steps": 32, "batch_size": 64, "n_epochs": 4, "learning_rate": 3e-3}, "Thrust's own tuning"),
)
# The card game (a Dict observation and action masks): Thrust's own tuning, as for the bandit.
_add("ppo", ("thrust/Cards-v0",), Preset(12_288, {"n_envs": 8, "n_steps": 64, "batch_size": 128}, "Thrust's own tuning"))
_add("a2c", ("thrust/Bandit-v0",), Preset(4_000, {"n_envs": 8, "n_steps": 4, "learning_rate": 3e-3}, "Thrust's own tuning"))
_add(
    "dqn",
    ("thrust/Bandit-v0",),
    Preset(
        3_000,
        {
            "learning_starts": 200,
            "train_freq": 1,
            "batch_size": 64,
            "target_update_interval": 100,
            "exploration_fraction": 0.3,
            "learning_rate": 1e-3,
        },
        "Thrust's own tuning",
    ),
)

# Snake: image observations, so a CNN; settings in the spirit of the zoo's Atari presets, scaled down.
_add(
    "ppo",
    ("thrust/Snake-v0",),
    Preset(
        300_000,
        {
            "n_envs": 8,
            "n_steps": 128,
            "batch_size": 256,
            "n_epochs": 4,
            "learning_rate": 2.5e-4,
            "lr_schedule": "linear",
            "clip_range": 0.1,
            "ent_coef": 0.01,
            "vf_coef": 0.5,
            "gamma": 0.99,
            "activation": "relu",
        },
        ZOO.format(algo="ppo", env="atari") + ", scaled to a 10x10 board",
    ),
)
_add(
    "dqn",
    ("thrust/Snake-v0",),
    Preset(
        300_000,
        {
            "n_envs": 4,
            "learning_rate": 1e-4,
            "buffer_size": 100_000,
            "learning_starts": 5_000,
            "batch_size": 32,
            "train_freq": 1,
            "gradient_steps": 1,
            "target_update_interval": 1_000,
            "exploration_fraction": 0.2,
            "exploration_final_eps": 0.02,
        },
        ZOO.format(algo="dqn", env="atari") + ", scaled to a 10x10 board",
    ),
)


# Atari: the zoo's `atari` entries, which the zoo applies to every game ale-py registers (ALE/Breakout-v5,
# BreakoutNoFrameskip-v4, ...). env_wrapper "atari" is the zoo's AtariWrapper (envs/pipeline.py).
_ATARI_PIPELINE = {"env_wrapper": "atari", "frame_stack": 4}
_ZOO_ATARI = "rl-baselines3-zoo hyperparams/{algo}.yml, atari"
_FAMILY_PRESETS: dict[tuple[str, str], Preset] = {
    ("ppo", "atari"): Preset(
        10_000_000,
        _ATARI_PIPELINE
        | {"n_envs": 8, "n_steps": 128, "n_epochs": 4, "batch_size": 256, "learning_rate": 2.5e-4, "lr_schedule": "linear"}
        | {"clip_range": 0.1, "clip_schedule": "linear", "vf_coef": 0.5, "ent_coef": 0.01},
        _ZOO_ATARI.format(algo="ppo"),
    ),
    ("a2c", "atari"): Preset(
        10_000_000,
        _ATARI_PIPELINE | {"n_envs": 16, "ent_coef": 0.01, "vf_coef": 0.25, "rms_prop_eps": 1e-5},
        _ZOO_ATARI.format(algo="a2c") + " (its RMSpropTFLike optimizer as torch's RMSprop with the same eps)",
    ),
    ("dqn", "atari"): Preset(
        10_000_000,
        _ATARI_PIPELINE
        | {"buffer_size": 100_000, "learning_rate": 1e-4, "batch_size": 32, "learning_starts": 100_000}
        | {"target_update_interval": 1_000, "train_freq": 4, "gradient_steps": 1}
        | {"exploration_fraction": 0.1, "exploration_final_eps": 0.01},
        _ZOO_ATARI.format(algo="dqn") + " (frames shared in the replay buffer: the same samples in 1/8 of the memory)",
    ),
    # MinAtar (10 x 10 boards, the zoo has no entry): PPO with the zoo's Atari values, as for Snake; DQN with the
    # MinAtar paper's (Young & Tian, 2019: replay 100k, start 5,000, target every 1,000, epsilon 1 -> 0.1 over
    # the first 100k of 5M frames, lr 2.5e-4; Adam here where the paper uses RMSprop).
    ("ppo", "minatar"): Preset(
        5_000_000,
        {"env_wrapper": "minatar"}
        | {"n_envs": 8, "n_steps": 128, "n_epochs": 4, "batch_size": 256, "learning_rate": 2.5e-4, "lr_schedule": "linear"}
        | {"clip_range": 0.1, "clip_schedule": "linear", "vf_coef": 0.5, "ent_coef": 0.01, "activation": "relu"},
        _ZOO_ATARI.format(algo="ppo") + ", on MinAtar's 10x10 frames (the zoo has no MinAtar entry)",
    ),
    ("dqn", "minatar"): Preset(
        5_000_000,
        {"env_wrapper": "minatar", "buffer_size": 100_000, "learning_starts": 5_000, "batch_size": 32, "train_freq": 1}
        | {"target_update_interval": 1_000, "learning_rate": 2.5e-4}
        | {"exploration_fraction": 0.02, "exploration_final_eps": 0.1},
        "the MinAtar paper's DQN (Young & Tian, 2019), with Adam for its RMSprop",
    ),
}
#: An id per family that the preset tests and benches train.
FAMILY_EXAMPLES = {"atari": "ALE/Breakout-v5", "minatar": "MinAtar/Breakout-v1"}

# Thrust's MinAtar cores (envs/core/minatar.py): MinAtar's presets, without the pipeline (they observe channels first).
for _algo in ("ppo", "dqn"):
    _family = _FAMILY_PRESETS[(_algo, "minatar")]
    _add(
        _algo,
        ("thrust/MinAtarBreakout-v0", "thrust/MinAtarSpaceInvaders-v0"),
        Preset(
            _family.timesteps,
            {key: value for key, value in _family.config.items() if key != "env_wrapper"},
            _family.source + "; the core observes channels first, so no env_wrapper",
        ),
    )


def env_family(env_id: str) -> str | None:
    """ "atari" for a game ale-py registers, "minatar" for MinAtar's ids, else None."""
    if env_id.startswith("MinAtar/"):
        return "minatar"
    if env_id.startswith("thrust/") or env_id in {e for _, e in _PRESETS}:
        return None
    from ..envs.pipeline import is_atari

    return "atari" if is_atari(env_id) else None


def get_preset(algo: str, env_id: str, name: str = DEFAULT_PRESET) -> Preset:
    """The preset of this name for this pair; the default one falls back to the env family's (Atari's, MinAtar's),
    then to the algorithm's defaults with DEFAULT_TIMESTEPS."""
    if name == DEFAULT_PRESET:
        if (algo, env_id) in _PRESETS:
            return _PRESETS[(algo, env_id)]
        family = env_family(env_id)
        return _FAMILY_PRESETS.get((algo, family), Preset(DEFAULT_TIMESTEPS)) if family else Preset(DEFAULT_TIMESTEPS)
    if (algo, env_id, name) not in _NAMED:
        raise ConfigError(f"no preset {name!r} for {algo} on {env_id}; its presets: {', '.join(preset_names(algo, env_id))}")
    return _NAMED[(algo, env_id, name)]


def preset_names(algo: str, env_id: str) -> list[str]:
    """The presets a pair has: the default one, then its named ones."""
    return [DEFAULT_PRESET, *sorted(name for (a, e, name) in _NAMED if (a, e) == (algo, env_id))]


def all_presets() -> list[tuple[str, str, str, Preset]]:
    """Every preset Thrust ships: (algo, env id, preset name, preset)."""
    named = [(algo, env_id, name, preset) for (algo, env_id, name), preset in _NAMED.items()]
    families = [(algo, FAMILY_EXAMPLES[family], DEFAULT_PRESET, preset) for (algo, family), preset in _FAMILY_PRESETS.items()]
    return [(algo, env_id, DEFAULT_PRESET, preset) for (algo, env_id), preset in _PRESETS.items()] + families + named
