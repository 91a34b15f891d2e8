"""EnvPool keeps Thrust's vec-env semantics: same-step reset with the final observations kept; for Atari a lost
life terminating for learning while the game goes on, sign rewards, and the game's own score reported."""

from __future__ import annotations

import numpy as np
import pytest

from thrust_app.envs.batched import make_batched
from thrust_app.envs.pipeline import Pipeline

pytest.importorskip("envpool", reason="make test installs envpool (the test extra)")


def test_envpool_steps_breakout_with_the_atari_pipelines_signals():
    env = make_batched("ALE/Breakout-v5", 2, seed=0, pipeline=Pipeline("atari", 4), vec_env="envpool")
    try:
        obs = env.reset()
        assert obs.shape == (2, 4, 84, 84) and obs.dtype == np.uint8
        rng = np.random.default_rng(0)
        lives_lost, games, rewards = 0, [], set()
        for _ in range(3000):
            step = env.step(rng.integers(4, size=2))
            rewards |= set(step.reward.tolist())
            ended = step.episode_end
            lives_lost += int((step.terminated & ~ended).sum())
            games += [(float(r), int(n)) for r, n in zip(step.episode_return[ended], step.episode_length[ended], strict=True)]
            if ended.any():
                assert not np.array_equal(step.obs[ended], step.final_obs[ended])  # a new game's frames, the old kept
            if len(games) >= 2:
                break
        assert games and lives_lost >= 4 * len(games)  # Breakout's five lives, each a terminal for learning
        assert rewards <= {0.0, 1.0}
        assert all(length > 50 for _, length in games)  # whole games, not single lives
    finally:
        env.close()


def test_envpool_runs_mujoco_under_gymnasiums_id_with_same_step_resets():
    env = make_batched("HalfCheetah-v5", 2, seed=0, vec_env="envpool")
    try:
        obs = env.reset()
        assert obs.shape == (2, 17) and obs.dtype == np.float32 and env.action_space.shape == (6,)
        rng = np.random.default_rng(0)
        for step_index in range(1, 1001):
            step = env.step(rng.uniform(-1, 1, (2, 6)).astype(np.float32))
            if step_index < 1000:
                assert not step.episode_end.any()
        assert step.truncated.all() and step.episode_end.all() and (step.episode_length == 1000).all()
        assert not np.array_equal(step.obs, step.final_obs)  # new episodes started, the final states kept
    finally:
        env.close()


def test_envpool_refuses_what_it_cannot_run():
    with pytest.raises(ValueError, match="envpool' runs Atari games and EnvPool's own ids; thrust/Snake-v0 is neither"):
        make_batched("snake", 2, vec_env="envpool")
    with pytest.raises(ValueError, match=r"EnvPool's FrozenLake-v1 observes Discrete\(16\), which it does not flatten"):
        make_batched("FrozenLake-v1", 2, vec_env="envpool")
    with pytest.raises(ValueError, match="set env_wrapper=atari"):
        make_batched("ALE/Breakout-v5", 2, vec_env="envpool")
    with pytest.raises(ValueError, match="drop env_wrapper and frame_stack"):
        make_batched("HalfCheetah-v5", 2, pipeline=Pipeline("none", 4), vec_env="envpool")
