"""DQN: the TD target, and learning at the settings CleanRL users bring."""

from __future__ import annotations

import pytest
import torch

from thrust_app.algos import build_algorithm
from thrust_app.algos.dqn import DQNConfig, dqn_loss
from thrust_app.envs.batched import make_batched
from thrust_app.envs.tensors import EnvIO
from thrust_app.nets.policies import QNetwork
from thrust_app.runs.files import load_checkpoint, read_jsonl
from thrust_app.speed.switches import apply_speed
from thrust_app.training.trainer import train

QUIET = {"progress": False, "log": lambda _: None}

#: CleanRL's dqn.py defaults (CartPole-v1), with its squared TD loss.
CLEANRL_DQN = {
    "n_envs": 1,
    "learning_rate": 2.5e-4,
    "lr_schedule": "constant",
    "gamma": 0.99,
    "hidden": "120,84",
    "buffer_size": 10_000,
    "learning_starts": 10_000,
    "batch_size": 128,
    "train_freq": 10,
    "gradient_steps": 1,
    "target_update_interval": 500,
    "tau": 1.0,
    "exploration_fraction": 0.5,
    "exploration_initial_eps": 1.0,
    "exploration_final_eps": 0.05,
    "double_dqn": False,
    "max_grad_norm": 1e9,
    "loss": "mse",
}


def test_td_target_matches_a_hand_computation():
    """y = r + gamma * (1 - terminated) * max_a' Q'(s', a'); loss = mean (Q(s, a) - y)^2 for mse."""
    q_net, target_net = QNetwork((1,), 2, (4,)), QNetwork((1,), 2, (4,))
    for net, (w, b) in ((q_net, ([1.0, -1.0], [0.0, 0.5])), (target_net, ([2.0, 3.0], [1.0, 0.0]))):
        with torch.no_grad():  # Q(s) = head(relu(encoder(s))); make both nets the identity up to the head
            net.flat.zero_()
            net.encoder.net[1][0].weight[0, 0] = 1.0
            net.head.weight[:, 0] = torch.tensor(w)
            net.head.bias[:] = torch.tensor(b)
    obs, next_obs = torch.tensor([[1.0], [2.0]]), torch.tensor([[3.0], [0.5]])
    actions, rewards, terminated = torch.tensor([0, 1]), torch.tensor([1.0, 0.5]), torch.tensor([0.0, 1.0])
    # Q(s=1, a=0) = 1; Q(s=2, a=1) = -2 + 0.5 = -1.5.  Q'(s'=3) = (7, 9) -> max 9; s'=0.5 terminated.
    want_target = torch.tensor([1.0 + 0.9 * 9.0, 0.5])
    want = ((torch.tensor([1.0, -1.5]) - want_target) ** 2).mean()
    got = dqn_loss(q_net, target_net, (obs, actions, rewards, next_obs, terminated), 0.9, double=False, loss="mse")
    torch.testing.assert_close(got, want)


def test_huber_loss_is_the_default_like_sb3():
    assert DQNConfig().loss == "huber"


@pytest.mark.parametrize("seed", [1, 2])
def test_dqn_learns_at_cleanrl_settings(seed, tmp_path):
    """The collapse CleanRL's settings caused (return ~10, Q far above any return): Q stays within
    1 / (1 - gamma) and training returns rise well above the random policy's ~22."""
    train(
        "dqn",
        "CartPole-v1",
        timesteps=30_000,
        seed=seed,
        device="cpu",
        run_dir=tmp_path,
        eval_every=30_000,
        eval_episodes=5,
        overrides=CLEANRL_DQN,
        **QUIET,
    )
    records = [r for r in read_jsonl(tmp_path / "metrics.jsonl") if r["kind"] == "train" and r["return_mean"]]
    late = [r["return_mean"] for r in records if r["step"] > 25_000]
    assert sum(late) / len(late) > 100, late
    state = load_checkpoint(tmp_path / "last.pt")["algo"]
    q_net = QNetwork((4,), 2, (120, 84))
    q_net.load_state_dict(state["q_net"])
    with torch.no_grad():
        q_values = q_net(state["buffer"]["obs"])
    assert q_values.max() < 1 / (1 - 0.99), float(q_values.max())


@pytest.mark.parametrize("acting", ["torch", "numpy"])
def test_epsilon_moves_every_env_step_like_sb3(acting):
    """SB3 sets epsilon after every env step from the steps taken so far; one iteration of 100 steps must
    not act on its first step's epsilon throughout (with train_freq 256 and a decay over 8k steps, that
    kept epsilon up to 0.03 too high)."""
    env = make_batched("cartpole", 1, seed=0)
    config = {"learning_starts": 0, "train_freq": 100, "exploration_fraction": 0.5, "acting": acting}
    agent = build_algorithm("dqn", env.env_id, config, torch.device("cpu"), seed=0)
    agent.total_timesteps = 1000
    agent.apply_schedules(1.0)
    assert apply_speed(agent, env).acting == acting
    used: list[float] = []
    after_env_step = agent.after_env_step
    agent.after_env_step = lambda done: (after_env_step(done), used.append(agent.exploration_rate))
    io = EnvIO(torch.device("cpu"))
    agent.iteration(env, io, io.reset(env))
    # eps after t steps = 1 + min(1, (t / 1000) / 0.5) * (0.05 - 1)
    torch.testing.assert_close(used, [1.0 - 0.95 * t / 500 for t in range(1, 101)])
