"""Atari in EnvPool keeps Thrust's vec-env semantics: same-step reset with the final frames kept, a lost life
terminating for learning while the game goes on, sign rewards, and the game's own score reported."""

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


def test_envpool_refuses_what_it_cannot_run():
    with pytest.raises(ValueError, match="envpool' runs Atari games; CartPole-v1 is not one"):
        make_batched("CartPole-v1", 2, pipeline=Pipeline("atari", 4), vec_env="envpool")
    with pytest.raises(ValueError, match="set env_wrapper=atari"):
        make_batched("ALE/Breakout-v5", 2, vec_env="envpool")
