"""TD3 and DDPG: the target by hand, delayed actor updates, the noise processes, DDPG as SB3 defines it."""

from __future__ import annotations

import math

import pytest
import stable_baselines3 as sb3
import torch

from thrust_app.algos import DDPG, TD3, DDPGConfig, TD3Config
from thrust_app.algos.action_noise import OU_DT, OU_THETA, ActionNoise
from thrust_app.algos.td3 import td3_target
from thrust_app.envs.core import Box
from thrust_app.nets.policies import QCritics

PENDULUM_ACTIONS = Box((-2.0,), (2.0,), (1,))


class LinearActorTarget:
    """mu'(s') = s' / 4 in [-1, 1] units, bounds [-2, 2]."""

    def unit_action(self, obs):
        return obs / 4

    def scale(self, unit):
        return -2.0 + (unit + 1.0) * 0.5 * 4.0


class LinearCritics:
    """Q'_1 = s' + a, Q'_2 = s' + 2a, their minimum taken as QCritics takes it."""

    def __call__(self, obs, action):
        return (obs + action).squeeze(-1), (obs + 2 * action).squeeze(-1)

    smallest = QCritics.smallest


critics = LinearCritics()


def test_target_matches_a_hand_computation():
    """y = r + gamma (1 - terminated) min_i Q'_i(s', clip(mu'(s') + smoothing, -1, 1) scaled)."""
    next_obs = torch.tensor([[2.0], [-2.0], [4.0]])
    rewards, terminated = torch.tensor([1.0, 0.0, 0.5]), torch.tensor([0.0, 0.0, 1.0])
    smoothing = torch.tensor([[0.25], [-0.25], [0.0]])
    # unit actions: 0.5 + 0.25 = 0.75 -> a = 1.5; -0.5 - 0.25 = -0.75 -> a = -1.5; row 3 terminated
    # Q'(2, 1.5) = (3.5, 5.0) -> 3.5; Q'(-2, -1.5) = (-3.5, -5.0) -> -5.0
    want = torch.tensor([1.0 + 0.9 * 3.5, 0.0 + 0.9 * -5.0, 0.5])
    got = td3_target(LinearActorTarget(), critics, next_obs, rewards, terminated, 0.9, smoothing)
    torch.testing.assert_close(got, want)


def test_the_smoothed_target_action_is_clipped_to_the_bounds():
    next_obs, zero = torch.tensor([[4.0]]), torch.zeros(1)
    got = td3_target(LinearActorTarget(), critics, next_obs, zero, zero, 1.0, torch.tensor([[0.5]]))
    torch.testing.assert_close(got, torch.tensor([4.0 + 2.0]))  # 1.0 + 0.5 clipped to 1 -> a = 2, min(6, 8)


def small_td3(cls=TD3, **settings):
    config = cls.Config(hidden=(8, 8), **settings)
    return cls((3,), PENDULUM_ACTIONS, config, torch.device("cpu"), seed=0)


def batch(n=16):
    g = torch.Generator().manual_seed(1)
    obs, next_obs = torch.randn(n, 3, generator=g), torch.randn(n, 3, generator=g)
    return obs, torch.rand(n, 1, generator=g) * 4 - 2, torch.randn(n, generator=g), next_obs, torch.zeros(n)


def test_the_actor_and_the_targets_move_every_policy_delay_th_step():
    td3 = small_td3(policy_delay=3)
    moved = []
    for _ in range(6):
        before = [part.flat.clone() for part in (td3.actor, td3.actor_target, td3.critic, td3.critic_target)]
        td3.update(batch())
        after = (td3.actor, td3.actor_target, td3.critic, td3.critic_target)
        moved.append(tuple(not torch.equal(b, part.flat) for b, part in zip(before, after, strict=True)))
    assert [m[0] for m in moved] == [False, False, True, False, False, True]  # the actor
    assert [m[1] for m in moved] == [m[0] for m in moved] == [m[3] for m in moved]  # the targets with it
    assert all(m[2] for m in moved)  # the critics every step


def test_ddpg_is_sb3s_ddpg():
    """SB3's DDPG is its TD3 with one critic, no delay and no smoothing; Thrust's DDPG has those values."""
    model = sb3.DDPG("MlpPolicy", "Pendulum-v1", device="cpu")
    config = DDPGConfig()
    assert (config.n_critics, config.policy_delay, config.target_noise_clip) == (
        model.policy.critic.n_critics,
        model.policy_delay,
        model.target_noise_clip,
    )
    ddpg = small_td3(DDPG)
    assert len(ddpg.critic.qs) == 1 and DDPG.name == "ddpg"


def test_normal_noise_has_its_std_and_ornstein_uhlenbeck_restarts_at_episode_ends():
    generator = torch.Generator().manual_seed(0)
    normal = ActionNoise("normal", 0.3, 4, 2, generator, torch.device("cpu"))
    draws = torch.stack([normal.sample() for _ in range(5000)])
    assert abs(draws.std().item() - 0.3) < 0.01 and abs(draws.mean().item()) < 0.01
    ou = ActionNoise("ornstein-uhlenbeck", 0.3, 2, 1, generator, torch.device("cpu"))
    first = ou.sample().clone()  # x_1 = std sqrt(dt) N(0, 1) from x_0 = 0
    assert (first.abs() < 0.3 * math.sqrt(OU_DT) * 5).all()
    second = ou.sample()  # x_2 = x_1 (1 - theta dt) + std sqrt(dt) N(0, 1): correlated with x_1
    assert not torch.equal(second, first * (1 - OU_THETA * OU_DT))
    ou.reset(torch.tensor([True, False]))
    assert ou.state[0].item() == 0.0 and ou.state[1].item() == second[1].item()
    assert (ActionNoise("none", 0.3, 2, 1, generator, torch.device("cpu")).sample() == 0).all()


@pytest.mark.parametrize("cls", [TD3, DDPG])
def test_exploration_stays_inside_the_bounds(cls):
    agent = small_td3(cls, noise_std=5.0)
    actions = agent.explore(torch.randn(256, 3))
    assert actions.shape == (256, 1) and (actions.abs() <= 2.0).all() and (actions.abs() == 2.0).any()


def test_reference_only_settings_are_refused_with_the_choices():
    from thrust_app.config import ConfigError, apply_overrides

    with pytest.raises(ConfigError, match="update"):
        apply_overrides(TD3Config(), {"update": "numba"}, "td3")


@pytest.mark.parametrize(("noise_type", "noisy"), [("normal", True), ("ornstein-uhlenbeck", True), ("none", False)])
def test_the_warm_up_takes_the_exploration_noise_as_sb3_does(noise_type, noisy):
    """SB3 adds the action noise to the warm-up's uniform actions too, clipped to the bounds: with noise a share of
    them sit exactly on a bound (a uniform draw never does), and the noise process has moved."""
    config = TD3Config(n_envs=500, learning_starts=10_000, noise_type=noise_type, noise_std=0.5)
    td3 = TD3((3,), PENDULUM_ACTIONS, config, torch.device("cpu"), seed=0)
    actions = td3.random_actions(config.n_envs)
    on_bounds = float((actions.abs() == 2.0).float().mean())
    assert actions.abs().max() <= 2.0 and (on_bounds > 0) == noisy, on_bounds
    if noise_type == "ornstein-uhlenbeck":
        assert td3.noise.state.abs().sum() > 0
