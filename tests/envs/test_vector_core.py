"""CoreVec: N pure-Python cores per call, as the browser's training loop steps them."""

from __future__ import annotations

import pytest

from thrust_app.envs.core import make_core
from thrust_app.envs.core.vector import CoreVec


def test_copies_replay_single_envs_seeded_seed_plus_index_and_reset_on_the_same_step():
    vec = CoreVec("cartpole", 3, seed=10)
    singles = [make_core("cartpole") for _ in range(3)]
    assert vec.reset() == [x for i, env in enumerate(singles) for x in env.reset(10 + i)]
    ended = 0
    for _ in range(60):
        step = vec.step([1, 1, 1])  # always right: every pole falls within a few dozen steps
        for index, env in enumerate(singles):
            single = env.step(1)
            assert step.rewards[index] == single.reward and step.terminated[index] == single.terminated
            if single.terminated:
                assert (env.episode_return, env.steps) in step.finished
                env.reset()  # each copy's generator continues, as the vec env's does
                ended += 1
            assert step.obs[4 * index : 4 * index + 4] == env.state
    assert ended >= 3


def test_truncated_copies_report_their_final_observation():
    vec = CoreVec("pendulum", 2, seed=0)
    vec.reset()
    for _ in range(199):
        assert vec.step([0.5, -0.5]).truncated_obs == []
    step = vec.step([0.5, -0.5])
    assert step.truncated == [True, True] and [index for index, _ in step.truncated_obs] == [0, 1]
    assert all(len(final) == 3 for _, final in step.truncated_obs)
    assert [length for _, length in step.finished] == [200, 200]
    assert step.obs != [x for _, final in step.truncated_obs for x in final]  # the new episodes' first observations


def test_a_wrong_number_of_actions_is_refused():
    vec = CoreVec("cartpole", 2, seed=0)
    vec.reset()
    with pytest.raises(ValueError, match=r"expected 2 action values \(2 envs x 1\), got 3"):
        vec.step([0, 1, 1])
    with pytest.raises(ValueError, match="num_envs must be >= 1"):
        CoreVec("cartpole", 0, seed=0)
