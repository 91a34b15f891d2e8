"""The pure-Python env cores: they run without numpy, replay a seed exactly, follow their rules,
and refuse bad use with an error that says what to do."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap

import pytest

from thrust_app.envs.core import (
    CORE_ENVS,
    EpisodeOverError,
    InvalidActionError,
    Snake,
    UnknownEnvError,
    make_core,
    resolve_env_id,
)
from thrust_app.envs.core.snake import LEFT, RIGHT, STRAIGHT
from thrust_app.envs.demo import random_action


def test_cores_import_and_run_without_numpy_gymnasium_or_torch():
    # What the browser has: the standard library only. Any import of these fails in the child.
    script = textwrap.dedent(
        """
        import sys, random
        for name in ("numpy", "gymnasium", "torch", "array_api_compat"):
            sys.modules[name] = None
        from thrust_app.envs.core import CORE_ENVS, make_core
        from thrust_app.envs.demo import random_action
        rng = random.Random(0)
        for env_id in CORE_ENVS:
            env = make_core(env_id)
            env.reset(seed=1)
            while True:
                r = env.step(random_action(env.action_space, rng))
                if r.terminated or r.truncated:
                    break
            print(env_id, env.steps)
        assert not any(sys.modules.get(n) for n in ("numpy", "gymnasium", "torch"))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) == len(CORE_ENVS)


def play(env_id: str, seed: int, action_seed: int = 7) -> list:
    env = make_core(env_id)
    rng = random.Random(action_seed)
    trace = [env.reset(seed=seed)]
    while True:
        result = env.step(random_action(env.action_space, rng))
        trace.append(result)
        if result.terminated or result.truncated:
            return trace


@pytest.mark.parametrize("env_id", list(CORE_ENVS))
def test_same_seed_same_episode_different_seed_different_episode(env_id):
    """The same actions: the seed decides the episode (its start, or for a game with one start, such as MinAtar's
    Space Invaders, where its sticky actions fall)."""
    assert play(env_id, seed=3) == play(env_id, seed=3)
    episodes = {repr(play(env_id, seed=s)) for s in range(6)}
    assert len(episodes) > 1


@pytest.mark.parametrize("env_id", list(CORE_ENVS))
def test_step_after_episode_end_is_refused(env_id):
    env = make_core(env_id)
    with pytest.raises(EpisodeOverError, match="reset"):
        env.step(random_action(env.action_space, random.Random(0)))
    play_env = make_core(env_id)
    play_env.reset(seed=0)
    rng = random.Random(0)
    while True:
        r = play_env.step(random_action(play_env.action_space, rng))
        if r.terminated or r.truncated:
            break
    with pytest.raises(EpisodeOverError, match="call reset"):
        play_env.step(random_action(play_env.action_space, rng))


@pytest.mark.parametrize(
    "env_id, action, message",
    [
        ("cartpole", 2, r"out of range; expected an int in \[0, 1\]"),
        ("cartpole", -1, "out of range"),
        ("cartpole", 0.5, "not an integer"),
        ("cartpole", [0, 1], r"shape \(2,\)"),
        ("snake", 3, r"\[0, 2\]"),
        ("pendulum", [2.5], r"out of range \[-2.0, 2.0\]"),
        ("pendulum", [0.1, 0.2], r"expected shape \(1,\)"),
        ("pendulum", [float("nan")], "not finite"),
        ("pendulum", "left", "not a sequence"),
    ],
)
def test_bad_actions_are_refused_with_a_clear_message(env_id, action, message):
    env = make_core(env_id)
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match=message):
        env.step(action)


def test_unknown_env_name_lists_the_valid_ones():
    with pytest.raises(UnknownEnvError) as err:
        make_core("cartpol")
    for alias in ("bandit", "cartpole", "pendulum", "snake"):
        assert alias in str(err.value)


def test_aliases_and_ids_resolve_in_any_case():
    assert resolve_env_id("CartPole") == "thrust/CartPole-v0"
    assert resolve_env_id("thrust/snake-v0") == "thrust/Snake-v0"


def test_bandit_pays_the_right_lever_and_random_play_scores_half():
    env = make_core("bandit")
    rng = random.Random(0)
    total = 0.0
    for episode in range(2000):
        context = int(env.reset(seed=episode)[0])
        assert env.step(context).reward == 1.0  # lever == context pays
        env.reset(seed=episode)
        assert env.step(1 - context).reward == 0.0
        env.reset(seed=episode)
        total += env.step(rng.randrange(2)).reward
    assert 0.45 < total / 2000 < 0.55


def test_snake_eats_grows_and_scores():
    env = Snake()
    env.reset(seed=0)
    head = env.body[0]
    env.food = (head[0], head[1] + 1)  # straight ahead
    result = env.step(STRAIGHT)
    assert result.reward == 1.0 and len(env.body) == 4 and env.score == 1
    assert env.food is not None and env.food not in env.body


def test_snake_dies_on_the_wall_with_minus_one():
    env = Snake(width=6, height=6)
    env.reset(seed=0)
    env.food = (0, 0)
    rewards = []
    while env.running:
        rewards.append(env.step(STRAIGHT).reward)
    assert rewards[-1] == -1.0 and env.dead


