"""Evaluation in arrays (speed/array_evaluation.py): the episodes of an env with an array-batched form, played as
rows of one batched env, give exactly the reference's returns and lengths (one gymnasium env per episode)."""

from __future__ import annotations

import numpy as np
import pytest

from thrust_app.envs.batched import BATCHED_ENVS, make_batched
from thrust_app.envs.core import Discrete, make_core
from thrust_app.envs.pipeline import Pipeline
from thrust_app.speed.array_evaluation import array_twin
from thrust_app.training.evaluation import evaluate


def linear_policy(env_id: str, seed: int = 0):
    """A fixed random linear policy of the observation: its actions follow every digit the env gives it."""
    core = make_core(env_id)
    width, space = core.observation_space.shape[0], core.action_space
    rng = np.random.default_rng(seed)
    if isinstance(space, Discrete):
        weights = rng.normal(size=(width, space.n)).astype(np.float32)
        return lambda obs: (obs @ weights).argmax(1)
    weights = rng.normal(size=(width, space.shape[0])).astype(np.float32)
    low, high = np.float32(space.low[0]), np.float32(space.high[0])
    return lambda obs: np.clip(obs @ weights * 3, low, high).astype(np.float32)


@pytest.mark.parametrize("env_id", sorted(BATCHED_ENVS))
def test_episodes_in_arrays_are_the_reference_episodes(env_id):
    act = linear_policy(env_id)
    fast = evaluate(act, env_id, 40, seed=100)
    reference = evaluate(act, env_id, 40, seed=100, in_arrays=False)
    assert fast.returns == reference.returns and fast.lengths == reference.lengths
    assert fast.successes is None and reference.successes is None
    assert len(set(fast.returns)) > 1  # the episodes differ: each started from its own seed's state
    for seed in (3, 4):  # one episode: a batched env of one copy steps through the core's scalar step
        assert evaluate(act, env_id, 1, seed).returns == evaluate(act, env_id, 1, seed, in_arrays=False).returns


def test_a_policy_that_takes_rows_sees_the_same_rows_in_the_same_order():
    seen: dict[bool, list[list[int]]] = {True: [], False: []}
    weights = np.random.default_rng(1).normal(size=(4, 2)).astype(np.float32)

    def policy(in_arrays: bool):
        def act(obs, rows):
            seen[in_arrays].append(list(rows))
            shifted = obs + np.asarray(rows, np.float32)[:, None] * 1e-3  # each row's own policy
            return (shifted @ weights).argmax(1)

        act.takes_rows = True
        return act

    seeds = [7, 3, 11, 500, 2, 9]
    fast = evaluate(policy(True), "cartpole", len(seeds), seeds)
    reference = evaluate(policy(False), "cartpole", len(seeds), seeds, in_arrays=False)
    assert fast.returns == reference.returns and seen[True] == seen[False]
    assert len(seen[True][-1]) < len(seeds)  # some episodes ended before others


def test_each_row_starts_where_the_registered_env_starts_with_its_seed():
    import gymnasium as gym

    env = make_batched("pendulum", 3)
    obs = env.reset_to_core_seeds([4, 40, 400])
    for row, seed in zip(obs, [4, 40, 400], strict=True):
        single = gym.make("thrust/Pendulum-v0")
        np.testing.assert_array_equal(row, single.reset(seed=seed)[0])
        single.close()
    with pytest.raises(ValueError, match="one seed per copy"):
        env.reset_to_core_seeds([1, 2])


@pytest.mark.parametrize(
    "env_id, kwargs, pipeline, memory",
    [
        ("CartPole-v1", None, None, 0),  # gymnasium's own env (its code, not Thrust's core)
        ("snake", None, None, 0),  # no array-batched form
        ("cartpole", None, Pipeline(frame_stack=2), 0),  # the pipeline changes what the policy sees
        ("pendulum-novel", None, None, 16),  # a policy with memory
    ],
)
def test_what_has_no_array_form_plays_on_its_own_envs(env_id, kwargs, pipeline, memory):
    act = type("Act", (), {"state_size": memory})()
    assert array_twin(env_id, kwargs, pipeline, act) is None
    assert array_twin("cartpole", None, Pipeline(), act if not memory else None) is BATCHED_ENVS["thrust/CartPole-v0"]
