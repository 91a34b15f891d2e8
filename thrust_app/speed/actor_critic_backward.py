"""The written-out backward pass of ActorCritic: the speed switch of A2C and PPO (`update="handwritten"`).

The reference is `OnPolicyAlgorithm.backward` (algos/on_policy.py), autograd:
`loss, logs = loss_fn(*net.evaluate_actions(obs, actions)); loss.backward()`.
Here the gradient of the same loss is computed in two parts:

1. dL/d log_prob, dL/d entropy and dL/d value per sample. For PPO's and A2C's losses these are written
   out below (`WRITTEN_OUT`, a few element-wise ops); any other loss function (a new term, a new
   algorithm) gets them from autograd on its own expression, from per-sample leaves: correct at once,
   and still skipping autograd through the network.
2. The chain rule from there to the parameters, written out: the distribution, the two heads and the
   TwinTowers layers, each writing its gradient into the net's flat gradient buffer with `out=`.

On a net this small autograd's bookkeeping costs more than the math; this path launches about a third
of the ops. It covers vector observations (TwinTowers); `unsupported_reason` says why anything else
falls back to autograd. tests/speed/test_actor_critic_backward.py holds it equal to the reference on the
algorithm files' own losses, so a change to `ppo_loss` that the written-out gradient misses fails there.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import Any

import torch

from ..algos.a2c import a2c_loss
from ..algos.on_policy import ActorCriticLoss
from ..algos.ppo import ppo_loss
from ..nets.policies import ActorCritic, TwinTowers
from .mlp_backward import activate_, activation_backward, matmul


def unsupported_reason(net: ActorCritic) -> str | None:
    """Why the fast path cannot compute this net's gradients, or None when it can."""
    if net.uses_cnn:
        return "image observations go through a CNN, which the written-out backward does not cover"
    if net.nvec:
        return "MultiDiscrete actions have one categorical per component, which the written-out backward does not cover"
    return towers_reason(net)


def towers_reason(net: ActorCritic) -> str | None:
    """Why the fast forms cannot take this net's MLPs (they need TwinTowers: policy and value of one shape)."""
    if not isinstance(net.towers, TwinTowers):
        return "policy and value MLPs of different sizes (vf_hidden) are two plain MLPs, which the fast forms do not cover"
    return None


@torch.no_grad()
def towers_forward(towers: TwinTowers, obs: torch.Tensor) -> list[torch.Tensor]:
    """Every layer's output, kept for the backward pass: [input (B, in), input layer (B, 2h), (2, B, h), ...]."""
    x, layer = obs.flatten(1), towers.input_layer
    outputs = [x, activate_(torch.addmm(layer.bias, x, layer.weight.T), towers.activation)]
    x = towers.tower_major(outputs[-1])
    for weight, bias in zip(towers.weights, towers.biases, strict=True):
        x = activate_(torch.baddbmm(bias, x, weight), towers.activation)
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
        grad = activation_backward(grad, outputs[index + 2], activation)
        layer_in = towers.tower_major(outputs[1]) if index == 0 else outputs[index + 1]
        tower_weight_gradient(layer_in, grad, weight.grad)
        torch.sum(grad, 1, keepdim=True, out=bias.grad)
        grad = torch.bmm(grad, weight.transpose(1, 2))
    grad = grad.transpose(0, 1).reshape(outputs[1].shape)  # back to the input layer's side-by-side layout
    grad = activation_backward(grad, outputs[1], activation)
    matmul(grad.T, outputs[0], out=towers.input_layer.weight.grad)
    torch.sum(grad, 0, out=towers.input_layer.bias.grad)


#: On CUDA, rows per part when a tower layer's weight gradient is split along the batch (`batch_parts`).
ROWS_PER_PART = 512


def batch_parts(batch: int, device: torch.device) -> int:
    """Into how many parts `tower_weight_gradient` splits a batch: 1 on the CPU and for small batches.

    cuBLAS computes a batched x^T g with one output tile per tower and walks the whole batch in it: at
    32,768 rows two tiles occupy two of a GPU's ~100 multiprocessors for a millisecond. Split into parts of
    ROWS_PER_PART rows, each part's product is a tile of its own, and a sum over the parts follows."""
    if device.type != "cuda" or batch < 4 * ROWS_PER_PART or batch % ROWS_PER_PART:
        return 1
    return batch // ROWS_PER_PART


