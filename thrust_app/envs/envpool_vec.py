"""EnvPool's C++ threads behind Thrust's VecEnv interface (`vec_env="envpool"`): Atari games and the other ids
EnvPool has under gymnasium's names (MuJoCo's `HalfCheetah-v5`, `Hopper-v5`, ..., classic control).

Every copy that ends an episode is reset in the same call (EnvPool itself resets on the next step), so the
final observation is kept and the next one starts the new episode, as Thrust's other vec envs do.

For an Atari game EnvPool steps all copies in native threads with its own preprocessing, which matches the
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


def envpool_task(env_id: str, pipeline: Pipeline) -> tuple[str, dict[str, Any]]:
    """EnvPool's task id and options for a gymnasium id: an Atari game's (`ALE/Breakout-v5` keeps its sticky
    actions, 0.25; `BreakoutNoFrameskip-v4` has none) with the atari pipeline's preprocessing, or the same id
    where EnvPool has it (no observation pipeline then)."""
    import envpool
    import gymnasium as gym

    if is_atari(env_id):
        if pipeline.wrapper != "atari":
            raise ValueError("vec_env 'envpool' does the atari pipeline's preprocessing: set env_wrapper=atari")
        game = env_id.removeprefix("ALE/").split("-v")[0].removesuffix("NoFrameskip")
        sticky = float(gym.spec(env_id).kwargs.get("repeat_action_probability", 0.0))
        options = dict(stack_num=pipeline.frame_stack, episodic_life=False, reward_clip=False, noop_max=30)
        return f"{game}-v5", options | {"use_fire_reset": True, "repeat_action_probability": sticky}
    if env_id not in envpool.list_all_envs():
        raise ValueError(f"vec_env 'envpool' runs Atari games and EnvPool's own ids; {env_id} is neither: use sync or async")
    if pipeline != Pipeline():
        raise ValueError(f"vec_env 'envpool' runs {env_id} as EnvPool defines it: drop env_wrapper and frame_stack")
    return env_id, {}


class EnvPoolVecEnv(VecEnv):
    """N copies of an env in EnvPool, same-step auto-reset and `final_obs` as Thrust's other vec envs; an Atari
    game's training signals (life loss, reward sign) added here from EnvPool's raw reward and lives."""

    def __init__(
        self, env_id: str, num_envs: int, pipeline: Pipeline, seed: int | None = None, backend: BackendName = "numpy"
    ) -> None:
        import gymnasium as gym

        try:
            import envpool
        except ImportError:
            raise ModuleNotFoundError('vec_env "envpool" needs EnvPool: pip install "thrust_app[envpool]"') from None
        task, options = envpool_task(env_id, pipeline)
        self.atari = is_atari(env_id)
        self.pool = envpool.make(task, env_type="gymnasium", num_envs=num_envs, seed=seed or 0, **options)
        self.env_id = env_id
        self.num_envs = num_envs
        if not isinstance(self.pool.observation_space, gym.spaces.Box):
            self.pool.close()
            raise ValueError(
                f"vec_env 'envpool': EnvPool's {env_id} observes {self.pool.observation_space}, which it does not "
                "flatten as Thrust's own envs do: use vec_env sync or async"
            )
        self.observation_space = from_gym_space(self.pool.observation_space, "observation", env_id)
        self.action_space = from_gym_space(self.pool.action_space, "action", env_id)
        self.backend = make_backend(backend, seed, "cpu")
        self._lives = np.zeros(num_envs, dtype=np.int64)
        self._returns = np.zeros(num_envs)
        self._lengths = np.zeros(num_envs, dtype=np.int64)

    def _obs(self, obs: np.ndarray) -> Any:
        return self.backend.asarray(np.asarray(obs, dtype=self.observation_space.dtype))

    def reset(self, seed: int | None = None) -> Any:
        obs, info = self.pool.reset()
        self._lives = info["lives"].astype(np.int64) if self.atari else self._lives
        self._returns[:] = 0.0
        self._lengths[:] = 0
        return self._obs(obs)

    def step(self, actions: Any) -> BatchStep:
        actions = actions.cpu().numpy() if hasattr(actions, "cpu") else np.asarray(actions)
        continuous = not isinstance(self.action_space, Discrete)
        obs, reward, terminated, truncated, info = self.pool.step(actions if continuous else actions.astype(np.int32))
        if self.atari:  # the game's own end and score; a lost life terminates for learning, rewards become signs
            terminated, raw = info["terminated"].astype(bool), info["reward"]
            lives = info["lives"].astype(np.int64)
            learning_end = terminated | ((lives < self._lives) & (lives > 0))
            reward = np.sign(raw)
        else:
            raw, learning_end = reward, terminated
        self._returns += raw
        self._lengths += 1
        ended = terminated | truncated
        returns, lengths = self._returns.copy(), self._lengths.copy()
        final_obs = obs.copy()
        if ended.any():
            ids = np.flatnonzero(ended)
            reset_obs, reset_info = self.pool.reset(ids.astype(np.int32))
            obs = obs.copy()
            obs[ids] = reset_obs
            if self.atari:
                lives[ids] = reset_info["lives"]
            self._returns[ids], self._lengths[ids] = 0.0, 0
        if self.atari:
            self._lives = lives
        asarray = self.backend.asarray
        return BatchStep(
            obs=self._obs(obs),
            reward=asarray(np.asarray(reward, dtype=np.float32)),
            terminated=asarray(learning_end),
            truncated=asarray(truncated & ~terminated),
            final_obs=self._obs(final_obs),
            episode_return=asarray(returns),
            episode_length=asarray(lengths),
            episode_end=asarray(ended),
        )

    def close(self) -> None:
        self.pool.close()