def test_snake_dies_on_its_own_body():
    env = Snake()
    env.reset(seed=0)
    env.body = [(5, 5), (5, 4), (5, 3), (5, 2), (5, 1)]
    env.heading = 1
    env.food = (0, 0)
    env.step(LEFT)  # up
    env.step(LEFT)  # left
    result = env.step(LEFT)  # down, into the body
    assert result.terminated and result.reward == -1.0


def test_snake_starves_into_truncation():
    env = Snake(starve_steps=8)
    env.reset(seed=0)
    env.food = (0, 0)
    turns = [RIGHT, RIGHT, RIGHT, RIGHT]  # a tight loop that never reaches the food
    results = [env.step(turns[i % 4] if i % 2 else STRAIGHT) for i in range(8)]
    assert results[-1].truncated and not results[-1].terminated
    assert all(r.reward == 0.0 for r in results)


def test_snake_observation_has_head_body_food_channels():
    env = Snake(width=7, height=5)
    obs = env.reset(seed=2)
    h, w = 5, 7
    head, body, food = (obs[i * h * w : (i + 1) * h * w] for i in range(3))
    assert sum(head) == 1 and sum(body) == 2 and sum(food) == 1
    r, c = env.body[0]
    assert head[r * w + c] == 1.0
    assert env.observation_space.shape == (3, 5, 7)


def test_the_velocity_free_cores_are_their_base_cores_with_the_velocities_zeroed():
    """core/hidden_velocity.py: the zoo's MaskVelocityWrapper table, applied to CartPole's and Pendulum's cores."""
    from thrust_app.envs.core.hidden_velocity import VELOCITY_INDICES

    for novel, base, gym_id in (("cartpole-novel", "cartpole", "CartPole-v1"), ("pendulum-novel", "pendulum", "Pendulum-v1")):
        hidden, seen = make_core(novel), make_core(base)
        rng = random.Random(0)
        obs, full = hidden.reset(seed=4), seen.reset(seed=4)
        for _ in range(50):
            assert [v for i, v in enumerate(obs) if i in VELOCITY_INDICES[gym_id]] == [0.0] * len(VELOCITY_INDICES[gym_id])
            assert [v for i, v in enumerate(obs) if i not in VELOCITY_INDICES[gym_id]] == [
                v for i, v in enumerate(full) if i not in VELOCITY_INDICES[gym_id]
            ]
            action = random_action(seen.action_space, rng)
            step, base_step = hidden.step(action), seen.step(action)
            assert (step.reward, step.terminated, step.truncated) == (
                base_step.reward,
                base_step.terminated,
                base_step.truncated,
            )
            if step.terminated or step.truncated:
                break
            obs, full = step.obs, base_step.obs


def test_the_card_games_rules_and_its_legal_moves():
    """core/cards.py: the hand is the action mask; the target scores 1, another card in hand 0, one not in hand -1;
    the observation is the hand's bits then the target one-hot (gymnasium's flatten of its Dict); 20 turns."""
    env = make_core("cards")
    obs = env.reset(seed=2)
    for turn in range(20):
        hand, target = env.action_masks(), obs[6:].index(1.0)
        assert obs[:6] == [float(held) for held in hand] and sum(hand) == 3 and hand[target]
        other = next(card for card in range(6) if hand[card] and card != target)
        forbidden = next(card for card in range(6) if not hand[card])
        action, want = [(target, 1.0), (other, 0.0), (forbidden, -1.0)][turn % 3]
        result = env.step(action)
        assert result.reward == want and result.truncated == (turn == 19)
        obs = result.obs


def test_the_plain_python_generator_draws_numpys_default_rng_stream():
    import numpy as np

    from thrust_app.envs.core.pcg64 import NumpyRandom

    for seed in [*range(60), 1_000_000, 2**32 - 1, 2**32, 2**64 + 3, 10**30]:  # one to four 32-bit words, and more
        numpy_rng, mine = np.random.default_rng(seed), NumpyRandom(seed)
        assert [mine.uniform(-0.05, 0.05) for _ in range(4)] == numpy_rng.uniform(-0.05, 0.05, size=4).tolist(), seed
        assert [mine.random() for _ in range(3)] == numpy_rng.random(3).tolist(), seed
    with pytest.raises(ValueError, match="seed must be >= 0"):
        NumpyRandom(-1)


@pytest.mark.parametrize(
    "env_id, gymnasium_id",
    [
        ("cartpole", "CartPole-v1"),
        ("pendulum", "Pendulum-v1"),
        ("acrobot", "Acrobot-v1"),
        ("mountaincar", "MountainCar-v0"),
        ("mountaincar-continuous", "MountainCarContinuous-v0"),
    ],
)
def test_a_twin_starts_where_gymnasiums_env_starts_with_the_same_seed(env_id, gymnasium_id):
    import gymnasium as gym
    import numpy as np

    core, theirs = make_core(env_id), gym.make(gymnasium_id)
    for seed in (0, 7, 1_000_000, 2**40):
        np.testing.assert_array_equal(np.float32(core.reset(seed=seed)), theirs.reset(seed=seed)[0])
        np.testing.assert_array_equal(np.float32(core.reset()), theirs.reset()[0])  # the stream goes on alike
    theirs.close()
