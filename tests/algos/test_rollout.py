"""GAE and rollouts: bootstrap on truncation, never on termination."""

from __future__ import annotations

import torch

from thrust_app.algos.rollout import collect_rollout, compute_gae
from thrust_app.envs.batched import make_batched
from thrust_app.envs.tensors import EnvIO
from thrust_app.nets.policies import ActorCritic


def test_gae_matches_a_hand_computation():
    rewards = torch.tensor([[1.0], [2.0], [3.0]])
    values = torch.tensor([[0.5], [1.0], [1.5]])
    dones = torch.tensor([[0.0], [1.0], [0.0]])
    last = torch.tensor([2.0])
    gamma, lam = 0.9, 0.8
    adv, ret = compute_gae(rewards, values, dones, last, gamma, lam)
    d2 = 3.0 + gamma * 2.0 - 1.5
    d1 = 2.0 - 1.0  # episode ended at step 1: no look past it
    d0 = 1.0 + gamma * 1.0 - 0.5
    expected = torch.tensor([[d0 + gamma * lam * d1], [d1], [d2]])
    torch.testing.assert_close(adv, expected)
    torch.testing.assert_close(ret, expected + values)


class ConstantValue(ActorCritic):
    """A policy whose value is 100 everywhere, so a bootstrap shows up as +gamma*100 in the reward."""

    def value(self, obs):
        return torch.full(obs.shape[:1], 100.0)

    def sample(self, obs, mask=None):
        action, log_prob, _ = super().sample(obs, mask)
        return action, log_prob, self.value(obs)


def rollout_of(env_name, n_steps):
    env = make_batched(env_name, 2, seed=0)
    policy = ConstantValue(env.observation_space.shape, env.action_space)
    io = EnvIO(torch.device("cpu"))
    rollout, _ = collect_rollout(env, io, io.reset(env), policy, n_steps, gamma=0.5)
    return rollout


def test_truncated_episodes_are_bootstrapped():
    rollout = rollout_of("pendulum", 200)  # Pendulum only ever truncates, at step 200
    assert rollout.dones[-1].tolist() == [1.0, 1.0]
    assert rollout.dones[:-1].sum() == 0
    # Pendulum rewards are <= 0; Pendulum costs are below 17, so only a bootstrap (+0.5 * 100) makes one positive
    assert (rollout.rewards[:-1] <= 0).all() and (rollout.rewards[-1] > 0).all()


def test_terminated_episodes_are_not_bootstrapped():
    rollout = rollout_of("cartpole", 200)  # random actions: the pole falls well before 500 steps
    assert rollout.dones.sum() > 0
    assert (rollout.rewards == 1.0).all()  # no +gamma*V anywhere: every end was a termination
    assert len(rollout.episode_returns) == int(rollout.dones.sum())
