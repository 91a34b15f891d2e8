"""Thrust's algorithms, one readable file each: A2C, PPO, recurrent PPO (on-policy), DQN, SAC, TD3 and DDPG
(off-policy)."""

from __future__ import annotations

from typing import Any

import torch

from ..config import apply_overrides
from ..envs import env_spaces
from .a2c import A2C, A2CConfig
from .base import ActionSpaceError, Algorithm
from .dqn import DQN, DQNConfig
from .her import goal_space
from .ppo import PPO, PPOConfig
from .recurrent_ppo import RecurrentPPO, RecurrentPPOConfig
from .sac import SAC, SACConfig
from .td3 import DDPG, TD3, DDPGConfig, TD3Config

ALGOS: dict[str, type[Algorithm]] = {cls.name: cls for cls in (A2C, PPO, RecurrentPPO, DQN, SAC, TD3, DDPG)}
#: Other names users know an algorithm by: the zoo's (rl-baselines3-zoo calls RecurrentPPO ppo_lstm).
ALGO_ALIASES = {"ppo_lstm": "recurrent_ppo", "recurrentppo": "recurrent_ppo"}


def get_algo(name: str) -> type[Algorithm]:
    try:
        return ALGOS[ALGO_ALIASES.get(name.lower(), name.lower())]
    except KeyError:
        raise ValueError(f"unknown algorithm {name!r}; choose one of {', '.join(ALGOS)}") from None


def build_algorithm(algo: str, env_id: str, config: dict[str, Any], device: torch.device, seed: int = 0) -> Algorithm:
    """The algorithm `algo` for `env_id`'s spaces (inside the observation pipeline `config` names) with `config`
    (a run's saved config, checked again), on `device`."""
    from ..envs import env_observation_parts, make_env
    from ..envs.pipeline import Pipeline
    from ..nets.extractor import FeatureExtractor

    algo_cls = get_algo(algo)
    checked = apply_overrides(algo_cls.Config(), config, algo_cls.name)
    pipeline = Pipeline.of(checked)
    obs_space, action_space = env_spaces(env_id, pipeline)
    parts = env_observation_parts(env_id, pipeline) if obs_space.shape and len(obs_space.shape) == 1 else None
    front = parts if parts and any(part.is_image for part in parts) else None  # vectors alone: one flat MLP input
    if checked.features_extractor:  # the user's own module reads the observation instead
        front = FeatureExtractor(checked.features_extractor, checked.features_extractor_kwargs)
    algo = algo_cls(obs_space.shape, action_space, checked, device, seed, obs_space.dtype, front)
    if getattr(checked, "replay_buffer_class", None) == "HerReplayBuffer":
        goals_env = make_env(env_id, pipeline)  # kept open: its compute_reward rewards relabelled goals
        algo.use_goals(goal_space(env_id, parts, goals_env))
    return algo


__all__ = [
    "A2C",
    "ALGOS",
    "DDPG",
    "DQN",
    "PPO",
    "SAC",
    "TD3",
    "A2CConfig",
    "ActionSpaceError",
    "Algorithm",
    "DDPGConfig",
    "DQNConfig",
    "PPOConfig",
    "RecurrentPPO",
    "RecurrentPPOConfig",
    "SACConfig",
    "TD3Config",
    "build_algorithm",
    "get_algo",
]
