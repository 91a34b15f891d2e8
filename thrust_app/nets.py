"""The networks every algorithm builds from: MLP and CNN encoders, actor-critic, Q-nets, SAC's actor.

An image observation (3 dims, such as Snake's C x H x W) gets a small CNN; anything else is
flattened into an MLP. Every network offers `act(obs)`, the deterministic policy used for
evaluation and ONNX export: discrete policies return (logits or Q-values, action), continuous ones
the action already inside the env's bounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.distributions import Categorical, Normal

from .envs.core import Box, Discrete

ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


def is_image(obs_shape: Sequence[int]) -> bool:
    return len(obs_shape) == 3


def mlp(sizes: Sequence[int], activation: str, last_activation: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(n_in, n_out))
        if last_activation or i < len(sizes) - 2:
            layers.append(ACTIVATIONS[activation]())
    return nn.Sequential(*layers)


class CNNEncoder(nn.Module):
    """Two 3x3 conv layers that keep the grid size, then a linear layer: enough for a 10x10 board,
    and small enough (about 0.4M parameters) that a CPU trains it at thousands of steps per second."""

    def __init__(self, obs_shape: Sequence[int], features: int = 128) -> None:
        super().__init__()
        c, h, w = obs_shape
        self.net = nn.Sequential(
            nn.Conv2d(c, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
            nn.Flatten(),
            nn.Linear(32 * h * w, features), nn.ReLU(),
        )
        self.out_dim = features

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)


class MLPEncoder(nn.Module):
    def __init__(self, obs_shape: Sequence[int], hidden: Sequence[int], activation: str) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), mlp([math.prod(obs_shape), *hidden], activation))
        self.out_dim = hidden[-1] if hidden else math.prod(obs_shape)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)


def make_encoder(obs_shape: Sequence[int], hidden: Sequence[int], activation: str) -> nn.Module:
    return CNNEncoder(obs_shape) if is_image(obs_shape) else MLPEncoder(obs_shape, hidden, activation)


def orthogonal_init(module: nn.Module, gain: float) -> None:
    for layer in module.modules():
        if isinstance(layer, (nn.Linear, nn.Conv2d)):
            nn.init.orthogonal_(layer.weight, gain)
            nn.init.zeros_(layer.bias)


class BoundsMixin:
    """Holds a Box action space's bounds as buffers (they travel with the module to any device)."""

    def _set_bounds(self, space: Box) -> None:
        self.register_buffer("low", torch.tensor(space.low, dtype=torch.float32).reshape(space.shape))
        self.register_buffer("high", torch.tensor(space.high, dtype=torch.float32).reshape(space.shape))


class ActorCritic(BoundsMixin, nn.Module):
    """Policy and value for A2C and PPO.

    Vector observations get separate policy and value MLPs (SB3's default); images share one CNN.
    Discrete actions: a categorical over logits. Box actions: a diagonal Gaussian with a learned,
    state-independent log std; samples are clipped to the bounds before they reach the env.
    """

    def __init__(self, obs_shape: Sequence[int], action_space: Discrete | Box,
                 hidden: Sequence[int] = (64, 64), activation: str = "tanh", log_std_init: float = 0.0) -> None:
        super().__init__()
        self.discrete = isinstance(action_space, Discrete)
        self.shared = is_image(obs_shape)
        self.pi_encoder = make_encoder(obs_shape, hidden, activation)
        self.vf_encoder = self.pi_encoder if self.shared else make_encoder(obs_shape, hidden, activation)
        n_out = action_space.n if self.discrete else math.prod(action_space.shape)
        self.pi_head = nn.Linear(self.pi_encoder.out_dim, n_out)
        self.vf_head = nn.Linear(self.vf_encoder.out_dim, 1)
        orthogonal_init(self, math.sqrt(2))
        orthogonal_init(self.pi_head, 0.01)
        orthogonal_init(self.vf_head, 1.0)
        if not self.discrete:
            self._set_bounds(action_space)
            self.log_std = nn.Parameter(torch.full((n_out,), float(log_std_init)))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.vf_head(self.vf_encoder(obs)).squeeze(-1)

    def dist_and_value(self, obs: torch.Tensor) -> tuple[torch.distributions.Distribution, torch.Tensor]:
        features = self.pi_encoder(obs)
        value = self.vf_head(features if self.shared else self.vf_encoder(obs)).squeeze(-1)
        out = self.pi_head(features)
        if self.discrete:
            return Categorical(logits=out), value
        return Normal(out, self.log_std.exp().expand_as(out)), value

    def log_prob(self, dist: torch.distributions.Distribution, action: torch.Tensor) -> torch.Tensor:
        lp = dist.log_prob(action)
        return lp if self.discrete else lp.sum(-1)

    def entropy(self, dist: torch.distributions.Distribution) -> torch.Tensor:
        ent = dist.entropy()
        return ent if self.discrete else ent.sum(-1)

    def env_action(self, action: torch.Tensor) -> torch.Tensor:
        """What the env receives: the sample itself (discrete) or the sample clipped to the bounds."""
        return action if self.discrete else torch.clamp(action, self.low, self.high)

    def act(self, obs: torch.Tensor):
        out = self.pi_head(self.pi_encoder(obs))
        if self.discrete:
            return out, out.argmax(-1)
        return torch.clamp(out, self.low, self.high)


