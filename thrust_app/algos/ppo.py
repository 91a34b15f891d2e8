"""PPO (Schulman et al., 2017): clipped policy updates over several epochs of minibatches.

Defaults follow Stable-Baselines3; per-env presets in `thrust_app/training/presets.py` follow rl-baselines3-zoo.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal, NamedTuple

import torch

from ..config import CUDA_GRAPHS_HELP, param, schedule
from .on_policy import OnPolicyAlgorithm, OnPolicyConfig
from .rollout import Rollout

LOG_NAMES = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")


@dataclass
class PPOConfig(OnPolicyConfig):
    batch_size: int = param(256, "minibatch size", ge=1)
    n_epochs: int = param(10, "passes over each rollout", ge=1)
    clip_range: float = param(0.2, "how far the probability ratio may move from 1 in one update", gt=0)
    clip_schedule: Literal["constant", "linear"] = param("constant", "clip range over training: constant, or linear to 0")
    clip_range_vf: float = param(
        0.0,
        "clip the value prediction to old value +- this (SB3's clip_range_vf; depends on the reward scale; 0 = no clipping)",
        ge=0,
    )
    target_kl: float = param(0.0, "stop the epochs early when the approximate KL exceeds 1.5x this (0 = never)", ge=0)
    cuda_graphs: bool = param(False, CUDA_GRAPHS_HELP)


class Minibatch(NamedTuple):
    """What PPO's loss needs of each sample besides the current policy's outputs."""

    old_log_prob: torch.Tensor
    old_value: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor


def ppo_loss(
    log_prob: torch.Tensor, entropy: torch.Tensor, value: torch.Tensor, batch: Minibatch, clip_range: float, config: PPOConfig
) -> tuple[torch.Tensor, torch.Tensor]:
    """L = -L^CLIP + vf_coef * L^VF - ent_coef * H, per minibatch (the paper's eq. 9, as a loss).

    Returns the loss and the values to log (policy, value, entropy, approx KL, clip fraction)."""
    advantages = batch.advantages
    if config.normalize_advantage and len(advantages) > 1:  # a last minibatch of one sample has no std
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    log_ratio = log_prob - batch.old_log_prob
    ratio = log_ratio.exp()  # r = pi(a|s) / pi_old(a|s)
    # L^CLIP = mean(min(r A, clip(r, 1 - eps, 1 + eps) A))
    policy_loss = -torch.min(advantages * ratio, advantages * ratio.clamp(1 - clip_range, 1 + clip_range)).mean()
    if config.clip_range_vf:  # SB3: V_clipped = V_old + clip(V - V_old, -eps_vf, eps_vf)
        value = batch.old_value + (value - batch.old_value).clamp(-config.clip_range_vf, config.clip_range_vf)
    value_loss = (value - batch.returns).square().mean()  # L^VF = mean((V - R)^2)
    entropy_mean = entropy.mean()
    loss = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy_mean
    with torch.no_grad():
        approx_kl = ((ratio - 1) - log_ratio).mean()  # KL(pi_old || pi) ~ E[(r - 1) - log r] (Schulman, 2020)
        clip_fraction = ((ratio - 1).abs() > clip_range).float().mean()
    return loss, torch.stack([policy_loss, value_loss, entropy_mean, approx_kl, clip_fraction])


class PPO(OnPolicyAlgorithm):
    name = "ppo"
    Config = PPOConfig
    config: PPOConfig

    def make_optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.Adam([self.net.flat], lr=self.config.learning_rate, eps=1e-5, fused=True)

    def apply_schedules(self, progress_remaining: float) -> None:
        super().apply_schedules(progress_remaining)
        self.clip_range = schedule(self.config.clip_range, self.config.clip_schedule, progress_remaining)

    def update(self, rollout: Rollout, advantages: torch.Tensor, returns: torch.Tensor) -> dict[str, float]:
        """n_epochs of clipped-surrogate minibatch updates on one rollout; returns the mean logs."""
        logged: list[torch.Tensor] = []
        for _ in range(self.config.n_epochs):
            for minibatch, masks in self.minibatches(rollout, advantages, returns):
                # a step replayed from a CUDA graph (which takes the minibatch alone) returns the graph's own
                # log tensor, which the next replay overwrites: keep a copy
                logs = self.step_minibatch(minibatch) if masks is None else self.step_minibatch(minibatch, masks)
                logged.append(logs.clone())
            if self.config.target_kl and float(logged[-1][3]) > 1.5 * self.config.target_kl:
                break
        return dict(zip(LOG_NAMES, torch.stack(logged).mean(0).tolist(), strict=True))

    def minibatches(
        self, rollout: Rollout, advantages: torch.Tensor, returns: torch.Tensor
    ) -> Iterator[tuple[tuple[torch.Tensor, ...], torch.Tensor | None]]:
        """One epoch: the rollout's steps in a random order, `batch_size` at a time, each minibatch as (obs,
        actions, old log-probs, old values, advantages, returns) and its action masks (None without)."""
        obs, actions = rollout.obs.flatten(0, 1), rollout.actions.flatten(0, 1)
        samples = Minibatch(rollout.log_probs.flatten(), rollout.values.flatten(), advantages.flatten(), returns.flatten())
        masks = None if rollout.masks is None else rollout.masks.flatten(0, 1)
        order = torch.randperm(obs.shape[0], generator=self.generator, device=obs.device)
        for start in range(0, obs.shape[0], self.config.batch_size):
            index = order[start : start + self.config.batch_size]
            # index_select: the gather obs[index] does, with about half its dispatch time
            minibatch = tuple(values.index_select(0, index) for values in (obs, actions, *samples))
            yield minibatch, None if masks is None else masks.index_select(0, index)

    def step_minibatch(self, minibatch: Sequence[torch.Tensor], masks: torch.Tensor | None = None) -> torch.Tensor:
        """One optimizer step on (obs, actions, old log-probs, old values, advantages, returns), under the action
        `masks` the actions were sampled with; returns its logs."""
        obs, actions, *samples = minibatch
        loss_fn = partial(ppo_loss, batch=Minibatch(*samples), clip_range=self.clip_range, config=self.config)
        return self.optimize(obs, actions, loss_fn, masks)
