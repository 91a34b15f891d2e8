"""Flat parameter buffers: every net's parameters stay views of one buffer through moves and copies,
the one-buffer clip, optimizer step and Polyak update equal the per-parameter ones, and a version-1
checkpoint (optimizer state saved per parameter) resumes as if nothing had changed."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from thrust_app.algos import ALGOS
from thrust_app.algos.off_policy import polyak
from thrust_app.envs.core import Box, Discrete
from thrust_app.nets.flat_params import clip_grad_norm_
from thrust_app.nets.policies import ActorCritic, QNetwork, SquashedGaussianActor, TwinQ
from thrust_app.runs.files import CheckpointError, load_checkpoint, save_checkpoint
from thrust_app.training.trainer import train

NETS = {
    "actor-critic": lambda: ActorCritic((4,), Discrete(2)),
    "actor-critic-image": lambda: ActorCritic((3, 5, 5), Box((-1.0,), (1.0,), (1,))),
    "q-net": lambda: QNetwork((4,), 3, (32, 32)),
    "sac-actor": lambda: SquashedGaussianActor((3,), Box((-2.0,), (2.0,), (1,)), (32, 32)),
    "twin-q": lambda: TwinQ((3,), Box((-2.0,), (2.0,), (1,)), (32, 32)),
}


def assert_flat(net: nn.Module) -> None:
    """Every parameter and every gradient is a view into the net's `flat` / `flat.grad`."""
    for buffer, tensors in ((net.flat, list(net.parameters())), (net.flat.grad, [p.grad for p in net.parameters()])):
        start, end = buffer.data_ptr(), buffer.data_ptr() + buffer.numel() * buffer.element_size()
        for t in tensors:
            assert t.untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr()
            assert start <= t.data_ptr() < end
    with torch.no_grad():
        net.flat.add_(1.0)
        assert all(bool((p == p).all()) for p in net.parameters())  # no NaN from padding
    before = [p.detach().clone() for p in net.parameters()]
    with torch.no_grad():
        net.flat.mul_(2.0)
    for p, old in zip(net.parameters(), before, strict=True):
        torch.testing.assert_close(p.detach(), old * 2.0)


@pytest.mark.parametrize("name", NETS)
def test_parameters_stay_views_of_one_buffer_through_moves_and_copies(name):
    torch.manual_seed(0)
    net = NETS[name]()
    names = [n for n, _ in net.named_parameters()]
    assert_flat(net)
    net = net.double()  # a move rebuilds every parameter: the net must gather them again
    assert net.flat.dtype == torch.float64
    assert_flat(net)
    twin = copy.deepcopy(net)
    assert_flat(twin)
    assert twin.flat.data_ptr() != net.flat.data_ptr()
    with torch.no_grad():
        twin.flat.zero_()
    assert any(bool(p.abs().sum() > 0) for p in net.parameters())  # the copy owns its own buffer
    assert [n for n, _ in twin.named_parameters()] == names
    assert "flat" not in net.state_dict()  # state dicts (and exported weights) keep the usual names


def test_zero_grad_zeroes_the_buffer_and_never_unlinks_the_gradients():
    """`zero_grad()` (set_to_none=True by default in torch) must not replace the views with None: a
    written-out backward would then write nowhere and the optimizer would step stale gradients."""
    net = NETS["actor-critic"]()
    net.flat.grad.fill_(1.0)
    net.zero_grad()
    assert_flat(net)
    assert all(p.grad is not None and not p.grad.any() for p in net.parameters())