def tower_weight_gradient(layer_in: torch.Tensor, grad: torch.Tensor, out: torch.Tensor, parts: int | None = None) -> None:
    """dL/dW = sum over the batch of x^T dL/dz for both towers: (2, B, in), (2, B, out) -> `out` (2, in, out).

    In `parts` (`batch_parts` when not given) along the batch: sum_p x_p^T g_p, the same sum regrouped."""
    towers, batch, width = layer_in.shape
    parts = batch_parts(batch, layer_in.device) if parts is None else parts
    if parts == 1:
        torch.bmm(layer_in.transpose(1, 2), grad, out=out)
        return
    rows = batch // parts
    x = layer_in.reshape(towers * parts, rows, width)
    g = grad.reshape(towers * parts, rows, grad.shape[-1])
    torch.sum(torch.bmm(x.transpose(1, 2), g).view(towers, parts, width, -1), 1, out=out)


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
    g_log_prob = g_log_prob.unsqueeze(-1)
    if isinstance(g_entropy, torch.Tensor):
        g_entropy = g_entropy.unsqueeze(-1)
    if net.discrete:
        log_p, p = saved
        grad = g_log_prob
        if isinstance(g_entropy, torch.Tensor) or g_entropy:  # ent_coef 0: no entropy term to carry
            grad = grad + g_entropy * (log_p + entropy.unsqueeze(-1))
        return (-p * grad).scatter_add_(-1, actions.unsqueeze(-1), g_log_prob)
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
        logs, (g_log_prob, g_entropy, g_value) = loss_gradient(loss_fn, log_prob, entropy, value)
        g_head = _distribution_backward(net, saved, actions, entropy, g_log_prob, g_entropy)
        g_value = g_value.unsqueeze(-1)
        torch.mm(g_head.T, pi_features, out=pi_head.weight.grad)
        torch.sum(g_head, 0, out=pi_head.bias.grad)
        torch.mm(g_value.T, vf_features, out=vf_head.weight.grad)
        torch.sum(g_value, 0, out=vf_head.bias.grad)
        towers_backward(towers, outputs, torch.stack([g_head @ pi_head.weight, g_value @ vf_head.weight]))
    return logs


# -- dL/d (log_prob, entropy, value) -----------------------------------------------------------------
#: What a loss gradient returns: the loss's logs, and dL/d log_prob, dL/d entropy (a tensor, or one
#: float for every sample), dL/d value.
LossGradient = tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor | float, torch.Tensor]]


def loss_gradient(
    loss_fn: ActorCriticLoss, log_prob: torch.Tensor, entropy: torch.Tensor, value: torch.Tensor
) -> LossGradient:
    """The loss's logs and gradient with respect to the per-sample leaves: written out for a loss in
    `WRITTEN_OUT` (given as `functools.partial(loss, ...)`), else autograd on the loss expression.

    The first time a written-out gradient serves a loss in a process, it is checked against autograd
    on that loss; if they disagree (the loss was edited, the written-out form was not), a warning
    says so and that loss keeps autograd on its expression from then on."""
    loss = loss_fn.func if isinstance(loss_fn, functools.partial) else None
    written_out = WRITTEN_OUT.get(loss)
    if written_out is None:
        return autograd_loss_gradient(loss_fn, log_prob, entropy, value)
    with torch.no_grad():
        result = written_out(log_prob, entropy, value, *loss_fn.args, **loss_fn.keywords)
    if loss not in _CHECKED:
        _CHECKED[loss] = _agrees(result, autograd_loss_gradient(loss_fn, log_prob, entropy, value), loss)
    return result if _CHECKED[loss] else autograd_loss_gradient(loss_fn, log_prob, entropy, value)


def autograd_loss_gradient(
    loss_fn: ActorCriticLoss, log_prob: torch.Tensor, entropy: torch.Tensor, value: torch.Tensor
) -> LossGradient:
    """The loss's logs and its gradient with respect to the per-sample leaves, by autograd on the loss alone."""
    leaves = [tensor.detach().requires_grad_() for tensor in (log_prob, entropy, value)]
    with torch.enable_grad():
        loss, logs = loss_fn(*leaves)
        grads = torch.autograd.grad(loss, leaves, allow_unused=True, materialize_grads=True)
    return logs.detach(), tuple(grads)


