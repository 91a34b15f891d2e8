"""The shared pieces of the compiled updates: the numba forward and backward of a ReLU MLP equal autograd's,
the compiled clip equals flat_params', the views follow a net whose parameters moved, and a net the kernels
cannot serve is named with the reason."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from thrust_app.nets.flat_params import clip_grad_norm_
from thrust_app.nets.policies import QNetwork
from thrust_app.speed.numba_kernels import OPENBLAS_COLUMNS, backward, clip_grad_norm, forward, matmul
from thrust_app.speed.numba_nets import layer_arrays, unsupported_reason


@pytest.mark.parametrize("last_activation", [False, True])
@pytest.mark.parametrize("input_grad", [False, True])
def test_forward_and_backward_equal_autograd(last_activation, input_grad):
    torch.manual_seed(0)
    layers = torch.nn.Sequential(torch.nn.Linear(6, 32), torch.nn.Linear(32, 16), torch.nn.Linear(16, 3))
    for layer in layers:
        for p in layer.parameters():
            p.grad = torch.full_like(p, float("nan"))  # the backward must write every gradient, not add to them
    x, grad_out = torch.randn(40, 6, requires_grad=True), torch.randn(30, 3)
    out = layers[2](torch.relu(layers[1](torch.relu(layers[0](x)))))
    out = torch.relu(out) if last_activation else out
    # the loss sees the first 30 rows only (as DQN's does of its [s; s'] forward)
    want = torch.autograd.grad(out[:30], [x, *layers.parameters()], grad_out)
    weights, biases, weight_grads, bias_grads = layer_arrays(layers)
    outputs = forward(weights, biases, x.detach().numpy(), last_activation)
    np.testing.assert_allclose(outputs[-1], out.detach().numpy(), rtol=1e-5, atol=1e-6)
    grad = grad_out.numpy().copy()
    grad_input = backward(weights, outputs, 30, grad, weight_grads, bias_grads, last_activation, True, input_grad)
    got = [p.grad for p in layers.parameters()]
    for got_grad, want_grad in zip(got, want[1:], strict=True):
        torch.testing.assert_close(got_grad, want_grad)
    if input_grad:
        torch.testing.assert_close(torch.from_numpy(grad_input), want[0][:30])


@pytest.mark.parametrize("columns", [1, OPENBLAS_COLUMNS, 40])  # OpenBLAS's products, and sgemm's
@pytest.mark.parametrize("left_transposed", [False, True])
@pytest.mark.parametrize("right_transposed", [False, True])
@pytest.mark.parametrize("rows", [1, 30])
def test_matmul_equals_numpys_product_in_every_layout(columns, left_transposed, right_transposed, rows):
    """Row- or column-major operands (a weight's transpose, a gradient's), one-row and one-column ones
    (whose strides say nothing about their layout) and a row slice of a taller matrix."""
    rng = np.random.default_rng(0)
    left = rng.standard_normal((24, rows) if left_transposed else (rows + 5, 24), dtype=np.float32)
    left = left.T if left_transposed else left[:rows]
    right = rng.standard_normal((columns, 24) if right_transposed else (24, columns), dtype=np.float32)
    right = right.T if right_transposed else right
    out = np.full((rows, columns), np.nan, np.float32)
    matmul(left, right, out)
    np.testing.assert_allclose(out, left.astype(np.float64) @ right.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_the_clip_equals_flat_params_clip():
    torch.manual_seed(0)
    for max_norm in (0.5, 1e3):  # one scales, one leaves the gradient as it is
        grad = torch.randn(1000) * 0.1
        want = grad.clone()
        flat = torch.zeros(1000)
        flat.grad = want
        clip_grad_norm_(flat, max_norm)
        clip_grad_norm(grad.numpy(), max_norm)
        torch.testing.assert_close(grad, want)


def test_the_views_follow_a_net_whose_parameters_were_gathered_again():
    net = QNetwork((4,), 2, (16,))
    first = layer_arrays(net)
    assert layer_arrays(net) is first  # kept while the parameters stay where they are
    net.float()  # _apply: every parameter and gradient is a view into new buffers
    weights = layer_arrays(net)[0]
    assert np.shares_memory(weights[0], net.flat.detach().numpy())
    assert not np.shares_memory(first[0][0], weights[0])


def test_the_kernels_serve_float32_nets_on_the_cpu_only():
    assert unsupported_reason(torch.device("cpu"), torch.float32) is None
    assert "numba compiles for the CPU" in unsupported_reason(torch.device("cuda"), torch.float32)
    assert "float32" in unsupported_reason(torch.device("cpu"), torch.float64)
