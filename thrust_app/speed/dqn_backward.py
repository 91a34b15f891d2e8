"""The written-out DQN update: the speed switch of DQN (`update="handwritten"`).

The reference is `DQN.update` (algos/dqn.py): `dqn_loss(...)`, `loss.backward()`, the clip, Adam's step.
Here the same gradient is computed without autograd: the target y = r + gamma (1 - terminated) Q'(s', a')
under no_grad, with the online net's forward on s and s' as one batch (double DQN picks a' with the online
net), dL/dQ(s, a) of the TD loss written out, and the chain rule through the Q-net's layers (mlp_backward.py). On the zoo's
64-sample batches of a 256x256 net autograd's bookkeeping costs as much as the matmuls; this path
launches two thirds of its ops and takes three quarters of its time (benches/update_floor.py).
tests/speed/test_dqn_backward.py holds it equal to the reference.
"""

from __future__ import annotations

import torch

from ..algos.dqn import DQN
from ..algos.replay import Batch
from ..nets.flat_params import clip_grad_norm_
from ..nets.policies import QNetwork
from .mlp_backward import adam_step, mlp_backward, mlp_forward


def unsupported_reason(q_net: QNetwork) -> str | None:
    """Why the written-out update cannot serve this Q-net, or None when it can."""
    if any(isinstance(layer, torch.nn.Conv2d) for layer in q_net.modules()):
        return "image observations go through a CNN, which the written-out backward does not cover"
    return None


@torch.no_grad()
def td_loss_gradient(q: torch.Tensor, target: torch.Tensor, loss: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The TD loss over n samples and its gradient with respect to Q(s, a), with d = Q(s, a) - y:
    huber: mean(d^2 / 2 if |d| < 1 else |d| - 1/2), dL/dQ = clamp(d, -1, 1) / n;
    mse: mean(d^2), dL/dQ = 2 d / n."""
    error = q - target
    n = q.shape[0]
    if loss == "mse":
        return error.square().mean(), error * (2.0 / n)
    clipped = error.clamp(-1.0, 1.0)
    # |d| < 1: d^2 / 2; else |d| - 1/2 = clipped * (d - clipped / 2) in both cases
    return (clipped * (error - 0.5 * clipped)).mean(), clipped.div_(n)


@torch.no_grad()
def fast_dqn_backward(
    q_net: QNetwork, target_net: QNetwork, batch: Batch, gamma: float, double: bool, loss: str
) -> torch.Tensor:
    """Set q_net's gradients to those of `dqn_loss` at `batch`, as its `loss.backward()` would; returns the loss."""
    obs, actions, rewards, next_obs, terminated = batch
    n = obs.shape[0]
    # the online net sees s (for the loss) and s' (double DQN's choice of a') in one forward
    outputs = mlp_forward(q_net, torch.cat([obs, next_obs]).flatten(1) if double else obs.flatten(1))
    next_q = mlp_forward(target_net, next_obs.flatten(1))[-1]
    if double:
        next_q = next_q.gather(1, outputs[-1][n:].argmax(1, keepdim=True)).squeeze(1)
    else:
        next_q = next_q.max(1).values
    target = torch.addcmul(rewards, 1.0 - terminated, next_q, value=gamma)  # y = r + gamma (1 - term) Q'(s', a')
    q_sa = outputs[-1][:n].gather(1, actions.unsqueeze(1)).squeeze(1)
    loss_value, grad_q = td_loss_gradient(q_sa, target, loss)
    # dL/d Q(s, .) is dL/dQ(s, a) in each row's action column, zero elsewhere
    grad_out = torch.zeros_like(outputs[-1][:n]).scatter_(1, actions.unsqueeze(1), grad_q.unsqueeze(1))
    mlp_backward(q_net, [output[:n] for output in outputs], grad_out)
    return loss_value


def fast_dqn_update(dqn: DQN, batch: Batch) -> dict[str, torch.Tensor]:
    """`DQN.update` with the written-out gradient: the same clip, and the same fused Adam kernel without the
    generic step's bookkeeping."""
    config = dqn.config
    loss = fast_dqn_backward(dqn.q_net, dqn.target_net, batch, config.gamma, config.double_dqn, config.loss)
    clip_grad_norm_(dqn.q_net.flat, config.max_grad_norm)
    adam_step(dqn.optimizer)
    return {"q_loss": loss}