#: Losses whose written-out gradient was checked in this process, and whether it agreed.
_CHECKED: dict[Callable, bool] = {}


def _agrees(written: LossGradient, reference: LossGradient, loss: Callable) -> bool:
    """True when a written-out gradient equals autograd's; otherwise a warning naming the loss."""
    pairs = [(written[0], reference[0]), *zip(written[1], reference[1], strict=True)]
    worst = max(float((torch.as_tensor(got) - want).abs().max()) for got, want in pairs)
    scale = max(float(want.abs().max()) for _, want in pairs)
    if worst <= 1e-5 * max(1.0, scale):
        return True
    warnings.warn(
        f"thrust: the written-out gradient of {loss.__module__}.{loss.__qualname__} in "
        f"speed/actor_critic_backward.py differs from autograd on the loss "
        f"(max |diff| {worst:.2g}), so the loss changed; using autograd on the loss expression instead. "
        "Update the written-out gradient to get the full speed back.",
        stacklevel=4,
    )
    return False


def _ppo_loss_gradient(
    log_prob: torch.Tensor, entropy: torch.Tensor, value: torch.Tensor, batch: Any, clip_range: float, config: Any
) -> LossGradient:
    """`algos.ppo.ppo_loss`'s logs and gradient. With r = exp(log_prob - old_log_prob):
    d(-mean min(r A, clip(r) A)) / d log_prob = -r A / n where the unclipped term is the min, else 0;
    d(vf_coef * mean((V' - R)^2)) / dV = 2 vf_coef (V' - R) / n, times [|V - V_old| <= eps_vf] when
    V' = V_old + clip(V - V_old, -eps_vf, eps_vf); d(-ent_coef * mean H) / dH = -ent_coef / n."""
    n = log_prob.shape[0]
    advantages = batch.advantages
    if config.normalize_advantage and n > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    log_ratio = log_prob - batch.old_log_prob
    ratio = log_ratio.exp()
    surrogate = advantages * ratio
    clipped = advantages * ratio.clamp(1 - clip_range, 1 + clip_range)
    unclipped = surrogate <= clipped  # only where the min picks the unclipped term does the ratio get a gradient
    g_value_scale = 2.0 * config.vf_coef / n
    if config.clip_range_vf:
        change = value - batch.old_value
        value_error = batch.old_value + change.clamp(-config.clip_range_vf, config.clip_range_vf) - batch.returns
        g_value_scale = g_value_scale * (change.abs() <= config.clip_range_vf)
    else:
        value_error = value - batch.returns
    logs = torch.stack(
        [
            -torch.minimum(surrogate, clipped),
            value_error.square(),
            entropy,
            (ratio - 1) - log_ratio,
            ((ratio - 1).abs() > clip_range).float(),
        ]
    ).mean(1)  # one mean
    return logs, (surrogate * unclipped * (-1.0 / n), -config.ent_coef / n, value_error * g_value_scale)


def _a2c_loss_gradient(
    log_prob: torch.Tensor,
    entropy: torch.Tensor,
    value: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    config: Any,
) -> LossGradient:
    """`algos.a2c.a2c_loss`'s logs and gradient: d(-mean(A log_prob))/d log_prob = -A / n,
    d(vf_coef * mean((V - R)^2))/dV = 2 vf_coef (V - R) / n, d(-ent_coef * mean H)/dH = -ent_coef / n."""
    n = log_prob.shape[0]
    if config.normalize_advantage:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    value_error = value - returns
    logs = torch.stack([-(advantages * log_prob), value_error.square(), entropy]).mean(1)
    return logs, (advantages * (-1.0 / n), -config.ent_coef / n, value_error * (2.0 * config.vf_coef / n))


#: Written-out gradients of the algorithm files' losses, by loss function.
WRITTEN_OUT: dict[Callable, Callable[..., LossGradient]] = {ppo_loss: _ppo_loss_gradient, a2c_loss: _a2c_loss_gradient}
