"""thrust_app/algos/her.py: HER relabels with goals the same episode achieved (at or after the transition for
"future"), recomputes rewards with the env's compute_reward, samples finished episodes only, forgets episodes the
ring overwrites, round-trips through a checkpoint, refuses an env without goals in one line; and SAC with HER
learns the small goal env that SAC alone does not."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from thrust_app.algos import build_algorithm
from thrust_app.algos.her import GoalSpace, HerReplayBuffer
from thrust_app.config import ConfigError

# A toy layout: obs = [achieved, desired, marker]; the marker of next obs = 1000 * env + 100 * episode + step + 1,
# which is also its achieved goal, so a goal says where it came from.
GOALS = GoalSpace(
    slice(0, 1), slice(1, 2), lambda achieved, desired, infos: -(np.abs(achieved - desired) > 0.5)[:, 0].astype(np.float32)
)


def marker(env: int, episode: int, step: int) -> float:
    return 1000.0 * env + 100.0 * episode + step + 1


def filled(capacity: int = 64, strategy: str = "future", lengths=(5, 3, 7), num_envs: int = 2) -> HerReplayBuffer:
    """A buffer with episodes of `lengths` steps in each env (env 1's episodes in reverse order), all finished."""
    buffer = HerReplayBuffer(capacity, (3,), (1,), torch.float32, torch.device("cpu"), num_envs, GOALS, 4, strategy)
    plans = [list(lengths), list(reversed(lengths))][:num_envs]
    episode, step = [0] * num_envs, [0] * num_envs
    for _ in range(sum(lengths)):
        obs, next_obs, done = torch.zeros(num_envs, 3), torch.zeros(num_envs, 3), np.zeros(num_envs, bool)
        for env in range(num_envs):
            m = marker(env, episode[env], step[env])
            next_obs[env] = torch.tensor([m, -1.0, m])
            obs[env] = torch.tensor([m - 1, -1.0, m - 0.5])
            step[env] += 1
            if step[env] == plans[env][episode[env]]:
                done[env], episode[env], step[env] = True, episode[env] + 1, 0
        buffer.add(obs, torch.zeros(num_envs, 1), torch.full((num_envs,), -1.0), next_obs, torch.zeros(num_envs))
        buffer.close_episodes(done)
    return buffer


def where(value: float) -> tuple[int, int, int]:
    value = int(value) - 1
    return value // 1000, value % 1000 // 100, value % 100


@pytest.mark.parametrize("strategy", ["future", "final", "episode"])
def test_relabelled_goals_are_achieved_goals_of_the_same_episode(strategy):
    buffer, generator = filled(strategy=strategy), torch.Generator().manual_seed(0)
    lengths = {0: (5, 3, 7), 1: (7, 3, 5)}
    obs, _, rewards, next_obs, _ = buffer.sample(500, generator)
    virtual = int(0.8 * 500)  # n_sampled_goal 4: a share 4/5 relabelled
    assert (obs[virtual:, 1] == -1).all() and (rewards[virtual:] == -1).all()  # the real ones as stored
    for row in range(virtual):
        env, episode, t = where(next_obs[row, 2])
        goal_env, goal_episode, j = where(obs[row, 1])
        assert (goal_env, goal_episode) == (env, episode)
        assert next_obs[row, 1] == obs[row, 1]  # the same goal in obs and next obs
        assert {"future": j >= t, "final": j == lengths[env][episode] - 1, "episode": True}[strategy]
        assert rewards[row] == (0.0 if j == t else -1.0)  # compute_reward(achieved(s_{t+1}), g')
    if strategy == "future":  # the transition's own step is drawn, and the episode's last
        pairs = [(where(next_obs[row, 2])[2], where(obs[row, 1])[2]) for row in range(virtual)]
        assert any(j == t for t, j in pairs) and any(j == 6 and t < 6 for t, j in pairs)


def test_only_finished_episodes_are_sampled_and_an_empty_buffer_says_what_to_do():
    buffer = filled(lengths=(4,), num_envs=1)
    buffer.add(torch.zeros(1, 3), torch.zeros(1, 1), torch.zeros(1), torch.full((1, 3), 9999.0), torch.zeros(1))
    _, _, _, next_obs, _ = buffer.sample(300, torch.Generator().manual_seed(1))
    assert (next_obs[:, 2] != 9999.0).all()  # the running episode's step stays out
    empty = HerReplayBuffer(8, (3,), (1,), torch.float32, torch.device("cpu"), 1, GOALS)
    empty.add(torch.zeros(1, 3), torch.zeros(1, 1), torch.zeros(1), torch.zeros(1, 3), torch.zeros(1))
    with pytest.raises(RuntimeError, match=r"no episode has ended yet.*raise learning_starts"):
        empty.sample(4)


def test_an_episode_the_ring_overwrites_leaves_the_sample():
    # 2 envs x 8 slots, 15 adds: adds 8-14 overwrite slots 0-6. Env 0's episodes (adds 0-4, 5-7, 8-14): the
    # first two lose their first steps and leave. Env 1's (0-6, 7-9, 10-14): the first leaves; the second's
    # first step (add 7, slot 7) survives, so it stays whole
    buffer = filled(capacity=16)
    _, _, _, next_obs, _ = buffer.sample(400, torch.Generator().manual_seed(2))
    seen = {where(v)[:2] for v in next_obs[:, 2].tolist()}
    assert seen == {(0, 2), (1, 1), (1, 2)}


def test_the_buffer_round_trips_through_its_state_and_a_restart_starts_new_episodes():
    buffer = filled()
    copy = HerReplayBuffer(64, (3,), (1,), torch.float32, torch.device("cpu"), 2, GOALS)
    copy.load_state_dict(buffer.state_dict())
    one, two = (b.sample(64, torch.Generator().manual_seed(3)) for b in (buffer, copy))
    assert all(torch.equal(a, b) for a, b in zip(one, two, strict=True))
    # a resumed run's fresh episodes: the interrupted one (one step so far) never joins the next episode
    buffer.add(torch.zeros(2, 3), torch.zeros(2, 1), torch.zeros(2), torch.full((2, 3), 9999.0), torch.zeros(2))
    buffer.restart_episodes()
    buffer.add(torch.zeros(2, 3), torch.zeros(2, 1), torch.zeros(2), torch.full((2, 3), 5555.0), torch.zeros(2))
    buffer.close_episodes(np.array([True, True]))
    _, _, _, next_obs, _ = buffer.sample(500, torch.Generator().manual_seed(4))
    assert (next_obs[:, 2] != 9999.0).all() and (next_obs[:, 2] == 5555.0).any()


def test_her_on_an_env_without_goals_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"needs a goal env .*CartPole-v1 observes no Dict: drop replay_buffer_class"):
        build_algorithm("dqn", "CartPole-v1", {"replay_buffer_class": "HerReplayBuffer"}, torch.device("cpu"))
    with pytest.raises(ConfigError, match="unknown"):
        build_algorithm("ppo", "ThrustTest/PointGoal-v0", {"replay_buffer_class": "HerReplayBuffer"}, torch.device("cpu"))


