"""PPO (Schulman et al., 2017): clipped policy updates over several epochs of minibatches.

Defaults follow Stable-Baselines3; per-env presets in `thrust_app/presets.py` follow rl-baselines3-zoo.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from ..config import AlgoConfig, param, schedule
from ..nets import ActorCritic
from ..rollout import Rollout
from .on_policy import OnPolicyAlgorithm, optimize_actor_critic


@dataclass
class PPOConfig(AlgoConfig):
    n_envs: int = param(8, "environment copies stepped together")
    n_steps: int = param(128, "steps per env in each rollout (a rollout is n_steps * n_envs transitions)")
    batch_size: int = param(256, "minibatch size")
    n_epochs: int = param(10, "passes over each rollout")
    gae_lambda: float = param(0.95, "GAE lambda: bias/variance trade-off of the advantages")
    clip_range: float = param(0.2, "how far the probability ratio may move from 1 in one update")
    clip_schedule: Literal["constant", "linear"] = param("constant", "clip range over training: constant, or linear to 0")
    normalize_advantage: bool = param(True, "normalise advantages within each minibatch")
    ent_coef: float = param(0.0, "entropy bonus weight")
    vf_coef: float = param(0.5, "value loss weight")
    max_grad_norm: float = param(0.5, "gradient norm clip")
    target_kl: float = param(0.0, "stop the epochs early when the approximate KL exceeds this (0 = never)")
    activation: Literal["tanh", "relu"] = param("tanh", "MLP activation")
    log_std_init: float = param(0.0, "initial log std of the Gaussian policy (Box actions)")


def ppo_loss(log_prob: torch.Tensor, entropy: torch.Tensor, values: torch.Tensor, old_log_probs: torch.Tensor,
             adv: torch.Tensor, ret: torch.Tensor, clip: float, c: PPOConfig
             ) -> tuple[torch.Tensor, tuple[torch.Tensor, float, torch.Tensor]]:
    """PPO's loss on one minibatch, a pure function of the policy's per-sample log-probs, entropies and
    values: policy_loss + vf_coef * value_loss - ent_coef * entropy.

    Returns the losses to log (policy, value, entropy, approx KL, clip fraction, as one tensor) and the loss's gradient
    with respect to log_prob, entropy and values, written out (tests hold it equal to autograd's)."""
    n = log_prob.shape[0]
    log_ratio = log_prob - old_log_probs
    if c.normalize_advantage and n > 1:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    ratio = log_ratio.exp()
    surrogate, clipped = adv * ratio, adv * ratio.clamp(1 - clip, 1 + clip)
    unclipped = surrogate <= clipped  # the min picks the unclipped term: only there does the ratio get a gradient
    value_error = values - ret
    losses = torch.stack([-torch.minimum(surrogate, clipped), value_error.square(), entropy,
                          (ratio - 1) - log_ratio, ((ratio - 1).abs() > clip).float()]).mean(1)  # one mean, not five
    grads = (surrogate * unclipped * (-1.0 / n), -c.ent_coef / n, value_error * (2.0 * c.vf_coef / n))
    return losses, grads


def ppo_update(net: ActorCritic, optimizer: torch.optim.Optimizer, rollout: Rollout, advantages: torch.Tensor,
               returns: torch.Tensor, clip: float, c: PPOConfig, generator: torch.Generator) -> dict[str, float]:
    """n_epochs of clipped-surrogate minibatch updates on one rollout; returns mean losses."""
    obs = rollout.obs.flatten(0, 1)
    actions = rollout.actions.flatten(0, 1)
    old_log_probs, adv, ret = rollout.log_probs.flatten(), advantages.flatten(), returns.flatten()
    n = obs.shape[0]
    logged: list[torch.Tensor] = []
    for _ in range(c.n_epochs):
        order = torch.randperm(n, generator=generator, device=obs.device)
        for start in range(0, n, c.batch_size):
            idx = order[start : start + c.batch_size]
            losses = optimize_actor_critic(
                net, optimizer, obs[idx], actions[idx], c.max_grad_norm,
                lambda log_prob, entropy, values: ppo_loss(log_prob, entropy, values, old_log_probs[idx], adv[idx],
                                                           ret[idx], clip, c))
            logged.append(losses)
        if c.target_kl and float(losses[3]) > 1.5 * c.target_kl:
            break
    names = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")
    return dict(zip(names, torch.stack(logged).mean(0).tolist()))  # one op, not one per update


class PPO(OnPolicyAlgorithm):
    name = "ppo"
    Config = PPOConfig

    def make_optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.Adam([self.net.flat], lr=self.config.learning_rate, eps=1e-5, fused=True)

    def update(self, rollout, advantages, returns, progress_remaining) -> dict[str, float]:
        clip = schedule(self.config.clip_range, self.config.clip_schedule, progress_remaining)
        return ppo_update(self.net, self.optimizer, rollout, advantages, returns, clip, self.config, self.generator)
