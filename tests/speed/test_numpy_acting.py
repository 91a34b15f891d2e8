"""acting="numpy" (speed/numpy_acting.py, numpy_rollout.py, numpy_exploration.py) acts as the torch reference does:
the same greedy actions, the same squashed-Gaussian and actor-critic samples for the same noise, the same
discrete rollouts, the current weights after every optimizer step."""

from __future__ import annotations

import copy
import math
import statistics

import numpy as np
import pytest
import torch

from thrust_app.algos import PPO, build_algorithm
from thrust_app.algos.rollout import collect_rollout
from thrust_app.envs.batched import make_batched
from thrust_app.envs.core import Box, Discrete
from thrust_app.envs.tensors import EnvIO
from thrust_app.nets.policies import ActorCritic, QNetwork, SquashedGaussianActor
from thrust_app.speed.numpy_acting import FastActorCritic, FastEpsilonGreedy, FastSquashedGaussian
from thrust_app.speed.numpy_rollout import collect_rollout_fast
from thrust_app.speed.switches import apply_speed
from thrust_app.training.trainer import train


def test_epsilon_greedy_takes_the_torch_argmax_where_it_acts_greedily():
    torch.manual_seed(0)
    q_net = QNetwork((4,), 3, (256, 256))
    obs = torch.randn(512, 4)
    explorer = FastEpsilonGreedy(q_net)
    uniform = np.random.default_rng(0).random(512).astype(np.float32)
    random_actions = np.random.default_rng(1).integers(0, 3, 512)
    actions = explorer(obs.numpy(), uniform, random_actions, 0.3)
    greedy = uniform >= 0.3
    assert 0.6 < greedy.mean() < 0.8
    with torch.no_grad():
        reference = q_net(obs).argmax(1).numpy()
    assert np.array_equal(actions[greedy], reference[greedy]) and np.array_equal(actions[~greedy], random_actions[~greedy])


def test_squashed_gaussian_equals_the_actors_sample_for_the_same_noise():
    torch.manual_seed(0)
    actor = SquashedGaussianActor((3,), Box((-2.0, -1.0), (2.0, 3.0), (2,)), (256, 256))
    obs = torch.randn(64, 3) * 3
    torch.manual_seed(7)
    with torch.no_grad():
        reference, _ = actor.sample(obs)  # its noise: torch.randn_like(mu) from the global generator
    torch.manual_seed(7)
    noise = torch.randn(64, 2).numpy()
    fast = FastSquashedGaussian(actor)(obs.numpy(), noise)
    np.testing.assert_allclose(fast, reference.numpy(), rtol=1e-5, atol=1e-5)
    assert (fast >= np.array([-2.0, -1.0])).all() and (fast <= np.array([2.0, 3.0])).all()


def test_the_numpy_views_follow_optimizer_steps_and_copies():
    torch.manual_seed(0)
    q_net = QNetwork((4,), 2, (64, 64))
    explorer = FastEpsilonGreedy(q_net)
    obs = torch.randn(256, 4)
    optimizer = torch.optim.Adam([q_net.flat], lr=0.5)
    for _ in range(3):  # large steps: the greedy actions change
        q_net.zero_grad()
        q_net(obs)[:, 0].sum().backward()
        optimizer.step()
        with torch.no_grad():
            reference = q_net(obs).argmax(1).numpy()
        assert np.array_equal(explorer(obs.numpy(), np.ones(256), np.zeros(256, dtype=np.int64), 0.0), reference)
    moved = copy.deepcopy(q_net)  # a copy re-flattens into a new buffer
    with torch.no_grad():
        moved.flat.mul_(-1.0)
    assert np.array_equal(
        FastEpsilonGreedy(moved)(obs.numpy(), np.ones(256), np.zeros(256, dtype=np.int64), 0.0), moved(obs).argmax(1).numpy()
    )


def test_both_acting_paths_take_the_same_actions():
    """The same start, four iterations each: the random phase, then epsilon-greedy with epsilon moving every
    step and the net learning in between; both paths fill the buffer with the very same transitions."""
    buffers = {}
    for acting in ("numpy", "torch"):
        env = make_batched("cartpole", 2, seed=0)
        config = {"learning_starts": 64, "train_freq": 48, "gradient_steps": 2, "batch_size": 16, "acting": acting}
        torch.manual_seed(0)  # the nets' initial weights
        agent = build_algorithm("dqn", env.env_id, config | {"exploration_fraction": 1.0}, torch.device("cpu"), seed=0)
        agent.total_timesteps = 384
        agent.apply_schedules(1.0)
        assert apply_speed(agent, env).acting == acting
        io = EnvIO(torch.device("cpu"))
        obs = io.reset(env)
        for _ in range(4):  # 96 env steps each: the second iteration crosses learning_starts
            iteration = agent.iteration(env, io, obs)
            obs = iteration.obs
        assert agent.num_timesteps == 384 and agent.buffer.size == 384 and iteration.stats
        buffers[acting] = agent.buffer
    fast, reference = buffers["numpy"], buffers["torch"]
    assert torch.equal(fast.actions, reference.actions) and torch.equal(fast.obs, reference.obs)
    assert set(fast.actions.unique().tolist()) == {0, 1} and fast.terminated.sum() > 0