def success_rate(model, env_id: str, episodes: int = 30) -> float:
    env, wins = gym.make(env_id), 0
    for episode in range(episodes):
        obs, _ = env.reset(seed=10_000 + episode)
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(model.predict(obs, deterministic=True)[0])
            done = terminated or truncated
        wins += info["is_success"]
    return wins / episodes


DQN_SETTINGS = dict(exploration_fraction=0.3, target_update_interval=200, train_freq=1, batch_size=64)


@pytest.mark.parametrize(
    "algo, env_id, steps, settings, solved",
    [
        ("sac", "ThrustTest/PointGoal-v0", 2000, {}, 0.9),
        ("td3", "ThrustTest/PointGoal-v0", 2000, {}, 0.9),
        # DQN's discrete moves: seeds 0-4 reach 0.80-0.87 at 3,000 steps and 0.80-0.90 at 4,000 on a 2-core Xeon VM
        # (seed 0 reached 0.9 on the earlier host: float rounding parts the runs); plain replay gets 0.07
        ("dqn", "ThrustTest/PointGoalDiscrete-v0", 3000, DQN_SETTINGS, 0.75),
    ],
)
def test_hindsight_learns_the_goal_env_that_the_plain_buffer_does_not(algo, env_id, steps, settings, solved):
    from thrust_app.api.model import MODELS

    settings = dict(learning_starts=200, hidden=(64, 64), gamma=0.95, learning_rate=1e-3, seed=0, save_run=False, **settings)
    her = MODELS[algo](env_id, replay_buffer_class="HerReplayBuffer", **settings)
    her.learn(steps, progress_bar=False)
    assert success_rate(her, env_id) >= solved
    if algo != "td3":  # the contrast: without hindsight the reward is nearly always -1 (SAC 0.03, DQN 0.07)
        plain = MODELS[algo](env_id, **settings)
        plain.learn(steps, progress_bar=False)
        assert success_rate(plain, env_id) <= 0.3