def test_one_buffer_clip_adam_and_polyak_equal_the_per_parameter_ones():
    torch.manual_seed(0)
    flat_net = ActorCritic((4,), Discrete(2), (16, 16))
    plain_net = copy.deepcopy(flat_net)
    flat_opt = torch.optim.Adam([flat_net.flat], lr=1e-2, eps=1e-5)
    plain_opt = torch.optim.Adam(list(plain_net.parameters()), lr=1e-2, eps=1e-5)
    for step in range(5):
        grads = [torch.randn_like(p) * (10.0 if step % 2 else 0.01) for p in plain_net.parameters()]
        for net in (flat_net, plain_net):
            for p, g in zip(net.parameters(), grads, strict=True):
                p.grad.copy_(g)
        clip_grad_norm_(flat_net.flat, 0.5)
        nn.utils.clip_grad_norm_(list(plain_net.parameters()), 0.5)
        torch.testing.assert_close(
            flat_net.flat.grad.norm(), torch.stack([p.grad.norm() for p in plain_net.parameters()]).norm()
        )
        flat_opt.step()
        plain_opt.step()
        for a, b in zip(flat_net.parameters(), plain_net.parameters(), strict=True):
            torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)

    target = copy.deepcopy(flat_net)
    with torch.no_grad():
        flat_net.flat.add_(torch.randn_like(flat_net.flat))
    want = [0.9 * t.detach() + 0.1 * s.detach() for t, s in zip(target.parameters(), flat_net.parameters(), strict=True)]
    polyak(target, flat_net, 0.1)
    for got, expected in zip(target.parameters(), want, strict=True):
        torch.testing.assert_close(got.detach(), expected)


#: algo -> {optimizer part: the net it steps}
OPTIMIZED = {
    "a2c": {"optimizer": "net"},
    "ppo": {"optimizer": "net"},
    "dqn": {"optimizer": "q_net"},
    "sac": {"actor_opt": "actor", "critic_opt": "critic"},
}


@pytest.mark.parametrize("algo", OPTIMIZED)
def test_a_version_1_checkpoint_resumes_where_it_stopped(algo, tmp_path):
    """Version 1 saved optimizer state per parameter; loading lays it out flat, and the next optimizer
    step is the one the per-parameter optimizer would have taken."""
    from thrust_app.envs.batched import make_batched

    env = make_batched("pendulum" if algo == "sac" else "cartpole", 1, seed=0)
    cls = ALGOS[algo]
    old, new = (cls(env.observation_space.shape, env.action_space, cls.Config(), torch.device("cpu"), 0) for _ in range(2))
    old_parts, new_parts = old.stateful_parts(), new.stateful_parts()
    per_param = {}  # the optimizers as version 1 built them: over each net's parameters
    for opt_name, net_name in OPTIMIZED[algo].items():
        opt = old_parts[opt_name]
        per_param[opt_name] = type(opt)(list(old_parts[net_name].parameters()), **opt.defaults)
    torch.manual_seed(1)
    for _ in range(3):
        for opt_name, net_name in OPTIMIZED[algo].items():
            for p in old_parts[net_name].parameters():
                p.grad.copy_(torch.randn_like(p))
            per_param[opt_name].step()
    path = tmp_path / "last.pt"
    save_checkpoint(path, {"algo": old.state_dict() | {n: opt.state_dict() for n, opt in per_param.items()}})
    saved = torch.load(path, weights_only=True)
    torch.save(saved | {"version": 1}, path)
    new.load_state_dict(load_checkpoint(path)["algo"])

    for opt_name, net_name in OPTIMIZED[algo].items():
        old_net, new_net = old_parts[net_name], new_parts[net_name]
        for a, b in zip(old_net.parameters(), new_net.parameters(), strict=True):
            g = torch.randn_like(a)
            a.grad.copy_(g)
            b.grad.copy_(g)
        per_param[opt_name].step()
        new_parts[opt_name].step()
        for a, b in zip(old_net.parameters(), new_net.parameters(), strict=True):
            torch.testing.assert_close(a.detach(), b.detach(), atol=1e-6, rtol=1e-5)


def test_a_checkpoint_from_a_newer_thrust_is_refused_with_the_fix(tmp_path):
    run = tmp_path / "run"
    train("ppo", "bandit", timesteps=256, run_dir=run, device="cpu", eval_episodes=1, progress=False, log=lambda _: None)
    saved = torch.load(run / "last.pt", weights_only=True)
    saved["version"] = 99
    torch.save(saved, run / "last.pt")
    with pytest.raises(CheckpointError, match=r"version 99.*upgrade Thrust"):
        load_checkpoint(run / "last.pt")
