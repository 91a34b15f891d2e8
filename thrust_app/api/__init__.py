"""Thrust as a Python library, in Stable-Baselines3's shape: the model classes (`PPO(env).learn(n)`,
`predict`, `save`/`load`, `export`, `evaluate`; model.py), their callbacks (callbacks.py), prediction's
conventions (predict.py) and the model file (model_file.py). `from thrust_app import PPO` reaches them."""

from .callbacks import Callback, CheckpointEvery, FunctionCallback, KeepBest, StopAtReturn
from .model import A2C, DDPG, DQN, PPO, SAC, TD3, Model, RecurrentPPO, load_model

__all__ = [
    "A2C",
    "DDPG",
    "DQN",
    "PPO",
    "SAC",
    "TD3",
    "Callback",
    "CheckpointEvery",
    "FunctionCallback",
    "KeepBest",
    "Model",
    "RecurrentPPO",
    "StopAtReturn",
    "load_model",
]
