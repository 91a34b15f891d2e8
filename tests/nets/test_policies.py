"""Networks: the actor-critic's sampling, log-probabilities and export form agree with each other."""

from __future__ import annotations

from functools import partial

import pytest
import torch

from thrust_app.envs.core import Box, Discrete
from thrust_app.nets.policies import ActorCritic, QCritics, TwinQ


def test_rollout_sampling_draws_from_the_policy():
    """The Gumbel-max sampler behind rollouts: frequencies match the softmax, log-probs and values match
    `evaluate_actions`."""
    torch.manual_seed(0)
    net = ActorCritic((4,), Discrete(3))
    with torch.no_grad():
        net.pi_head.bias.copy_(torch.tensor([0.0, 1.0, -1.0]))
    obs = torch.zeros(20_000, 4)
    actions, log_probs, values = net.sample(obs)
    want_log_probs, _, want_values = net.evaluate_actions(obs, actions)
    freq = torch.bincount(actions, minlength=3) / actions.shape[0]
    torch.testing.assert_close(freq, torch.softmax(torch.tensor([0.0, 1.0, -1.0]), 0), atol=0.015, rtol=0)
    torch.testing.assert_close(log_probs, want_log_probs.detach(), atol=1e-5, rtol=0)
    torch.testing.assert_close(values, want_values.detach(), atol=1e-5, rtol=0)


def test_gaussian_log_prob_and_entropy_sum_over_action_dimensions():
    torch.manual_seed(0)
    net = ActorCritic((3,), Box((-1.0, -1.0), (1.0, 1.0), (2,)), log_std_init=-0.5)
    obs, actions = torch.randn(5, 3), torch.randn(5, 2)
    log_prob, entropy, _ = net.evaluate_actions(obs, actions)
    mean = net.pi_head(net.towers.tower(obs, 0))
    dist = torch.distributions.Normal(mean, torch.full_like(mean, -0.5).exp())
    torch.testing.assert_close(log_prob, dist.log_prob(actions).sum(-1))
    torch.testing.assert_close(entropy, dist.entropy().sum(-1))


@pytest.mark.parametrize("vf_hidden", [(), (8, 8, 8)], ids=["twin-towers", "split-towers"])
@pytest.mark.parametrize("space", [Discrete(3), Box((-2.0,), (2.0,), (1,))], ids=["discrete", "box"])
def test_the_exported_policy_mlp_acts_as_the_network(space, vf_hidden):
    torch.manual_seed(0)
    net = ActorCritic((4,), space, (32, 16), vf_hidden=vf_hidden)
    obs = torch.randn(64, 4) * 3
    want, got = net.act(obs), net.policy_mlp().act(obs)
    if isinstance(space, Discrete):
        torch.testing.assert_close(got[0], want[0])
        assert torch.equal(got[1], want[1])
    else:
        torch.testing.assert_close(got, want)


def test_value_mlp_sizes_of_their_own_are_two_plain_mlps():
    """vf_hidden (SB3's net_arch=dict(pi=[32], vf=[64, 64])): the value MLP has its own layers and the policy is
    the same function as a net with no value MLP at all."""
    torch.manual_seed(0)
    net = ActorCritic((4,), Discrete(2), (32,), vf_hidden=(64, 64))
    assert [w.shape[0] for w, _ in net.towers.layers(0)] == [32] and [w.shape[0] for w, _ in net.towers.layers(1)] == [64, 64]
    assert net.pi_head.in_features == 32 and net.vf_head.in_features == 64
    obs = torch.randn(16, 4)
    pi_features, vf_features = net.features(obs)
    torch.testing.assert_close(pi_features, torch.tanh(net.towers.pi[0](obs)))
    torch.testing.assert_close(net.value(obs), net.vf_head(vf_features).squeeze(-1))
    assert type(ActorCritic((4,), Discrete(2), (32,), vf_hidden=(32,)).towers).__name__ == "TwinTowers"  # the same sizes


def test_checkpoints_naming_the_input_layer_first_still_load():
    net = ActorCritic((4,), Discrete(2))
    state = {key.replace("towers.input_layer.", "towers.first."): value for key, value in net.state_dict().items()}
    twin = ActorCritic((4,), Discrete(2))
    twin.load_state_dict(state)
    torch.testing.assert_close(twin.flat, net.flat)


