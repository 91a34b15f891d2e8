"""The written-out SAC update: the speed switch of SAC (`update="handwritten"`).

The reference is `SAC.optimize` (algos/sac.py): the temperature, critic and actor losses, each
followed by `loss.backward()`. Here the same steps run in the same order on the same random draws with
every gradient written out: the squashed Gaussian's reparameterised sample and log-probability, the
critics' squared TD errors, the actor's loss through the (just updated) critics to the action, and the
chain rule through each MLP (mlp_backward.py). tests/speed/test_sac_backward.py holds it equal to the reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from ..algos.replay import Batch
from ..algos.sac import SAC
from ..nets.policies import LOG_STD_MAX, LOG_STD_MIN, SQUASH_EPSILON, SquashedGaussianActor, TwinQ, is_image
from .mlp_backward import adam_step, mlp_backward, mlp_forward


def unsupported_reason(obs_shape: tuple[int, ...]) -> str | None:
    """Why the written-out update cannot serve these observations, or None when it can."""
    if is_image(obs_shape):
        return "image observations go through a CNN, which the written-out backward does not cover"
    return None


@dataclass
class ActorPass:
    """One reparameterised sample of the actor and what its backward needs."""

    outputs: list[torch.Tensor]  #: the encoder layers' outputs, its input first
    raw_log_std: torch.Tensor  #: the log-std head's output before the clamp
    std: torch.Tensor
    noise: torch.Tensor  #: eps ~ N(0, 1), u = mu + std * eps
    squashed: torch.Tensor  #: tanh(u)
    action: torch.Tensor  #: tanh(u) rescaled to the env's bounds
    log_prob: torch.Tensor  #: log pi(action | obs), tanh-corrected, summed over action dimensions


@torch.no_grad()
def actor_forward(actor: SquashedGaussianActor, obs: torch.Tensor) -> ActorPass:
    """`actor.sample(obs)`, keeping what the backward needs; draws its noise as `sample` does."""
    outputs = mlp_forward(actor.encoder, obs.flatten(1), last_activation=True)
    features = outputs[-1]
    mu = nn.functional.linear(features, actor.mu.weight, actor.mu.bias)
    raw_log_std = nn.functional.linear(features, actor.log_std.weight, actor.log_std.bias)
    log_std = raw_log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
    std = log_std.exp()
    noise = torch.randn_like(mu)
    u = mu + std * noise
    squashed = torch.tanh(u)
    # log N(u; mu, std) = -eps^2 / 2 - log std - log(2 pi) / 2, minus log(1 - tanh(u)^2 + 1e-6)
    log_prob = -0.5 * noise.square() - log_std - 0.5 * math.log(2 * math.pi)
    log_prob = log_prob - torch.log(1.0 - squashed.square() + SQUASH_EPSILON)
    return ActorPass(outputs, raw_log_std, std, noise, squashed, actor.scale(squashed), log_prob.sum(-1))


@torch.no_grad()
def actor_backward(
    actor: SquashedGaussianActor, sample: ActorPass, grad_action: torch.Tensor, grad_log_prob: torch.Tensor
) -> None:
    """Write the actor's gradients from dL/d action (n, d) and dL/d log_prob (n,).

    With u = mu + std eps and action = low + (tanh u + 1)(high - low) / 2:
    d action / du = (1 - tanh^2 u)(high - low) / 2; d log_prob / du = 2 tanh u (1 - tanh^2 u) / (1 - tanh^2 u + 1e-6)
    (only the correction depends on u: the Gaussian's terms cancel under the reparameterisation),
    d log_prob / d log_std = d log_prob / du std eps - 1; du/d log_std = std eps;
    the clamp passes the gradient where the raw log-std lies inside [LOG_STD_MIN, LOG_STD_MAX]."""
    grad_log_prob = grad_log_prob.unsqueeze(-1)
    slope = 1.0 - sample.squashed.square()  # d tanh(u) / du
    grad_u = grad_action * slope * (0.5 * (actor.high - actor.low))
    grad_u = grad_u + grad_log_prob * 2.0 * sample.squashed * slope / (slope + SQUASH_EPSILON)
    inside = (sample.raw_log_std >= LOG_STD_MIN) & (sample.raw_log_std <= LOG_STD_MAX)
    grad_log_std = (grad_u * sample.std * sample.noise - grad_log_prob) * inside
    features = sample.outputs[-1]
    for head, grad in ((actor.mu, grad_u), (actor.log_std, grad_log_std)):
        torch.mm(grad.t(), features, out=head.weight.grad)
        torch.sum(grad, 0, out=head.bias.grad)
    grad_features = torch.addmm(grad_u @ actor.mu.weight, grad_log_std, actor.log_std.weight)
    mlp_backward(actor.encoder, sample.outputs, grad_features, last_activation=True)


@torch.no_grad()
def critic_forward(critic: TwinQ, obs: torch.Tensor, actions: torch.Tensor) -> list[list[torch.Tensor]]:
    """Each Q-net's layer outputs at cat(obs, a_unit), a_unit the action in [-1, 1] (`critic.unit`), its input
    first and Q(s, a) (n, 1) last."""
    x = torch.cat([obs.flatten(1), critic.unit(actions)], -1)
    return [mlp_forward(q_net, x) for q_net in critic.qs]


@torch.no_grad()
def fast_sac_update(sac: SAC, batch: Batch) -> dict[str, torch.Tensor]:
    """One SAC gradient step on `batch` up to the target update, as `SAC.optimize` does it; returns
    the same logs."""
    config, actor, critic = sac.config, sac.actor, sac.critic
    obs, actions, rewards, next_obs, terminated = batch
    n = obs.shape[0]
    sample = actor_forward(actor, obs)
    alpha = sac.log_alpha.exp()  # before the temperature's own step, as the reference
    if config.auto_alpha:
        # alpha loss -mean(log_alpha (log pi + target entropy)): d / d log_alpha = -mean(log pi + target entropy)
        sac.log_alpha.grad = -(sample.log_prob + sac.target_entropy).mean().reshape(1)
        adam_step(sac.alpha_opt)

    next_sample = actor_forward(actor, next_obs)
    next_q1, next_q2 = (outputs[-1].squeeze(-1) for outputs in critic_forward(sac.critic_target, next_obs, next_sample.action))
    next_q = torch.minimum(next_q1, next_q2) - alpha * next_sample.log_prob
    target = rewards + config.gamma * (1.0 - terminated) * next_q  # y = r + gamma (min Q' - alpha log pi)
    # critic loss 1/2 sum_k mean((Q_k - y)^2): dL/dQ_k = (Q_k - y) / n
    critic_loss = 0.0
    for q_net, outputs in zip(critic.qs, critic_forward(critic, obs, actions), strict=True):
        error = outputs[-1] - target.unsqueeze(-1)
        critic_loss = critic_loss + 0.5 * error.square().mean()
        mlp_backward(q_net, outputs, error * (1.0 / n))
    adam_step(sac.critic_opt)

    # actor loss mean(alpha log pi - min(Q1, Q2)(s, a ~ pi)) with the updated critics
    passes = critic_forward(critic, obs, sample.action)
    q1, q2 = (outputs[-1].squeeze(-1) for outputs in passes)
    actor_loss = (alpha * sample.log_prob - torch.minimum(q1, q2)).mean()
    # d min(Q1, Q2) / d Q1 = [Q1 < Q2] + [Q1 = Q2] / 2 (torch.minimum's rule), and alike for Q2
    ties = (q1 == q2) * 0.5
    grad_unit = torch.zeros_like(sample.action)  # dL/d a_unit, the action as the critics read it
    for q_net, outputs, share in zip(critic.qs, passes, ((q1 < q2) + ties, (q2 < q1) + ties), strict=True):
        grad_input = mlp_backward(q_net, outputs, (share * (-1.0 / n)).unsqueeze(-1), weights=False, input_grad=True)
        grad_unit += grad_input[:, -sample.action.shape[1] :]
    grad_action = grad_unit if critic.unit_bounds else grad_unit / critic.action_half  # a_unit = (a - c) / h
    actor_backward(actor, sample, grad_action, (alpha / n).expand(n))
    adam_step(sac.actor_opt)
    return {"critic_loss": critic_loss, "actor_loss": actor_loss, "alpha": alpha[0]}
