"""Env copies in worker processes step exactly as the in-process loop does for the same seeds."""

from __future__ import annotations

import numpy as np
import pytest

from thrust_app.envs.batched import make_batched
from thrust_app.envs.pipeline import Pipeline


@pytest.mark.parametrize(("env_id", "pipeline"), [("CartPole-v1", None), ("ALE/Breakout-v5", Pipeline("atari", 4))])
def test_async_workers_give_the_same_trajectories_as_sync(env_id, pipeline):
    sync = make_batched(env_id, 3, seed=7, pipeline=pipeline)
    workers = make_batched(env_id, 3, seed=7, pipeline=pipeline, vec_env="async")
    try:
        assert np.array_equal(sync.reset(), workers.reset())
        rng = np.random.default_rng(0)
        ends = 0
        for _ in range(120):
            actions = rng.integers(sync.action_space.n, size=3)
            a, b = sync.step(actions), workers.step(actions)
            for field in a._fields:
                assert np.array_equal(getattr(a, field), getattr(b, field)), field
            ends += int(a.terminated.sum() + a.truncated.sum())
        assert ends > 0  # the auto-resets and final observations were compared too
    finally:
        sync.close()
        workers.close()


def test_async_is_refused_for_an_env_already_stepped_in_arrays():
    with pytest.raises(ValueError, match="vec_env 'async' is for gymnasium envs"):
        make_batched("cartpole", 2, vec_env="async")
