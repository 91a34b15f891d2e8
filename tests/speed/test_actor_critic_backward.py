"""The written-out backward (`update="handwritten"`) gives the reference's gradients: autograd through
`ActorCritic.evaluate_actions` on the algorithm files' own losses."""

from __future__ import annotations

from functools import partial

import pytest
import torch

from thrust_app.algos import A2C, PPO
from thrust_app.algos.a2c import A2CConfig, a2c_loss
from thrust_app.algos.ppo import Minibatch, PPOConfig, ppo_loss
from thrust_app.envs.batched import make_batched
from thrust_app.envs.core import Box, Discrete
from thrust_app.envs.tensors import EnvIO
from thrust_app.nets.policies import ActorCritic
from thrust_app.speed import actor_critic_backward as actor_critic_backward
from thrust_app.speed.actor_critic_backward import fast_backward, unsupported_reason
from thrust_app.speed.switches import apply_speed, choose_update


def reference_gradients(net, obs, actions, loss_fn):
    net.zero_grad()
    loss, logs = loss_fn(*net.evaluate_actions(obs, actions))
    loss.backward()
    return logs.detach(), {name: p.grad.clone() for name, p in net.named_parameters()}


def example_batch(space: str, n: int = 64):
    generator = torch.Generator().manual_seed(0)
    obs = torch.randn(n, 5, generator=generator) * 2
    actions = torch.randn(n, 2, generator=generator) if space == "box" else torch.randint(0, 3, (n,), generator=generator)
    minibatch = Minibatch(
        old_log_prob=torch.randn(n, generator=generator) * 0.3 - 1.0,
        old_value=torch.randn(n, generator=generator),
        advantages=torch.randn(n, generator=generator),
        returns=torch.randn(n, generator=generator),
    )
    return obs, actions, minibatch


def loss_with_an_extra_term(log_prob, entropy, value, batch):
    """A loss the fast path has no written-out gradient for: its gradient comes from autograd on it."""
    loss, logs = ppo_loss(log_prob, entropy, value, batch, clip_range=0.2, config=PPOConfig(ent_coef=0.01))
    return loss + 0.1 * (log_prob - batch.old_log_prob).square().mean(), logs


LOSSES = {
    "ppo": lambda batch: partial(ppo_loss, batch=batch, clip_range=0.2, config=PPOConfig(ent_coef=0.01, vf_coef=0.7)),
    "ppo-vf-clip": lambda batch: partial(
        ppo_loss, batch=batch, clip_range=0.1, config=PPOConfig(ent_coef=0.02, clip_range_vf=0.2, normalize_advantage=False)
    ),
    "a2c": lambda batch: partial(
        a2c_loss,
        advantages=batch.advantages,
        returns=batch.returns,
        config=A2CConfig(ent_coef=0.01, vf_coef=0.7, normalize_advantage=True),
    ),
    "a2c-no-entropy": lambda batch: partial(
        a2c_loss, advantages=batch.advantages, returns=batch.returns, config=A2CConfig(ent_coef=0.0)
    ),
    "new-term": lambda batch: partial(loss_with_an_extra_term, batch=batch),
}


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize(
    "hidden, activation, space",
    [((64, 64), "tanh", "discrete"), ((32,), "relu", "discrete"), ((16, 24, 8), "tanh", "box"), ((64, 64), "relu", "box")],
)
def test_fast_gradients_equal_autograds(loss, hidden, activation, space):
    assert_gradients_equal_autograds(fast_backward, loss, hidden, activation, space)


def assert_gradients_equal_autograds(backward, loss: str, hidden, activation: str, space: str) -> None:
    """`backward(net, obs, actions, loss_fn)` writes every parameter's gradient (none accumulated onto) as autograd
    computes it for the loss named in LOSSES, and returns the loss's logs."""
    action_space = Box((-2.0, -1.0), (2.0, 1.0), (2,)) if space == "box" else Discrete(3)
    torch.manual_seed(0)
    net = ActorCritic((5,), action_space, hidden, activation)
    obs, actions, batch = example_batch(space)
    loss_fn = LOSSES[loss](batch)
    want_logs, want = reference_gradients(net, obs, actions, loss_fn)
    net.flat.grad.fill_(float("nan"))
    got_logs = backward(net, obs, actions, loss_fn)
    torch.testing.assert_close(got_logs, want_logs, atol=1e-6, rtol=1e-5)
    for name, p in net.named_parameters():
        assert p.grad.abs().sum() > 0, name
        torch.testing.assert_close(p.grad, want[name], atol=2e-6, rtol=1e-4, msg=name)


