"""The written-out backward pass of ActorCritic: the speed switch of A2C and PPO (`backward="fast"`).

The reference is autograd: `loss, logs = loss_fn(*net.evaluate_actions(obs, actions)); loss.backward()`.
Here the same loss function (the algorithm file's own, unchanged) is differentiated in two parts:

1. autograd on the loss expression alone, from per-sample leaves `log_prob`, `entropy`, `value`, gives
   dL/d log_prob, dL/d entropy and dL/d value: a few element-wise ops on vectors of the batch size;
2. the chain rule from there to the parameters is written out below: the distribution, the two heads,
   and the TwinTowers layers, each writing its gradient into the net's flat gradient buffer with `out=`.

Part 2 is where autograd's bookkeeping costs more than the math of a net this small (about a third of
autograd's op launches). It covers vector observations (TwinTowers); `unsupported_reason` says why
anything else falls back to autograd. tests/test_fast_actor_critic.py holds both paths equal on PPO's
and A2C's losses.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .nets import ActorCritic, TwinTowers

#: An update's loss as a function of the per-sample (log_prob, entropy, value) -> (loss, logs to report).
ActorCriticLoss = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def unsupported_reason(net: ActorCritic) -> str | None:
    """Why the fast path cannot compute this net's gradients, or None when it can."""
    if net.uses_cnn:
        return "image observations go through a CNN, which the written-out backward does not cover"
    return None


def _activate_(z: torch.Tensor, activation: str) -> torch.Tensor:
    """The activation applied in place. On a large CPU tensor tanh is computed as 2 * sigmoid(2z) - 1:
    the same function to within 2e-7, and about twice as fast as torch.tanh on an AVX2 CPU, where tanh is
    the costliest op of a small tanh MLP's update. Small tensors and GPU tensors get the one-op tanh."""
    if activation == "relu":
        return z.relu_()
    if z.numel() < 4096 or z.device.type != "cpu":
        return z.tanh_()
    return z.mul_(2.0).sigmoid_().mul_(2.0).sub_(1.0)


def _activation_backward(grad: torch.Tensor, out: torch.Tensor, activation: str) -> torch.Tensor:
    """dL/dz from dL/d out and out = f(z): tanh' = 1 - out^2, relu' = [out > 0]."""
    if activation == "tanh":
        return torch.ops.aten.tanh_backward(grad, out)
    return torch.ops.aten.threshold_backward(grad, out, 0.0)


@torch.no_grad()
def towers_forward(towers: TwinTowers, obs: torch.Tensor) -> list[torch.Tensor]:
    """Every layer's output, kept for the backward pass: [input (B, in), input layer (B, 2h), (2, B, h), ...]."""
    x, layer = obs.flatten(1), towers.input_layer
    outputs = [x, _activate_(torch.addmm(layer.bias, x, layer.weight.T), towers.activation)]
    x = towers.tower_major(outputs[-1])
    for weight, bias in zip(towers.weights, towers.biases, strict=True):
        x = _activate_(torch.baddbmm(bias, x, weight), towers.activation)
        outputs.append(x)
    return outputs


def tower_features(towers: TwinTowers, outputs: list[torch.Tensor]) -> torch.Tensor:
    """The (2, B, h) policy and value features from `towers_forward`'s outputs."""
    return towers.tower_major(outputs[1]) if len(outputs) == 2 else outputs[-1]


@torch.no_grad()
def towers_backward(towers: TwinTowers, outputs: list[torch.Tensor], grad: torch.Tensor) -> None:
    """Write every tower parameter's `.grad` from `towers_forward`'s outputs and dL/d features (2, B, h).

    Per layer y = f(x W + b): dL/dW = x^T dL/dz, dL/db = sum_batch dL/dz, dL/dx = dL/dz W^T."""
    activation = towers.activation
    for index in reversed(range(len(towers.weights))):
        weight, bias = towers.weights[index], towers.biases[index]
        grad = _activation_backward(grad, outputs[index + 2], activation)
        layer_in = towers.tower_major(outputs[1]) if index == 0 else outputs[index + 1]
        torch.bmm(layer_in.transpose(1, 2), grad, out=weight.grad)
        torch.sum(grad, 1, keepdim=True, out=bias.grad)
        grad = torch.bmm(grad, weight.transpose(1, 2))
    grad = grad.transpose(0, 1).reshape(outputs[1].shape)  # back to the input layer's side-by-side layout
    grad = _activation_backward(grad, outputs[1], activation)
    torch.mm(grad.T, outputs[0], out=towers.input_layer.weight.grad)
    torch.sum(grad, 0, out=towers.input_layer.bias.grad)


