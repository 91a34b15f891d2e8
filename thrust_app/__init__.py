"""Thrust: train small RL policies with PyTorch, export them to ONNX, play them back in the browser.

`from thrust_app import PPO` gives the model classes of `thrust_app.api` (SB3's shape: `PPO(env).learn(n)`),
loaded on first use. Importing Thrust registers its environments with gymnasium when gymnasium is
installed; under Pyodide (no numpy, no gymnasium) only the pure-Python cores in `thrust_app.envs.core`
are used, and nothing here imports torch.
"""

from typing import Any

from .version import __version__

#: The names `from thrust_app import ...` takes from `thrust_app.api` (torch loads only when one is used).
API_NAMES = (
    "A2C",
    "DDPG",
    "DQN",
    "PPO",
    "SAC",
    "TD3",
    "RecurrentPPO",
    "Model",
    "load_model",
    "Callback",
    "KeepBest",
    "CheckpointEvery",
    "StopAtReturn",
    "FunctionCallback",
)


def __getattr__(name: str) -> Any:
    if name in API_NAMES:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'thrust_app' has no attribute {name!r}")


def _register_with_gymnasium() -> None:
    try:
        import gymnasium  # noqa: F401  (present? then register)
    except ImportError:  # the browser, or a bare install: the cores still work
        return
    from .envs.gym_adapter import register_envs

    register_envs()


_register_with_gymnasium()

__all__ = ["__version__", *API_NAMES]
