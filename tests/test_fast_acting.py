"""acting="fast" (fast_acting.py) acts as the torch reference does: the same greedy actions, the same
squashed-Gaussian samples for the same noise, the current weights after every optimizer step."""

from __future__ import annotations

import copy

import numpy as np
import torch

from thrust_app.algos import build_algorithm
from thrust_app.envs.batched import make_batched
from thrust_app.envs.core import Box
from thrust_app.fast_acting import FastEpsilonGreedy, FastSquashedGaussian
from thrust_app.nets import QNetwork, SquashedGaussianActor
from thrust_app.tensors import EnvIO
from thrust_app.trainer import train


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


def test_both_acting_paths_fill_the_buffer_alike():
    """One iteration each from the same start: same steps, same shapes, random phase then learning."""
    buffers = {}
    for acting in ("fast", "torch"):
        env = make_batched("cartpole", 2, seed=0)
        config = {"learning_starts": 64, "train_freq": 48, "gradient_steps": 2, "batch_size": 16, "acting": acting}
        agent = build_algorithm("dqn", env.env_id, config, torch.device("cpu"), seed=0)
        agent.apply_schedules(1.0)
        io = EnvIO(torch.device("cpu"))
        obs = io.reset(env)
        for _ in range(2):  # 96 then 192 env steps: the second iteration crosses learning_starts
            iteration = agent.iteration(env, io, obs)
            obs = iteration.obs
        assert agent.num_timesteps == 192 and agent.buffer.size == 192 and iteration.stats
        buffers[acting] = agent.buffer
        assert agent.uses_fast_acting(env) == (acting == "fast")
    fast, reference = buffers["fast"], buffers["torch"]
    assert torch.equal(fast.obs[:64], reference.obs[:64])  # the random phase: the same uniform actions
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
    assert any("acting=fast falls back to torch: image observations" in line for line in lines)
    assert summary["timesteps"] >= 600
