"""Atari in EnvPool's C++ threads behind Thrust's VecEnv interface (`vec_env="envpool"`).

EnvPool steps all copies of an ALE game in native threads with its own preprocessing, which matches the
`atari` pipeline's: noop reset, frame skip 4 with max-pooling, 84x84 grey (area resize), FIRE at reset,
`frame_stack` frames. Thrust keeps EnvPool's raw rewards and real game ends and adds the two
training-only signals itself, so the logged returns stay the game's: a lost life terminates for learning
while the game goes on (EnvPool's `episodic_life` would restart the game on the reset that same-step
auto-reset needs), and rewards become their sign. Unlike the gymnasium pipeline, no FIRE is pressed after
a lost life: the policy learns to press it. Frames are EnvPool's own (its ALE build and resize), close to
but not byte-equal with gymnasium's, so evaluations (gymnasium's pipeline) see the same kind of frames,
not the very same. Env state is not checkpointed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .arrays import BackendName, make_backend
from .core import Discrete
from .pipeline import Pipeline, is_atari
from .vec import BatchStep, VecEnv, from_gym_space


def envpool_task(env_id: str) -> tuple[str, dict[str, Any]]:
    """EnvPool's task id and options for a gymnasium Atari id: `ALE/Breakout-v5` keeps its sticky actions
    (0.25), `BreakoutNoFrameskip-v4` has none."""
    import gymnasium as gym

    if not is_atari(env_id):
        raise ValueError(f"vec_env 'envpool' runs Atari games; {env_id} is not one: use vec_env sync or async")
    game = env_id.removeprefix("ALE/").split("-v")[0].removesuffix("NoFrameskip")
    sticky = float(gym.spec(env_id).kwargs.get("repeat_action_probability", 0.0))
    return f"{game}-v5", {"repeat_action_probability": sticky}


class EnvPoolVecEnv(VecEnv):
    """N copies of an Atari game in EnvPool, same-step auto-reset and `final_obs` as Thrust's other vec envs."""

    def __init__(
        self, env_id: str, num_envs: int, pipeline: Pipeline, seed: int | None = None, backend: BackendName = "numpy"
    ) -> None:
        try:
            import envpool
        except ImportError:
            raise ModuleNotFoundError('vec_env "envpool" needs EnvPool: pip install "thrust_app[envpool]"') from None
        if pipeline.wrapper != "atari":
            raise ValueError("vec_env 'envpool' does the atari pipeline's preprocessing: set env_wrapper=atari")
        task, options = envpool_task(env_id)
        self.pool = envpool.make(
            task, env_type="gymnasium", num_envs=num_envs, seed=seed or 0, stack_num=pipeline.frame_stack,
            episodic_life=False, reward_clip=False, noop_max=30, use_fire_reset=True, **options,
        )  # fmt: skip
        self.env_id = env_id
        self.num_envs = num_envs
        self.observation_space = from_gym_space(self.pool.observation_space, "observation", env_id)
        self.action_space = from_gym_space(self.pool.action_space, "action", env_id)
        assert isinstance(self.action_space, Discrete)
        self.backend = make_backend(backend, seed, "cpu")
        self._lives = np.zeros(num_envs, dtype=np.int64)
        self._returns = np.zeros(num_envs)
        self._lengths = np.zeros(num_envs, dtype=np.int64)

    def reset(self, seed: int | None = None) -> Any:
        obs, info = self.pool.reset()
        self._lives = info["lives"].astype(np.int64)
        self._returns[:] = 0.0
        self._lengths[:] = 0
        return self.backend.asarray(obs)

    def step(self, actions: Any) -> BatchStep:
        actions = actions.cpu().numpy() if hasattr(actions, "cpu") else np.asarray(actions)
        obs, _, _, truncated, info = self.pool.step(actions.astype(np.int32))
        game_over = info["terminated"].astype(bool)
        lives = info["lives"].astype(np.int64)
        life_lost = (lives < self._lives) & (lives > 0)
        self._returns += info["reward"]  # the game's score, before the reward's sign below
        self._lengths += 1
        ended = game_over | truncated
        returns, lengths = self._returns.copy(), self._lengths.copy()
        final_obs = obs.copy()
        if ended.any():
            ids = np.flatnonzero(ended)
            reset_obs, reset_info = self.pool.reset(ids.astype(np.int32))
            obs = obs.copy()
            obs[ids] = reset_obs
            lives[ids] = reset_info["lives"]
            self._returns[ids], self._lengths[ids] = 0.0, 0
        self._lives = lives
        asarray = self.backend.asarray
        return BatchStep(
            obs=asarray(obs),
            reward=asarray(np.sign(info["reward"]).astype(np.float32)),
            terminated=asarray(game_over | life_lost),
            truncated=asarray(truncated & ~game_over),
            final_obs=asarray(final_obs),
            episode_return=asarray(returns),
            episode_length=asarray(lengths),
            episode_end=asarray(ended),
        )

    def close(self) -> None:
        self.pool.close()