def _distribution_stats(
    net: ActorCritic, head_out: torch.Tensor, actions: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, ...]]:
    """Per sample log pi(a|s) and entropy from the policy head's output, plus what the backward needs:
    log-probabilities and probabilities of every action (categorical), or the noise (Gaussian)."""
    if net.discrete:
        log_p = head_out.log_softmax(-1)
        p = log_p.exp()
        entropy = -(p * log_p).sum(-1)
        return log_p.gather(-1, actions.unsqueeze(-1)).squeeze(-1), entropy, (log_p, p)
    log_std = net.log_std
    noise = (actions - head_out) * (-log_std).exp()  # eps = (a - mu) / sigma
    log_prob = (-0.5 * noise.square() - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
    entropy = (0.5 + 0.5 * math.log(2 * math.pi) + log_std).sum().expand(head_out.shape[0])
    return log_prob, entropy, (noise,)


def _distribution_backward(
    net: ActorCritic,
    saved: tuple[torch.Tensor, ...],
    actions: torch.Tensor,
    entropy: torch.Tensor,
    g_log_prob: torch.Tensor,
    g_entropy: torch.Tensor,
) -> torch.Tensor:
    """dL/d head output from dL/d log_prob and dL/d entropy (Gaussian: also writes `log_std.grad`).

    Categorical over logits z: d log p_a / dz = onehot(a) - p, dH/dz = -p (log p + H).
    Gaussian: d log p / d mu = eps / sigma, d log p / d log_sigma = eps^2 - 1, dH / d log_sigma = 1."""
    g_log_prob, g_entropy = g_log_prob.unsqueeze(-1), g_entropy.unsqueeze(-1)
    if net.discrete:
        log_p, p = saved
        grad = -p * (g_log_prob + g_entropy * (log_p + entropy.unsqueeze(-1)))
        return grad.scatter_add_(-1, actions.unsqueeze(-1), g_log_prob)
    (noise,) = saved
    torch.sum(g_log_prob * (noise.square() - 1) + g_entropy, 0, out=net.log_std.grad)
    return g_log_prob * noise * (-net.log_std).exp()


def fast_backward(net: ActorCritic, obs: torch.Tensor, actions: torch.Tensor, loss_fn: ActorCriticLoss) -> torch.Tensor:
    """Set every parameter's `.grad` to the gradient of `loss_fn`'s loss at (obs, actions), as
    `loss.backward()` through `net.evaluate_actions` would; returns `loss_fn`'s logs."""
    towers, pi_head, vf_head = net.towers, net.pi_head, net.vf_head
    outputs = towers_forward(towers, obs)
    pi_features, vf_features = tower_features(towers, outputs).unbind(0)
    with torch.no_grad():
        head_out = torch.addmm(pi_head.bias, pi_features, pi_head.weight.T)
        value = torch.addmm(vf_head.bias, vf_features, vf_head.weight.T).squeeze(-1)
        log_prob, entropy, saved = _distribution_stats(net, head_out, actions)
    leaves = [t.requires_grad_() for t in (log_prob, entropy, value)]
    with torch.enable_grad():
        loss, logs = loss_fn(*leaves)
        g_log_prob, g_entropy, g_value = torch.autograd.grad(loss, leaves, allow_unused=True, materialize_grads=True)
    with torch.no_grad():
        g_head = _distribution_backward(net, saved, actions, entropy, g_log_prob, g_entropy)
        g_value = g_value.unsqueeze(-1)
        torch.mm(g_head.T, pi_features, out=pi_head.weight.grad)
        torch.sum(g_head, 0, out=pi_head.bias.grad)
        torch.mm(g_value.T, vf_features, out=vf_head.weight.grad)
        torch.sum(g_value, 0, out=vf_head.bias.grad)
        towers_backward(towers, outputs, torch.stack([g_head @ pi_head.weight, g_value @ vf_head.weight]))
    return logs
