"""The written-out DQN update (`update="handwritten"`) gives the reference's gradients: autograd through
`dqn_loss` on the same nets and batch."""

from __future__ import annotations

import pytest
import torch

from thrust_app.algos import DQN
from thrust_app.algos.dqn import DQNConfig, dqn_loss
from thrust_app.envs.core import Discrete
from thrust_app.nets.policies import QNetwork
from thrust_app.speed.dqn_backward import fast_dqn_backward, td_loss_gradient, unsupported_reason
from thrust_app.speed.switches import choose_update


@pytest.mark.parametrize("loss", ["huber", "mse"])
@pytest.mark.parametrize("double", [True, False])
@pytest.mark.parametrize("hidden", [(64, 64), (32,), (16, 24, 8)])
def test_fast_gradients_equal_autograds(loss, double, hidden, dqn_batch, dqn_nets):
    q_net, target_net = dqn_nets(hidden)
    batch = dqn_batch
    q_net.zero_grad()
    want_loss = dqn_loss(q_net, target_net, batch, 0.9, double, loss)
    want_loss.backward()
    want = {name: p.grad.clone() for name, p in q_net.named_parameters()}
    q_net.flat.grad.fill_(float("nan"))  # the written-out backward must write every gradient, not add to them
    got_loss = fast_dqn_backward(q_net, target_net, batch, 0.9, double, loss)
    torch.testing.assert_close(got_loss, want_loss.detach())
    for name, p in q_net.named_parameters():
        assert p.grad.abs().sum() > 0, name
        torch.testing.assert_close(p.grad, want[name], atol=1e-6, rtol=1e-5, msg=name)


def test_the_huber_gradient_is_clipped_at_one_per_sample():
    q, target = torch.tensor([0.0, 0.0, 0.0]), torch.tensor([-5.0, 0.5, 5.0])
    loss, grad = td_loss_gradient(q, target, "huber")
    torch.testing.assert_close(grad, torch.tensor([1.0, -0.5, -1.0]) / 3)
    torch.testing.assert_close(loss, torch.nn.functional.smooth_l1_loss(q, target))


def test_the_switch_trains_the_same_q_net_either_way(run_iterations):
    """Whole iterations (acting, sampling, updates, target copies, Adam) with each setting of `backward`."""
    settings = {"learning_starts": 64, "batch_size": 32, "train_freq": 4, "target_update_interval": 128}
    (fast, _), (reference, _) = (
        run_iterations(DQN, "cartpole", 64, n_envs=2, update=way, **settings) for way in ("handwritten", "reference")
    )
    torch.testing.assert_close(fast.q_net.flat, reference.q_net.flat, atol=1e-5, rtol=1e-4)


def test_image_observations_fall_back_to_the_reference_with_a_note():
    assert "CNN" in unsupported_reason(QNetwork((3, 5, 5), 4))
    algo = DQN((3, 5, 5), Discrete(4), DQNConfig(buffer_size=16), torch.device("cpu"), seed=0)
    assert choose_update(algo) == "reference"
    assert any("falls back to reference" in note for note in algo.notes)
