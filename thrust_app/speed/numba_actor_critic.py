"""A2C's and PPO's gradient compiled by numba: the CPU speed switch of the on-policy update (`update="numba"`).

The written-out backward of actor_critic_backward.py (the towers' forward, the distribution, the loss's
gradient per sample, the chain rule to every parameter) in one compiled call (`actor_critic_gradient`,
numba_kernels.py); the gradient clip and Adam's (PPO) or RMSprop's (A2C) step stay torch's. It computes
the gradients of the algorithm files' own losses (`ppo_loss`, `a2c_loss`); any other loss takes the
written-out torch backward. tests/speed/test_numba_actor_critic.py holds it equal to the reference
(autograd through `ActorCritic.evaluate_actions`).
"""

from __future__ import annotations

import functools
import weakref

import numpy as np
import torch

from ..algos.a2c import a2c_loss
from ..algos.on_policy import ActorCriticLoss
from ..algos.ppo import ppo_loss
from ..nets.policies import ActorCritic
from .actor_critic_backward import fast_backward
from .numba_kernels import A2C_LOSS, PPO_LOSS, actor_critic_gradient

#: The kernel's loss flag, by the algorithm file's loss function.
LOSSES = {ppo_loss: PPO_LOSS, a2c_loss: A2C_LOSS}


def net_arrays(net: ActorCritic, grads: bool) -> tuple:
    """numpy views of the net's parameters (or of their gradients) as `actor_critic_gradient` reads them:
    (towers (input weight, input bias, (weights), (biases)), policy head, value head, log-std), the input
    layer's two halves tower-major (2, h, in). Tuples of arrays: numba types them from a call's arguments in
    about a microsecond (a typed List inside a tuple costs about 100)."""
    view = (lambda p: p.grad.detach().numpy()) if grads else (lambda p: p.detach().numpy())
    towers = net.towers
    blocks = [tuple(view(p) for p in params) for params in (towers.weights, towers.biases)]
    log_std = view(net.log_std) if not net.discrete else np.empty(0, np.float32)
    heads = tuple((view(head.weight), view(head.bias)) for head in (net.pi_head, net.vf_head))
    first = view(towers.input_layer.weight).reshape(2, towers.hidden[0], -1), view(towers.input_layer.bias).reshape(2, -1)
    return (*first, *blocks), *heads, log_std


class NetArrays:
    """A net's parameter and gradient views, made again when its parameters were gathered again (moved, copied)."""

    def __init__(self, net: ActorCritic) -> None:
        self.net, self.grad, self.arrays = net, None, ((), ())

    def current(self) -> tuple[tuple, tuple]:
        if self.net.flat.grad is not self.grad:
            self.grad = self.net.flat.grad
            self.arrays = net_arrays(self.net, grads=False), net_arrays(self.net, grads=True)
        return self.arrays


_NETS: weakref.WeakKeyDictionary[ActorCritic, NetArrays] = weakref.WeakKeyDictionary()


def compiled_backward(net: ActorCritic, obs: torch.Tensor, actions: torch.Tensor, loss_fn: ActorCriticLoss) -> torch.Tensor:
    """`fast_backward` in one compiled call for `ppo_loss` and `a2c_loss` (given as `functools.partial`, as the
    algorithms pass them); returns the loss's logs."""
    loss = LOSSES.get(loss_fn.func) if isinstance(loss_fn, functools.partial) else None
    if loss is None:
        return fast_backward(net, obs, actions, loss_fn)
    keywords = loss_fn.keywords
    config = keywords["config"]
    if loss == PPO_LOSS:
        batch = keywords["batch"]
        samples = (batch.old_log_prob, batch.old_value, batch.advantages, batch.returns)
        clip = (keywords["clip_range"], config.clip_range_vf)
    else:
        # A2C's loss has no old log-probs or values: the advantages stand in for them (same type, never read)
        samples = (keywords["advantages"],) * 2 + (keywords["advantages"], keywords["returns"])
        clip = (0.0, 0.0)
    settings = np.array([*clip, config.vf_coef, config.ent_coef, float(config.normalize_advantage)])
    arrays = _NETS.get(net) or _NETS.setdefault(net, NetArrays(net))
    params, grads = arrays.current()
    n = obs.shape[0]
    logs = actor_critic_gradient(
        params, grads, obs.reshape(n, -1).numpy(), actions.reshape(n, -1).numpy(), net.discrete,
        net.activation == "tanh", loss, tuple(sample.numpy() for sample in samples), settings,
    )  # fmt: skip
    return torch.from_numpy(logs.astype(np.float32))