@pytest.mark.parametrize("algo_cls", [PPO, A2C])
def test_the_switch_trains_the_same_policy_either_way(algo_cls):
    """One whole iteration (rollout, every minibatch, optimizer steps) with each setting of `update`."""
    nets = []
    for update in ("handwritten", "reference"):
        torch.manual_seed(0)
        env = make_batched("cartpole", 4, seed=0)
        extra = {"batch_size": 64} if algo_cls is PPO else {}
        config = algo_cls.Config(n_envs=4, n_steps=32, update=update, **extra)
        algo = algo_cls(env.observation_space.shape, env.action_space, config, torch.device("cpu"), seed=0)
        algo.apply_schedules(1.0)
        assert apply_speed(algo, env).update == update
        env_io = EnvIO(torch.device("cpu"))
        algo.iteration(env, env_io, env_io.reset(env))
        nets.append(algo.net)
    torch.testing.assert_close(nets[0].flat, nets[1].flat, atol=1e-5, rtol=1e-4)


def test_image_observations_fall_back_to_the_reference_with_a_note():
    net = ActorCritic((3, 5, 5), Discrete(3))
    assert "CNN" in unsupported_reason(net)
    env = make_batched("snake", 1, seed=0)
    algo = PPO(env.observation_space.shape, env.action_space, PPOConfig(), torch.device("cpu"), seed=0)
    assert choose_update(algo) == "reference"
    assert any("falls back to reference" in note for note in algo.notes)


def test_a_written_out_gradient_that_disagrees_with_the_loss_falls_back_with_a_warning(monkeypatch):
    """As after an edit of ppo_loss that the written-out gradient did not follow."""
    name = ppo_loss
    right = actor_critic_backward.WRITTEN_OUT[name]

    def stale(*args, **kwargs):
        logs, (g_log_prob, g_entropy, g_value) = right(*args, **kwargs)
        return logs, (g_log_prob, g_entropy, 2 * g_value)  # a value term that has changed since

    monkeypatch.setitem(actor_critic_backward.WRITTEN_OUT, name, stale)
    monkeypatch.setattr(actor_critic_backward, "_CHECKED", {})
    torch.manual_seed(0)
    net = ActorCritic((5,), Discrete(3))
    obs, actions, batch = example_batch("discrete")
    loss_fn = LOSSES["ppo"](batch)
    _, want = reference_gradients(net, obs, actions, loss_fn)
    with pytest.warns(UserWarning, match="differs from autograd on the loss"):
        fast_backward(net, obs, actions, loss_fn)
    for name_, p in net.named_parameters():
        torch.testing.assert_close(p.grad, want[name_], atol=2e-6, rtol=1e-4, msg=name_)


def test_the_weight_gradient_split_along_the_batch_is_the_same_sum():
    generator = torch.Generator().manual_seed(0)
    side_by_side = torch.randn(4096, 2 * 16, generator=generator)  # the input layer's output, as the towers read it
    layer_in = side_by_side.view(4096, 2, 16).transpose(0, 1)  # (2, B, 16), not contiguous
    grad = torch.randn(2, 4096, 24, generator=generator)
    whole, split = torch.empty(2, 16, 24), torch.empty(2, 16, 24)
    actor_critic_backward.tower_weight_gradient(layer_in, grad, whole, parts=1)
    actor_critic_backward.tower_weight_gradient(layer_in, grad, split, parts=8)
    torch.testing.assert_close(split, whole, atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(whole, layer_in.transpose(1, 2) @ grad)


def test_only_large_cuda_batches_are_split():
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert actor_critic_backward.batch_parts(32768, cuda) == 64
    assert actor_critic_backward.batch_parts(32768, cpu) == 1  # one core's bmm walks the batch as fast in one piece
    assert actor_critic_backward.batch_parts(1024, cuda) == 1  # few rows: one tile per tower is quick enough
    assert actor_critic_backward.batch_parts(32768 + 100, cuda) == 1  # a short last minibatch that does not split evenly


def test_gsde_runs_the_reference_throughout_with_a_note():
    env = make_batched("pendulum", 2, seed=0)
    config = PPOConfig(n_envs=2, use_sde=True)
    algo = PPO(env.observation_space.shape, env.action_space, config, torch.device("cpu"), seed=0)
    choice = apply_speed(algo, env)
    assert (choice.acting, choice.update) == ("torch", "reference")
    assert any("gSDE" in note and "falls back to reference" in note for note in algo.notes)
