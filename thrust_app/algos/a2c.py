"""A2C (Mnih et al., 2016, synchronous form): one gradient step per short rollout of many envs.

Defaults follow Stable-Baselines3 (RMSprop, n_steps 5, no advantage normalisation).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch

from ..config import param
from .on_policy import OnPolicyAlgorithm, OnPolicyConfig
from .rollout import Rollout

LOG_NAMES = ("policy_loss", "value_loss", "entropy")


@dataclass
class A2CConfig(OnPolicyConfig):
    learning_rate: float = param(7e-4, "RMSprop step size at the start of training", gt=0)
    n_steps: int = param(5, "steps per env in each rollout", ge=1)
    gae_lambda: float = param(1.0, "GAE lambda (1.0 = plain n-step returns)", ge=0, le=1)
    normalize_advantage: bool = param(False, "normalise advantages over each rollout")
    rms_prop_eps: float = param(1e-5, "RMSprop epsilon", gt=0)


def a2c_loss(
    log_prob: torch.Tensor,
    entropy: torch.Tensor,
    value: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    config: A2CConfig,
) -> tuple[torch.Tensor, torch.Tensor]:
    """L = -mean(A log pi(a|s)) + vf_coef * mean((V - R)^2) - ent_coef * mean(H), over a whole rollout.

    Returns the loss and the values to log (policy, value, entropy)."""
    if config.normalize_advantage:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    policy_loss = -(advantages * log_prob).mean()
    value_loss = (value - returns).square().mean()
    entropy_mean = entropy.mean()
    loss = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy_mean
    return loss, torch.stack([policy_loss, value_loss, entropy_mean])


class A2C(OnPolicyAlgorithm):
    name = "a2c"
    Config = A2CConfig
    config: A2CConfig

    def make_optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.RMSprop(
            [self.net.flat], lr=self.config.learning_rate, alpha=0.99, eps=self.config.rms_prop_eps, foreach=True
        )

    def update(self, rollout: Rollout, advantages: torch.Tensor, returns: torch.Tensor) -> dict[str, float]:
        """One policy-gradient step on the whole rollout; returns the losses."""
        loss_fn = partial(a2c_loss, advantages=advantages.flatten(), returns=returns.flatten(), config=self.config)
        masks = None if rollout.masks is None else rollout.masks.flatten(0, 1)
        logs = self.optimize(rollout.obs.flatten(0, 1), rollout.actions.flatten(0, 1), loss_fn, masks)
        return dict(zip(LOG_NAMES, logs.tolist(), strict=True))
