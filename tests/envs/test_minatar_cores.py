"""thrust_app/envs/core/minatar.py: the pure-Python Breakout and Space Invaders equal the `minatar` package's games
step for step (boards, rewards, ends, sticky actions, the random stream across episodes, Space Invaders'
difficulty ramp), and their gymnasium form equals `MinAtar/*-v1` inside Thrust's minatar pipeline."""

from __future__ import annotations

import random

import numpy as np
import pytest

from thrust_app.envs import make_env
from thrust_app.envs.core import make_core, playing_core
from thrust_app.envs.core.minatar import seed_like_numpy
from thrust_app.envs.pipeline import Pipeline

minatar = pytest.importorskip("minatar")  # in the test extra: `make test` installs it

GAMES = {"breakout": ("minatar-breakout", (0, 1, 3)), "space_invaders": ("minatar-space-invaders", (0, 1, 3, 5))}


def breakout_player(core, rng: random.Random) -> int:
    """Keeps the paddle under the ball's next column (long episodes: bricks, new walls, both bounces)."""
    dx = (-1, 1, 1, -1)[core.ball_dir]
    target = min(max(core.ball_x + dx, 0), 9) if core.ball_dir in (2, 3) else core.ball_x
    return 0 if core.pos == target else 1 if target < core.pos else 2


def invaders_player(core, rng: random.Random) -> int:
    """Dodges bullets, else goes under the nearest alien and fires."""
    if rng.random() < 0.05:
        return rng.randrange(4)
    danger = lambda col: any(core.e_bullets[row][col] for row in range(6, 10))  # noqa: E731
    if danger(core.pos):
        for move, col in ((1, core.pos - 1), (2, core.pos + 1)):
            if 0 <= col <= 9 and not danger(col):
                return move
    columns = [c for c in range(10) if any(core.aliens[r][c] for r in range(10)) and not danger(c)]
    target = min(columns, key=lambda c: abs(c - core.pos)) if columns else core.pos
    return 3 if target == core.pos else 1 if target < core.pos else 2


def board(reference) -> list[float]:
    return np.transpose(reference.state(), (2, 0, 1)).astype(np.float32).ravel().tolist()


def play_both(game: str, seed: int, episodes: int, player) -> tuple[float, float]:
    """Both implementations side by side, one seeding, episodes reset without reseeding; asserts every step.
    Returns the total reward and the best episode's."""
    core_id, actions = GAMES[game]
    reference = minatar.Environment(game)
    reference.seed(seed)
    reference.reset()
    core = make_core(core_id)
    obs, chooser, steps, total, best = core.reset(seed=seed), random.Random(seed), 0, 0.0, 0.0
    for _ in range(episodes):
        done, start = False, total
        while not done:
            assert obs == board(reference), f"{game} seed {seed}: boards differ at step {steps}"
            action = player(core, chooser)
            reward, done = reference.act(actions[action])
            result = core.step(action)
            assert (result.reward, result.terminated, result.truncated) == (float(reward), bool(done), False)
            obs, steps, total = result.obs, steps + 1, total + result.reward
        best = max(best, total - start)
        reference.reset()
        obs = core.reset()
    return total, best


@pytest.mark.parametrize("seed", [0, 3])
def test_breakout_is_minatars_step_for_step(seed):
    _, best = play_both("breakout", seed, 3, breakout_player)
    assert best > 30  # more than a wall of 30 bricks in one episode: the wall came back


@pytest.mark.parametrize("seed", [0, 3])
def test_space_invaders_is_minatars_step_for_step(seed):
    total, _ = play_both("space_invaders", seed, 3, invaders_player)
    assert total > 30


def test_random_play_and_sticky_actions_follow_minatars_random_stream():
    for game in GAMES:
        play_both(game, 7, 8, lambda core, rng: rng.randrange(core.action_space.n))


def test_space_invaders_ramps_up_as_minatar_does():
    """The last alien shot: a new wave, one step faster (12 -> 11), and the game goes on alike."""
    reference = minatar.Environment("space_invaders")
    reference.seed(0)
    reference.reset()
    core = make_core("minatar-space-invaders")
    core.reset(seed=0)
    aliens = np.zeros((10, 10))
    aliens[7, 5] = 1  # one alien, two rows above the cannon (column 5)
    reference.env.alien_map, core.aliens = aliens.copy(), aliens.astype(int).tolist()
    for _ in range(30):
        reward, done = reference.act(5)  # fire
        result = core.step(3)
        assert core._obs() == board(reference)
        assert (result.reward, result.terminated) == (float(reward), bool(done))
        if done:
            break
    assert reference.env.ramp_index == core.ramp_index >= 1
    assert reference.env.enemy_move_interval == core.enemy_move_interval == 12 - core.ramp_index


def test_seeding_is_numpys():
    rng = random.Random()
    seed_like_numpy(rng, 12345)
    state = np.random.RandomState(12345)
    assert [rng.random() for _ in range(5)] == state.rand(5).tolist()
    assert [rng.getrandbits(32) & 1 for _ in range(20)] == [int(state.randint(2)) for _ in range(20)]
    with pytest.raises(TypeError, match=r"seed must be an int in \[0, 2\*\*32\)"):
        seed_like_numpy(rng, -1)


@pytest.mark.parametrize(
    "game, gym_id", [("minatar-breakout", "MinAtar/Breakout-v1"), ("minatar-space-invaders", "MinAtar/SpaceInvaders-v1")]
)
def test_the_gymnasium_form_is_minatars_env_inside_thrusts_pipeline(game, gym_id):
    ours, theirs = make_env(game), make_env(gym_id, Pipeline(wrapper="minatar"))
    assert ours.observation_space.shape == theirs.observation_space.shape and ours.action_space == theirs.action_space
    rng = random.Random(0)
    for seed in (0, 1):
        (a, _), (b, _) = ours.reset(seed=seed), theirs.reset(seed=seed)
        done = False
        while not done:
            np.testing.assert_array_equal(a, b)
            action = rng.randrange(ours.action_space.n)
            a, ra, ta, _, _ = ours.step(action)
            b, rb, tb, _, _ = theirs.step(action)
            assert (ra, ta) == (float(rb), tb)
            done = ta


def test_bundles_of_minatars_own_envs_play_on_the_cores():
    def manifest(env_id: str, wrapper: str = "none", stack: int = 1) -> dict:
        return {"env_id": env_id, "observation": {"pipeline": {"env_wrapper": wrapper, "frame_stack": stack}}}

    assert playing_core(manifest("MinAtar/Breakout-v1", "minatar")) == "thrust/MinAtarBreakout-v0"
    assert playing_core(manifest("MinAtar/SpaceInvaders-v1", "minatar")) == "thrust/MinAtarSpaceInvaders-v0"
    assert playing_core(manifest("thrust/Snake-v0")) == "thrust/Snake-v0"
    assert playing_core(manifest("MinAtar/Breakout-v0", "minatar")) is None  # the full action set: no core
    assert playing_core(manifest("MinAtar/Breakout-v1", "minatar", 4)) is None  # frames stacked: not the core's
    assert playing_core(manifest("MinAtar/Breakout-v1")) is None  # minatar's H x W x C grids