def test_image_observations_fall_back_to_torch_with_a_note(tmp_path):
    lines: list[str] = []
    summary = train(
        "dqn",
        "snake",
        timesteps=600,
        run_dir=tmp_path / "run",
        overrides={"learning_starts": 500, "buffer_size": 1000, "n_envs": 1},
        progress=False,
        log=lines.append,
    )
    assert any("acting=numpy falls back to torch: image observations" in line for line in lines)
    assert summary["timesteps"] >= 600


@pytest.mark.parametrize(
    "space, hidden, activation",
    [("discrete", (64, 64), "tanh"), ("discrete", (16, 24, 8), "relu"), ("box", (64, 64), "tanh"), ("box", (32,), "relu")],
)
def test_actor_critic_sample_equals_the_nets_for_the_same_noise(space, hidden, activation):
    torch.manual_seed(0)
    action_space = Discrete(3) if space == "discrete" else Box((-2.0, -1.0), (2.0, 3.0), (2,))
    net = ActorCritic((5,), action_space, hidden, activation, log_std_init=-0.5)
    obs = torch.randn(64, 5) * 2
    torch.manual_seed(7)
    want_action, want_log_prob, want_value = net.sample(obs)  # draws Exp(1) / N(0, 1) from the global generator
    torch.manual_seed(7)
    noise = torch.empty(64, 3).exponential_() if space == "discrete" else torch.randn(64, 2)
    if space == "box":  # Normal.sample draws its own way; give the fast path the noise behind the reference's sample
        noise = (want_action - net.pi_head(net.features(obs)[0])) / net.log_std.exp()
    actor = FastActorCritic(net)
    action, log_prob, value = actor(obs.numpy(), noise.detach().numpy())
    if space == "discrete":
        assert np.array_equal(action, want_action.numpy())
    else:
        np.testing.assert_allclose(action, want_action.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(log_prob, want_log_prob.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(value, want_value.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(actor.value(obs.numpy()), net.value(obs).numpy(), rtol=1e-5, atol=1e-5)


def test_a_fast_discrete_rollout_equals_the_reference_rollout():
    """Same seed, same Exp(1) draws: the same actions, rewards, ends and bootstraps (with a 20-step time
    limit, so that truncated episodes are bootstrapped in both)."""
    rollouts = []
    for fast in (True, False):
        torch.manual_seed(0)
        net = ActorCritic((4,), Discrete(2), (64, 64))
        env = make_batched("cartpole", 4, seed=0)
        env.max_episode_steps = 20
        env_io = EnvIO(torch.device("cpu"))
        obs = env_io.reset(env)
        torch.manual_seed(1)
        if fast:
            rollout, _ = collect_rollout_fast(env, obs, net, FastActorCritic(net), 200, 0.99)
        else:
            rollout, _ = collect_rollout(env, env_io, obs, net, 200, 0.99)
        rollouts.append(rollout)
    fast, reference = rollouts
    assert torch.equal(fast.actions, reference.actions)
    assert torch.equal(fast.dones, reference.dones)
    for key in ("obs", "log_probs", "values", "rewards", "last_values"):
        torch.testing.assert_close(getattr(fast, key), getattr(reference, key), rtol=1e-5, atol=1e-5, msg=key)
    assert fast.episode_returns == reference.episode_returns and fast.episode_lengths == reference.episode_lengths
    assert (reference.rewards != 1.0).any(), "no truncated episode was bootstrapped: the test lost its point"


def test_both_rollout_paths_train_ppo_alike_on_pendulum(run_iterations):
    """Gaussian noise is drawn in another order on the numpy path: the two differ in their draws, not in what
    they learn from them. Over seeds, one iteration's update statistics under numpy acting average what the
    reference's do, within three standard errors of the reference's own seed-to-seed spread."""
    settings = {"n_steps": 64, "batch_size": 64}
    seeds = range(8)
    stats = {
        way: [run_iterations(PPO, "pendulum", 1, n_envs=4, acting=way, seed=s, **settings) for s in seeds]
        for way in ("numpy", "torch")
    }
    assert all(agent.speed.acting == way for way, runs in stats.items() for agent, _ in runs)
    for key in ("value_loss", "entropy"):
        numpy_values, reference_values = ([logged[key] for _, logged in stats[way]] for way in ("numpy", "torch"))
        standard_error = statistics.stdev(reference_values) / math.sqrt(len(seeds))
        assert abs(statistics.fmean(numpy_values) - statistics.fmean(reference_values)) <= 3 * standard_error, key
