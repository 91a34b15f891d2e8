"""The DQN update compiled by numba: the CPU speed switch of DQN (`update="numba"`).

The same steps as the written-out update of dqn_backward.py, in one compiled call (the kernel `dqn_gradient`
of numba_kernels.py): the online net's forward on s and s' (double DQN picks a' with it), the target net's on
s', the TD loss and its gradient with respect to Q(s, a), the chain rule through the Q-net and the
gradient-norm clip; Adam's step stays torch's fused kernel (mlp_backward.adam_step). tests/speed/test_numba_dqn.py
holds it equal to the reference, `DQN.update` (autograd through `dqn_loss`).
"""

from __future__ import annotations

import torch

from ..algos.dqn import DQN
from ..algos.replay import Batch
from ..nets.policies import QNetwork
from .mlp_backward import adam_step
from .numba_kernels import dqn_gradient
from .numba_nets import layer_arrays


def compiled_dqn_gradient(
    q_net: QNetwork, target_net: QNetwork, batch: Batch, gamma: float, double: bool, loss: str, max_grad_norm: float
) -> float:
    """Set q_net's gradients to those of `dqn_loss` at `batch`, clipped to `max_grad_norm`, as the reference's
    `loss.backward()` and `clip_grad_norm_` would; returns the loss. The batch's tensors are read as numpy
    views (no copy, no autograd: nothing here records a graph)."""
    obs, actions, rewards, next_obs, terminated = (tensor.numpy() for tensor in batch)
    n = obs.shape[0]
    return dqn_gradient(
        obs.reshape(n, -1),
        actions,
        rewards,
        next_obs.reshape(n, -1),
        terminated,
        layer_arrays(q_net),
        layer_arrays(target_net)[:2],
        gamma,
        double,
        loss == "huber",
        q_net.flat.grad.numpy(),
        max_grad_norm,
    )


def compiled_dqn_update(dqn: DQN, batch: Batch) -> dict[str, torch.Tensor]:
    """`DQN.update` with gradient and clip in one compiled call, then torch's fused Adam kernel."""
    config = dqn.config
    loss = compiled_dqn_gradient(
        dqn.q_net, dqn.target_net, batch, config.gamma, config.double_dqn, config.loss, config.max_grad_norm
    )
    adam_step(dqn.optimizer)
    return {"q_loss": torch.tensor(loss)}
