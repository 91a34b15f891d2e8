"""The DQN update compiled by numba: the CPU speed switch of DQN (`backward="compiled"`).

The same steps as the written-out update of fast_dqn.py, in one compiled call (the kernel `dqn_gradient` of
compiled_kernels.py): the online net's forward on s and s' (double DQN picks a' with it), the target net's on
s', the TD loss and its gradient with respect to Q(s, a), the chain rule through the Q-net and the
gradient-norm clip; Adam's step stays torch's fused kernel (fast_mlp.adam_step). tests/test_compiled_dqn.py
holds it equal to the reference, autograd through `dqn_loss`.
"""

from __future__ import annotations

from ..algos.replay import Batch
from ..nets.policies import QNetwork
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
