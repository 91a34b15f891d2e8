"""A2C (Mnih et al., 2016, synchronous form): one gradient step per short rollout of many envs.

Defaults follow Stable-Baselines3 (RMSprop, n_steps 5, no advantage normalisation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

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


def a2c_loss(net: ActorCritic, obs: torch.Tensor, actions: torch.Tensor, adv: torch.Tensor, ret: torch.Tensor,
             normalize_advantage: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Policy-gradient loss, value loss and entropy of a whole rollout (flattened); a pure function."""
    dist, values = net.dist_and_value(obs)
    if normalize_advantage:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    policy_loss = -(adv * net.log_prob(dist, actions)).mean()
    return policy_loss, nn.functional.mse_loss(values, ret), net.entropy(dist).mean()


def a2c_update(net: ActorCritic, optimizer: torch.optim.Optimizer, rollout: Rollout, advantages: torch.Tensor,
               returns: torch.Tensor, c: A2CConfig) -> dict[str, float]:
    """One policy-gradient step on the whole rollout; returns the losses."""
    losses = a2c_loss(net, rollout.obs.flatten(0, 1), rollout.actions.flatten(0, 1), advantages.flatten(),
                     returns.flatten(), c.normalize_advantage)
    optimize_actor_critic(net, optimizer, *losses, c.vf_coef, c.ent_coef, c.max_grad_norm)
    return dict(zip(("policy_loss", "value_loss", "entropy"), torch.stack(losses).detach().tolist()))


class A2C(OnPolicyAlgorithm):
    name = "a2c"
    Config = A2CConfig

    def make_optimizer(self) -> torch.optim.Optimizer:
        c = self.config
        return torch.optim.RMSprop(self.net.parameters(), lr=c.learning_rate, alpha=0.99, eps=c.rms_prop_eps)

    def update(self, rollout, advantages, returns, progress_remaining) -> dict[str, float]:
        return a2c_update(self.net, self.optimizer, rollout, advantages, returns, self.config)
