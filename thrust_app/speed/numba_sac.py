"""The SAC update compiled by numba: the CPU speed switch of SAC (`update="numba"`).

The written-out update of sac_backward.py, its steps compiled (numba_kernels.py) in three calls around
torch's fused Adam steps (which stay the optimizers' own): the actor's reparameterised sample at s; the
temperature's step; the critics' squared TD errors against y = r + gamma (min Q'(s', a') - alpha log
pi(a' | s')) and their chain rule; the critics' step; the actor's loss through the just-updated critics
to the action and its chain rule; the actor's step. The noise is torch's, drawn in sac_backward's order, so
both paths take the same samples. tests/speed/test_sac_backward.py holds both written-out paths equal to the
reference, `SAC.optimize`.
"""

from __future__ import annotations

import torch

from ..algos.replay import Batch
from ..algos.sac import SAC
from ..nets.policies import LOG_STD_MAX, LOG_STD_MIN
from .mlp_backward import adam_step
from .numba_kernels import actor_gradient, actor_sample, critic_gradient
from .numba_nets import layer_arrays

LOG_STD_LIMITS = (LOG_STD_MIN, LOG_STD_MAX)


def compiled_sac_update(sac: SAC, batch: Batch) -> dict[str, torch.Tensor]:
    """One SAC gradient step on `batch` up to the target update, as `SAC.optimize` does it; returns
    the same logs."""
    config, actor = sac.config, sac.actor
    obs, actions, rewards, next_obs, terminated = (tensor.numpy() for tensor in batch)
    n = obs.shape[0]
    obs, next_obs, actions = obs.reshape(n, -1), next_obs.reshape(n, -1), actions.reshape(n, -1)
    encoder, mu_head, log_std_head = (layer_arrays(part) for part in (actor.encoder, actor.mu, actor.log_std))
    # the encoder's (weights, biases) per layer; each head's (weight, bias), and alike for the gradients
    actor_params = (encoder[:2], (mu_head[0][0], mu_head[1][0]), (log_std_head[0][0], log_std_head[1][0]))
    critics = tuple(layer_arrays(q_net) for q_net in sac.critic.qs)
    bounds = (actor.low.numpy().reshape(-1), actor.high.numpy().reshape(-1))
    unit_scaling = (sac.critic.action_centre.numpy(), sac.critic.action_half.numpy())  # a_unit = (a - c) / h

    noise = torch.randn(actions.shape).numpy()  # sac_backward's first draw (the sample at s)
    sample = actor_sample(*actor_params, obs, noise, bounds, LOG_STD_LIMITS)
    alpha = sac.log_alpha.detach().exp()  # before the temperature's own step, as the reference
    if config.auto_alpha:
        # alpha loss -mean(log_alpha (log pi + target entropy)): d / d log_alpha = -mean(log pi + target entropy)
        sac.log_alpha.grad = torch.tensor([-(float(sample[5].mean()) + sac.target_entropy)])
        adam_step(sac.alpha_opt)

    next_noise = torch.randn(actions.shape).numpy()  # the second draw (the sample at s')
    target_critics = tuple(layer_arrays(q_net)[:2] for q_net in sac.critic_target.qs)
    critic_loss = critic_gradient(
        critics, target_critics, actor_params, obs, actions, rewards, next_obs, terminated, next_noise, bounds,
        unit_scaling, LOG_STD_LIMITS, float(alpha), config.gamma,
    )  # fmt: skip
    adam_step(sac.critic_opt)

    actor_grads = (encoder[2:], (mu_head[2][0], mu_head[3][0]), (log_std_head[2][0], log_std_head[3][0]))
    actor_loss = actor_gradient(
        critics, actor_params, actor_grads, obs, sample, noise, bounds, unit_scaling, LOG_STD_LIMITS, float(alpha)
    )
    adam_step(sac.actor_opt)
    return {"critic_loss": torch.tensor(critic_loss), "actor_loss": torch.tensor(actor_loss), "alpha": alpha[0]}
