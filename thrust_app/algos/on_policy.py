"""The part A2C and PPO share: an actor-critic, a rollout with GAE, then the algorithm's own update."""

from __future__ import annotations

from abc import abstractmethod

import torch

from ..config import schedule
from ..nets import ActorCritic, ActorCriticLoss
from ..rollout import Rollout, collect_rollout, compute_gae
from ..flat_params import clip_grad_norm_
from .base import Algorithm, Iteration, set_learning_rate


def optimize_actor_critic(net: ActorCritic, optimizer: torch.optim.Optimizer, obs: torch.Tensor, actions: torch.Tensor,
                          max_grad_norm: float, loss_fn: ActorCriticLoss) -> torch.Tensor:
    """One optimizer step on the loss `loss_fn` describes (see `ActorCritic.backward`), gradients
    clipped to `max_grad_norm`; returns the losses it reports."""
    losses = net.backward(obs, actions, loss_fn)
    clip_grad_norm_(net.flat, max_grad_norm)
    optimizer.step()
    return losses


class OnPolicyAlgorithm(Algorithm):
    """Collect `n_steps` per env with the current policy, compute GAE, call `update`."""

    def __init__(self, obs_shape, action_space, config, device, seed) -> None:
        super().__init__(obs_shape, action_space, config, device, seed)
        self.net = ActorCritic(obs_shape, action_space, config.hidden, config.activation, config.log_std_init).to(device)
        self.optimizer = self.make_optimizer()

    @abstractmethod
    def make_optimizer(self) -> torch.optim.Optimizer:
        """The optimizer of `self.net.flat`, the one buffer that holds all of the net's parameters."""

    @abstractmethod
    def update(self, rollout: Rollout, advantages: torch.Tensor, returns: torch.Tensor,
               progress_remaining: float) -> dict[str, float]:
        """Learn from one rollout; returns the losses to log."""

    @property
    def policy(self) -> ActorCritic:
        return self.net

    def parts(self):
        return {"net": self.net, "optimizer": self.optimizer}

    def iteration(self, env, io, obs, progress_remaining) -> Iteration:
        c = self.config
        rollout, obs = collect_rollout(env, io, obs, self.net, c.n_steps, c.gamma)
        advantages, returns = compute_gae(rollout.rewards, rollout.values, rollout.dones, rollout.last_values,
                                          c.gamma, c.gae_lambda)
        set_learning_rate(self.optimizer, schedule(c.learning_rate, c.lr_schedule, progress_remaining))
        stats = self.update(rollout, advantages, returns, progress_remaining)
        steps = c.n_steps * env.num_envs
        self.num_timesteps += steps
        return Iteration(obs, steps, rollout.episode_returns, rollout.episode_lengths, stats)