class QNetwork(nn.Module):
    """Q-values of every discrete action (DQN)."""

    def __init__(self, obs_shape: Sequence[int], n_actions: int, hidden: Sequence[int] = (64, 64)) -> None:
        super().__init__()
        self.encoder = make_encoder(obs_shape, hidden, "relu")
        self.head = nn.Linear(self.encoder.out_dim, n_actions)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(obs))

    def act(self, obs: torch.Tensor):
        q = self(obs)
        return q, q.argmax(-1)


LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


class SquashedGaussianActor(BoundsMixin, nn.Module):
    """SAC's policy: a Gaussian squashed by tanh, then rescaled from [-1, 1] to the env's bounds."""

    def __init__(self, obs_shape: Sequence[int], action_space: Box, hidden: Sequence[int] = (256, 256)) -> None:
        super().__init__()
        self._set_bounds(action_space)
        n_out = math.prod(action_space.shape)
        self.encoder = make_encoder(obs_shape, hidden, "relu")
        self.mu = nn.Linear(self.encoder.out_dim, n_out)
        self.log_std = nn.Linear(self.encoder.out_dim, n_out)

    def _scale(self, squashed: torch.Tensor) -> torch.Tensor:
        return self.low + (squashed + 1.0) * 0.5 * (self.high - self.low)

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action in the env's bounds and its log-probability (tanh-corrected)."""
        features = self.encoder(obs)
        mu = self.mu(features)
        log_std = self.log_std(features).clamp(LOG_STD_MIN, LOG_STD_MAX)
        u = mu + log_std.exp() * torch.randn_like(mu)
        squashed = torch.tanh(u)
        log_prob = Normal(mu, log_std.exp()).log_prob(u)
        # tanh's change of variables, in the numerically stable form log(1 - tanh(u)^2)
        log_prob = log_prob - 2.0 * (math.log(2.0) - u - nn.functional.softplus(-2.0 * u))
        return self._scale(squashed), log_prob.sum(-1)

    def act(self, obs: torch.Tensor) -> torch.Tensor:
        return self._scale(torch.tanh(self.mu(self.encoder(obs))))


class TwinQ(nn.Module):
    """SAC's two Q(s, a) critics, evaluated together."""

    def __init__(self, obs_shape: Sequence[int], action_space: Box, hidden: Sequence[int] = (256, 256)) -> None:
        super().__init__()
        n_act = math.prod(action_space.shape)
        self.encoders = nn.ModuleList(make_encoder(obs_shape, (), "relu") if is_image(obs_shape) else nn.Flatten()
                                      for _ in range(2))
        in_dim = (self.encoders[0].out_dim if is_image(obs_shape) else math.prod(obs_shape)) + n_act
        self.qs = nn.ModuleList(mlp([in_dim, *hidden, 1], "relu", last_activation=False) for _ in range(2))

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q1, q2 = (q(torch.cat([enc(obs), action], -1)).squeeze(-1) for enc, q in zip(self.encoders, self.qs))
        return q1, q2
