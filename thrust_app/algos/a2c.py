"""A2C (Mnih et al., 2016, synchronous form): one gradient step per short rollout of many envs.

Defaults follow Stable-Baselines3 (RMSprop, n_steps 5, no advantage normalisation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from ..config import AlgoConfig, param
from ..nets import ActorCritic
from ..rollout import Rollout
from .on_policy import OnPolicyAlgorithm, optimize_actor_critic


@dataclass
class A2CConfig(AlgoConfig):
    n_envs: int = param(8, "environment copies stepped together")
    learning_rate: float = param(7e-4, "RMSprop step size at the start of training")
    n_steps: int = param(5, "steps per env in each rollout")
    gae_lambda: float = param(1.0, "GAE lambda (1.0 = plain n-step returns)")
    normalize_advantage: bool = param(False, "normalise advantages over each rollout")
    ent_coef: float = param(0.0, "entropy bonus weight")
    vf_coef: float = param(0.5, "value loss weight")
    max_grad_norm: float = param(0.5, "gradient norm clip")
    rms_prop_eps: float = param(1e-5, "RMSprop epsilon")
    activation: Literal["tanh", "relu"] = param("tanh", "MLP activation")
    log_std_init: float = param(0.0, "initial log std of the Gaussian policy (Box actions)")


def a2c_loss(log_prob: torch.Tensor, entropy: torch.Tensor, values: torch.Tensor, adv: torch.Tensor, ret: torch.Tensor,
             c: A2CConfig) -> tuple[torch.Tensor, tuple[torch.Tensor, float, torch.Tensor]]:
    """A2C's loss on a whole rollout (flattened), a pure function of the policy's per-sample log-probs,
    entropies and values: policy_loss + vf_coef * value_loss - ent_coef * entropy.

    Returns the losses to log (policy, value, entropy, as one tensor) and the loss's gradient with respect to
    log_prob, entropy and values, written out (tests hold it equal to autograd's)."""
    n = log_prob.shape[0]
    if c.normalize_advantage:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    value_error = values - ret
    losses = torch.stack([-(adv * log_prob), value_error.square(), entropy]).mean(1)
    return losses, (adv * (-1.0 / n), -c.ent_coef / n, value_error * (2.0 * c.vf_coef / n))


def a2c_update(net: ActorCritic, optimizer: torch.optim.Optimizer, rollout: Rollout, advantages: torch.Tensor,
               returns: torch.Tensor, c: A2CConfig) -> dict[str, float]:
    """One policy-gradient step on the whole rollout; returns the losses."""
    adv, ret = advantages.flatten(), returns.flatten()
    losses = optimize_actor_critic(
        net, optimizer, rollout.obs.flatten(0, 1), rollout.actions.flatten(0, 1), c.max_grad_norm,
        lambda log_prob, entropy, values: a2c_loss(log_prob, entropy, values, adv, ret, c))
    return dict(zip(("policy_loss", "value_loss", "entropy"), losses.tolist()))


class A2C(OnPolicyAlgorithm):
    name = "a2c"
    Config = A2CConfig

    def make_optimizer(self) -> torch.optim.Optimizer:
        c = self.config
        return torch.optim.RMSprop([self.net.flat], lr=c.learning_rate, alpha=0.99, eps=c.rms_prop_eps,
                                   foreach=True)

    def update(self, rollout, advantages, returns, progress_remaining) -> dict[str, float]:
        return a2c_update(self.net, self.optimizer, rollout, advantages, returns, self.config)
