"""The shared pieces of the written-out updates: an MLP's backward equals autograd's, a product handed to
numpy equals torch's, and the direct Adam step equals `optimizer.step()` bit for bit."""

from __future__ import annotations

import pytest
import torch

from thrust_app.nets.policies import QNetwork
from thrust_app.speed.mlp_backward import (
    Activation,
    adam_step,
    linear_layers,
    matmul,
    mlp_backward,
    mlp_forward,
    numpy_computes,
)


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_mlp_backward_equals_autograd(activation):
    torch.manual_seed(0)
    layers = torch.nn.Sequential(torch.nn.Linear(6, 32), torch.nn.Linear(32, 16), torch.nn.Linear(16, 3))
    x, grad_out = torch.randn(40, 6), torch.randn(40, 3)
    act = torch.relu if activation == "relu" else torch.tanh
    out = layers[2](act(layers[1](act(layers[0](x)))))
    want = torch.autograd.grad(out, [p for layer in layers for p in layer.parameters()], grad_out)
    for layer in layers:
        for p in layer.parameters():
            p.grad = torch.full_like(p, float("nan"))
    outputs = mlp_forward(layers, x, activation)
    torch.testing.assert_close(outputs[-1], out.detach())
    mlp_backward(layers, outputs, grad_out, activation)
    got = [p.grad for layer in layers for p in layer.parameters()]
    for got_grad, want_grad in zip(got, want, strict=True):
        torch.testing.assert_close(got_grad, want_grad)


@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("shape", [(3, 40, 16), (8, 256, 64)])  # below and above where tanh goes by sigmoid
def test_activation_under_autograd_equals_torchs(activation, shape):
    """`Activation` (what a seed batch's stacked forward applies) gives torch's activation and, through autograd,
    torch's gradient: tanh as 2 sigmoid(2z) - 1 on a large CPU tensor to within float rounding."""
    torch.manual_seed(0)
    z, grad_out = torch.randn(shape, requires_grad=True), torch.randn(shape)
    reference = torch.relu if activation == "relu" else torch.tanh
    want = reference(z)
    (want_grad,) = torch.autograd.grad(want, z, grad_out)
    got = Activation.apply(z * 1.0, activation)  # applied in place: to an intermediate, as a layer's output is
    (got_grad,) = torch.autograd.grad(got, z, grad_out)
    torch.testing.assert_close(got, want.detach(), rtol=0, atol=3e-7)
    torch.testing.assert_close(got_grad, want_grad, rtol=0, atol=2e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_narrow_products_go_through_numpy_and_equal_torchs(dtype):
    """A row-major right operand of 2-8 columns (a first layer's input, a weight with 4 inputs) is numpy's;
    the result is torch's product, returned or written into `out`, also for a transposed left operand."""
    torch.manual_seed(0)
    grad, x, weight = (torch.randn(shape, dtype=dtype) for shape in ((64, 256), (64, 4), (256, 4)))
    assert numpy_computes(grad.t(), x) and numpy_computes(grad, weight)
    out = torch.full((256, 4), float("nan"), dtype=dtype)
    assert matmul(grad.t(), x, out=out) is out
    torch.testing.assert_close(out, grad.t() @ x)
    torch.testing.assert_close(matmul(grad, weight), grad @ weight)
    # one column (a matrix-vector product), a column-major operand (a transposed weight) or a wide one: torch's
    for right in (weight[:, :1], torch.randn(4, 256, dtype=dtype).t(), torch.randn(256, 16, dtype=dtype)):
        assert not numpy_computes(grad, right)
        torch.testing.assert_close(matmul(grad, right), grad @ right)


def test_the_passes_follow_a_net_whose_parameters_were_gathered_again():
    """Moving a FlatParameters net re-gathers its parameters into new buffers: a backward after that writes
    the new gradients, not the buffer the first pass saw."""
    torch.manual_seed(0)
    net = QNetwork((4,), 2, (16,))
    x, grad_out = torch.randn(8, 4), torch.randn(8, 2)
    mlp_backward(net, mlp_forward(net, x), grad_out)
    old_grad = net.flat.grad.clone()
    net.float()  # _apply: every parameter and gradient is a view into new buffers
    with torch.no_grad():
        net.flat.mul_(2.0)
    net.flat.grad.fill_(float("nan"))
    outputs = mlp_forward(net, x)
    torch.testing.assert_close(outputs[-1], net(x).detach())
    mlp_backward(net, outputs, grad_out)
    want = torch.autograd.grad(net(x), list(net.parameters()), grad_out)
    for got_grad, want_grad in zip((p.grad for p in net.parameters()), want, strict=True):
        torch.testing.assert_close(got_grad, want_grad)
    assert not torch.equal(net.flat.grad, old_grad)


def test_adam_step_equals_the_optimizers_step_bitwise():
    nets = [QNetwork((4,), 2, (32, 32)) for _ in range(2)]
    nets[1].load_state_dict(nets[0].state_dict())
    optimizers = [torch.optim.Adam([net.flat], lr=1e-3, eps=1e-5, fused=True) for net in nets]
    generator = torch.Generator().manual_seed(0)
    for _ in range(5):
        grad = torch.randn(nets[0].flat.shape, generator=generator)
        for net in nets:
            net.flat.grad.copy_(grad)
        optimizers[0].step()
        adam_step(optimizers[1])
    assert torch.equal(nets[0].flat, nets[1].flat)
    for key in ("exp_avg", "exp_avg_sq", "step"):
        assert torch.equal(optimizers[0].state[nets[0].flat][key], optimizers[1].state[nets[1].flat][key]), key


def test_adam_step_leaves_other_optimizers_to_their_own_step():
    net = QNetwork((4,), 2, (8,))
    optimizer = torch.optim.RMSprop([net.flat], lr=1e-2)
    net.flat.grad.fill_(1.0)
    before = net.flat.detach().clone()
    adam_step(optimizer)
    assert not torch.equal(net.flat, before)
    assert linear_layers(net)[0].in_features == 4
