"""SAC follows the learning-rate schedule on all three of its optimizers; its critic loss by hand, for any number
of critics (SB3's n_critics); its log-probability is SB3's squashed Gaussian."""

from __future__ import annotations

import pytest
import torch

from thrust_app.algos import SAC, SACConfig
from thrust_app.envs.core import Box
from thrust_app.nets.policies import SquashedGaussianActor
from thrust_app.runs.files import load_checkpoint
from thrust_app.training.trainer import train


def test_linear_schedule_sets_every_optimizers_learning_rate():
    sac = SAC(
        (3,),
        Box((-2.0,), (2.0,), (1,)),
        SACConfig(learning_rate=1e-3, lr_schedule="linear", hidden=(8, 8)),
        torch.device("cpu"),
        seed=0,
    )
    sac.apply_schedules(0.25)
    for optimizer in (sac.actor_opt, sac.critic_opt, sac.alpha_opt):
        assert optimizer.param_groups[0]["lr"] == 1e-3 * 0.25


def test_a_run_with_a_linear_schedule_makes_its_last_update_with_none_of_training_left(tmp_path):
    train(
        "sac",
        "pendulum",
        timesteps=300,
        device="cpu",
        run_dir=tmp_path,
        eval_episodes=1,
        progress=False,
        log=lambda _: None,
        overrides={"learning_starts": 100, "hidden": "16,16", "lr_schedule": "linear", "learning_rate": 1e-3},
    )
    state = load_checkpoint(tmp_path / "last.pt")["algo"]
    # the schedule is read after each iteration's collection, as SB3 reads it: the last update, after step 300, has
    # none of training left
    for name in ("actor_opt", "critic_opt", "alpha_opt"):
        assert state[name]["param_groups"][0]["lr"] == 0.0, name


@pytest.mark.parametrize("n_critics", [1, 2, 3])
def test_the_critic_loss_is_half_the_sum_over_critics_against_the_smallest_target(n_critics):
    """L = 1/2 sum_i mean((Q_i(s, a) - y)^2) (SB3's form), y = r + gamma (1 - d) (min_i Q'_i(s', a') - alpha log
    pi(a'|s')), a' ~ pi(s')."""
    space = Box((-2.0,), (2.0,), (1,))
    sac = SAC((3,), space, SACConfig(hidden=(8, 8), n_critics=n_critics, gamma=0.9), torch.device("cpu"), seed=0)
    assert len(sac.critic.qs) == n_critics
    with torch.no_grad():  # targets away from the critics, so the minimum matters
        sac.critic_target.flat.add_(0.5 * torch.randn_like(sac.critic_target.flat))
    g = torch.Generator().manual_seed(1)
    obs, next_obs = torch.randn(32, 3, generator=g), torch.randn(32, 3, generator=g)
    actions, rewards = torch.rand(32, 1, generator=g) * 4 - 2, torch.randn(32, generator=g)
    terminated = (torch.rand(32, generator=g) < 0.3).float()
    alpha = sac.log_alpha.exp().detach()
    with torch.no_grad():
        torch.manual_seed(5)  # the actor samples from torch's stream: the same draws as optimize's below
        sac.actor.sample(obs)
        next_actions, next_log_prob = sac.actor.sample(next_obs)
        next_qs = torch.stack(sac.critic_target(next_obs, next_actions))
        y = rewards + 0.9 * (1 - terminated) * (next_qs.min(0).values - alpha * next_log_prob)
        want = 0.5 * sum(((q - y) ** 2).mean() for q in sac.critic(obs, actions))
    torch.manual_seed(5)
    logs = sac.optimize((obs, actions, rewards, next_obs, terminated))
    torch.testing.assert_close(logs["critic_loss"], want)


def test_the_log_probability_is_sb3s_squashed_gaussian_where_tanh_saturates_too():
    """log pi(a | s) = log N(u; mu, std) - sum log(1 - tanh(u)^2 + 1e-6), SB3's SquashedDiagGaussianDistribution
    (and CleanRL's): where tanh saturates (|u| past ~9 in float32) the correction stays at log(1e-6)."""
    from stable_baselines3.common.distributions import SquashedDiagGaussianDistribution

    torch.manual_seed(0)
    actor = SquashedGaussianActor((3,), Box((-1.0, -1.0), (1.0, 1.0), (2,)), (8,))
    with torch.no_grad():
        actor.mu.bias.copy_(torch.tensor([0.5, 12.0]))  # the second action dimension saturates
    obs = torch.randn(16, 3)
    torch.manual_seed(3)
    actions, log_prob = actor.sample(obs)
    with torch.no_grad():
        features = actor.encoder(obs)
        mu, log_std = actor.mu(features), actor.log_std(features).clamp(-20.0, 2.0)
        torch.manual_seed(3)
        u = mu + log_std.exp() * torch.randn_like(mu)  # the same draw
        sb3 = SquashedDiagGaussianDistribution(2).proba_distribution(mu, log_std).log_prob(torch.tanh(u), u)
    assert (torch.tanh(u[:, 1]) == 1.0).all()  # saturated in float32
    torch.testing.assert_close(actions, torch.tanh(u))
    torch.testing.assert_close(log_prob, sb3, rtol=1e-5, atol=1e-4)
