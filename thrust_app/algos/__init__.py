"""Thrust's algorithms, one readable file each: A2C, PPO (on-policy), DQN, SAC (off-policy)."""

from __future__ import annotations

from .a2c import A2C, A2CConfig
from .base import ActionSpaceError, Algorithm
from .dqn import DQN, DQNConfig
from .ppo import PPO, PPOConfig
from .sac import SAC, SACConfig

ALGOS: dict[str, type[Algorithm]] = {cls.name: cls for cls in (A2C, PPO, DQN, SAC)}


def get_algo(name: str) -> type[Algorithm]:
    try:
        return ALGOS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown algorithm {name!r}; choose one of {', '.join(ALGOS)}") from None


__all__ = ["A2C", "A2CConfig", "ALGOS", "ActionSpaceError", "Algorithm", "DQN", "DQNConfig", "PPO", "PPOConfig",
           "SAC", "SACConfig", "get_algo"]
