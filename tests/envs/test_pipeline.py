"""Observation pipelines: Atari ids as users type them, the zoo's preprocessing equal to gymnasium's own
wrappers frame for frame, training-only signals kept out of evaluation, MinAtar channels first."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from thrust_app.envs import env_spaces, make_env
from thrust_app.envs.batched import make_batched
from thrust_app.envs.pipeline import Pipeline, register_on_demand

ATARI = Pipeline("atari", 4)


@pytest.mark.parametrize("env_id", ["ALE/Breakout-v5", "BreakoutNoFrameskip-v4"])
def test_atari_ids_as_users_type_them_make_the_zoo_observation(env_id):
    obs_space, action_space = env_spaces(env_id, ATARI)
    assert obs_space.shape == (4, 84, 84) and obs_space.dtype == "uint8"
    assert action_space.n == 4


def test_preprocessing_equals_gymnasiums_wrappers_on_the_same_frames():
    """Thrust's pipeline in evaluation is gymnasium's AtariPreprocessing (plus FIRE after a reset, which
    Breakout waits for; gymnasium's FrameStackObservation then stacks the frames): replaying the same
    actions gives the same frames and rewards."""
    ours = make_env("ALE/Breakout-v5", Pipeline("atari"))
    theirs = gym.wrappers.AtariPreprocessing(gym.make("ALE/Breakout-v5", frameskip=1), noop_max=30)
    obs, _ = ours.reset(seed=3)
    theirs.reset(seed=3)
    for action in (1, 2):  # the FIRE reset our pipeline does
        want, *_ = theirs.step(action)
    assert np.array_equal(obs, want) and obs.dtype == np.uint8
    rng = np.random.default_rng(0)
    for _ in range(200):
        action = int(rng.integers(4))
        got, reward, terminated, truncated, _ = ours.step(action)
        want, want_reward, *_ = theirs.step(action)
        assert np.array_equal(got, want) and reward == want_reward
        if terminated or truncated:
            break


def test_life_loss_and_reward_sign_shape_training_only_and_scores_stay_the_games():
    """In training a lost life terminates (the game goes on) and rewards are signs; the vec env still
    reports the game's score and length, which is what the evaluation sees."""
    env = make_batched("ALE/Breakout-v5", 1, seed=0, pipeline=ATARI)
    env.reset()
    terminations, rewards, steps, finished = 0, [], 0, []
    rng = np.random.default_rng(1)
    while not finished:
        step = env.step(rng.integers(4, size=1))
        steps += 1
        terminations += int(step.terminated[0])
        rewards.append(float(step.reward[0]))
        if step.episode_end[0]:
            finished.append((float(step.episode_return[0]), int(step.episode_length[0])))
    env.close()
    assert terminations == 5  # Breakout's five lives, each a terminal for learning
    assert set(rewards) <= {0.0, 1.0}
    game_return, game_length = finished[0]
    assert game_length >= steps  # the whole game (and the presses of FIRE between lives), not its last life
    assert game_return >= sum(rewards)  # the game's points: a brick scores 1, 4 or 7, its sign 1


def test_a_missing_package_is_one_line_naming_the_install(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_minatar(name, *args, **kwargs):
        if name.startswith("minatar"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_minatar)
    monkeypatch.delitem(gym.registry, "MinAtar/Breakout-v0", raising=False)  # as before any MinAtar id was made
    with pytest.raises(ModuleNotFoundError, match=r"MinAtar/Breakout-v0 needs MinAtar: pip install .*minatar"):
        register_on_demand("MinAtar/Breakout-v0")


def test_minatar_frames_come_channels_first_as_floats():
    obs_space, _ = env_spaces("MinAtar/Breakout-v1", Pipeline("minatar"))
    assert obs_space.shape == (4, 10, 10) and obs_space.dtype == "float32"
    env = make_env("MinAtar/Breakout-v1", Pipeline("minatar"))
    obs, _ = env.reset(seed=0)
    raw = gym.make("MinAtar/Breakout-v1")
    raw_obs, _ = raw.reset(seed=0)
    assert np.array_equal(obs, np.moveaxis(raw_obs, -1, 0).astype(np.float32))


def test_bad_pipeline_values_name_the_choices():
    with pytest.raises(ValueError, match="env_wrapper must be one of none, atari, minatar"):
        Pipeline("pixels")
    with pytest.raises(ValueError, match="frame_stack must be >= 1"):
        Pipeline("none", 0)