def test_ortho_init_false_starts_every_layer_as_torch_does():
    """SB3's ortho_init=False (the zoo's tuned MuJoCo PPO entries): no orthogonal layers, each layer's weights and
    biases within torch's nn.Linear range +-1/sqrt(inputs); with ortho_init the towers' rows are orthogonal."""
    import math

    from thrust_app.envs.core import Box

    space = Box((-1.0,), (1.0,), (1,))
    torch.manual_seed(0)
    plain = ActorCritic((17,), space, (64, 64), "relu", ortho_init=False)
    orthogonal = ActorCritic((17,), space, (64, 64), "relu")
    for net in (plain, orthogonal):
        first = net.towers.input_layer.weight[:64]  # the policy tower's first layer, (64, 17)
        is_orthogonal = torch.allclose(first.T @ first, 2 * torch.eye(17), atol=1e-4)  # gain sqrt(2): W^T W = 2 I
        assert is_orthogonal == (net is orthogonal)
    for weight, n_in in ((plain.towers.input_layer.weight, 17), (plain.towers.weights[0], 64), (plain.pi_head.weight, 64)):
        bound = 1 / math.sqrt(n_in)
        assert weight.abs().max() <= bound and weight.abs().max() > 0.8 * bound
    assert plain.towers.biases[0].abs().max() > 0  # torch's biases are not zero


def test_gsde_matches_sb3s_state_dependent_noise_distribution():
    """gSDE's log-probabilities, entropies and noisy actions equal SB3's StateDependentNoiseDistribution (full_std,
    no expln, no squashing: what SB3's PPO and A2C build with use_sde=True) on the same weights and features."""
    from stable_baselines3.common.distributions import StateDependentNoiseDistribution

    torch.manual_seed(0)
    net = ActorCritic((3,), Box((-2.0, -2.0), (2.0, 2.0), (2,)), hidden=(8, 8), log_std_init=-1.0, sde_sample_freq=4)
    assert net.log_std.shape == (8, 2)  # one log std per (feature, action dimension)
    with torch.no_grad():
        net.log_std.add_(0.3 * torch.randn(8, 2))
    obs, actions = torch.randn(6, 3), torch.randn(6, 2)
    features = net.towers.tower(obs, 0)
    mean = net.pi_head(features)
    theirs = StateDependentNoiseDistribution(2)
    theirs.sample_weights(net.log_std.detach(), batch_size=6)
    theirs.proba_distribution(mean, net.log_std, features)
    log_prob, entropy, _ = net.evaluate_actions(obs, actions)
    torch.testing.assert_close(log_prob, theirs.log_prob(actions))
    torch.testing.assert_close(entropy, theirs.entropy())
    net.exploration = theirs.exploration_matrices  # the same drawn weights: the same noisy actions
    drawn, drawn_log_prob, _ = net.sample(obs)
    torch.testing.assert_close(drawn, theirs.sample())
    torch.testing.assert_close(drawn_log_prob, theirs.log_prob(drawn))


def test_gsde_draws_new_weights_on_sb3s_schedule():
    net = ActorCritic((3,), Box((-1.0,), (1.0,), (1,)), sde_sample_freq=4)
    drawn_at = []
    for step in range(10):
        before = net.exploration
        net.resample_noise(step, 2)
        if net.exploration is not before:
            drawn_at.append(step)
    assert drawn_at == [0, 4, 8]
    per_rollout = ActorCritic((3,), Box((-1.0,), (1.0,), (1,)), sde_sample_freq=-1)
    drawn_at = []
    for step in range(10):
        before = per_rollout.exploration
        per_rollout.resample_noise(step, 2)
        drawn_at += [step] if per_rollout.exploration is not before else []
    assert drawn_at == [0]
    assert per_rollout.exploration.shape == (2, 64, 1)  # one (features x actions) matrix per env
    plain = ActorCritic((3,), Box((-1.0,), (1.0,), (1,)))
    plain.resample_noise(0, 2)
    assert plain.exploration is None and plain.log_std.shape == (1,)


@pytest.mark.parametrize("critics", [TwinQ, partial(QCritics, n_critics=1)])
def test_critics_written_for_the_envs_action_units_load_as_the_same_q_function(critics):
    """A checkpoint from before the critics read actions in [-1, 1] (no `action_half`) holds first layers for the
    env's units: loaded now, every critic gives the Q(s, a) it gave then."""
    space = Box((-2.0, 0.0), (2.0, 3.0), (2,))
    old = critics((3,), space, (8, 8))
    old_state = {name: value for name, value in old.state_dict().items() if not name.startswith("action_")}
    obs, actions = torch.randn(32, 3), torch.rand(32, 2) * torch.tensor([4.0, 3.0]) + torch.tensor([-2.0, 0.0])
    with torch.no_grad():  # what the old critics computed: their MLPs on the action as the env gives it
        then = [q_net(torch.cat([obs, actions], -1)).squeeze(-1) for q_net in old.qs]
        now = critics((3,), space, (8, 8))
        now.load_state_dict(old_state)
        torch.testing.assert_close(torch.stack(now(obs, actions)), torch.stack(then))
        corners = torch.tensor([[-2.0, 0.0], [2.0, 3.0]])  # the bounds read as -1 and 1
        assert torch.equal(now.unit(corners), torch.tensor([[-1.0, -1.0], [1.0, 1.0]]))
