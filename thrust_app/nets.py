"""The networks every algorithm builds from: MLP and CNN encoders, actor-critic, Q-nets, SAC's actor.

An image observation (3 dims, such as Snake's C x H x W) gets a small CNN; anything else is
flattened into an MLP. Every network offers `act(obs)`, the deterministic policy used for
evaluation and ONNX export: discrete policies return (logits or Q-values, action), continuous ones
the action already inside the env's bounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.distributions import Categorical, Normal

from .envs.core import Box, Discrete
from .flat_params import FlatParameters

ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}

#: An actor-critic loss for `ActorCritic.backward`: (log_prob, entropy, values), per sample, detached ->
#: (losses to log as one 1-d tensor, (d loss / d log_prob, d loss / d entropy of each sample, d loss / d values)).
ActorCriticLoss = Callable[[torch.Tensor, torch.Tensor, torch.Tensor],
                           tuple[torch.Tensor, tuple[torch.Tensor, float, torch.Tensor]]]


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


def activate_(z: torch.Tensor, activation: str) -> torch.Tensor:
    """The activation applied in place, outside autograd. On a large CPU tensor tanh is computed as
    2 * sigmoid(2z) - 1: the same function to within 2e-7, and about twice as fast as torch.tanh on an
    AVX2 CPU, where tanh is the costliest op of a small tanh MLP's update. A small tensor (acting for a
    few envs) costs launches, not math, and so does any tensor on a GPU: those get the one-op tanh."""
    if activation == "relu":
        return z.relu_()
    if z.numel() < 4096 or z.device.type != "cpu":
        return z.tanh_()
    return z.mul_(2.0).sigmoid_().mul_(2.0).sub_(1.0)


def activation_backward(grad: torch.Tensor, out: torch.Tensor, activation: str) -> torch.Tensor:
    """The gradient at an activation's input, from the gradient at its output and the output itself."""
    if activation == "tanh":
        return torch.ops.aten.tanh_backward(grad, out)
    return torch.ops.aten.threshold_backward(grad, out, 0.0)


class TwinTowers(nn.Module):
    """Two MLPs of the same shape on the same input (policy and value), computed as one.

    The first layers sit side by side in one matmul; each later layer is one batched matmul of the
    two blocks. The function is exactly that of two separate MLPs, in about half the kernel launches,
    and launches are what a small net's update costs on a CPU. Returns (policy features, value features).

    Besides the autograd `forward`, the towers have a hand-written pair: `run` (no autograd, keeps
    every layer's output) and `backprop` (writes each parameter's `.grad` from those outputs). An
    update through them costs about a third of autograd's op launches; tests hold the gradients equal.
    """

    def __init__(self, in_dim: int, hidden: Sequence[int], activation: str) -> None:
        super().__init__()
        self.hidden = tuple(hidden)
        self.activation = activation
        self.act = ACTIVATIONS[activation]()
        self.first = nn.Linear(in_dim, 2 * hidden[0])
        self.weights = nn.ParameterList(nn.Parameter(torch.empty(2, a, b)) for a, b in zip(hidden[:-1], hidden[1:]))
        self.biases = nn.ParameterList(nn.Parameter(torch.zeros(2, 1, b)) for b in hidden[1:])
        self.out_dim = hidden[-1]

    def init(self, gain: float) -> None:
        h = self.hidden[0]
        with torch.no_grad():
            for tower in (self.first.weight[:h], self.first.weight[h:]):
                nn.init.orthogonal_(tower, gain)
            nn.init.zeros_(self.first.bias)
            for w in self.weights:
                for block in w:
                    nn.init.orthogonal_(block, gain)

    def _tower_major(self, x: torch.Tensor) -> torch.Tensor:
        """(B, 2h) side-by-side first-layer outputs as (2, B, h)."""
        return x.view(x.shape[0], 2, self.hidden[0]).transpose(0, 1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self._tower_major(self.act(self.first(obs.flatten(1))))
        for w, b in zip(self.weights, self.biases):
            x = self.act(torch.baddbmm(b, x, w))
        return x[0], x[1]

    @torch.no_grad()
    def run(self, obs: torch.Tensor) -> list[torch.Tensor]:
        """Every layer's output without autograd: [input (B, in), first layer (B, 2h), (2, B, h), ...];
        the last, viewed tower-major as `features(outputs)`, holds (policy, value) features."""
        x, first = obs.flatten(1), self.first
        outputs = [x, activate_(torch.addmm(first.bias, x, first.weight.T), self.activation)]
        x = self._tower_major(outputs[-1])
        for w, b in zip(self.weights, self.biases):
            x = activate_(torch.baddbmm(b, x, w), self.activation)
            outputs.append(x)
        return outputs

    def features(self, outputs: list[torch.Tensor]) -> torch.Tensor:
        """The (2, B, h) policy and value features from `run`'s outputs."""
        return self._tower_major(outputs[1]) if len(outputs) == 2 else outputs[-1]

    @torch.no_grad()
    def backprop(self, outputs: list[torch.Tensor], grad: torch.Tensor) -> None:
        """Write every parameter's `.grad` (in place: they are views of the owner's flat gradient) from
        `run`'s outputs and the (2, B, h) gradient at the features."""
        layers = list(zip(self.weights, self.biases))
        for i in reversed(range(len(layers))):
            w, b = layers[i]
            grad = activation_backward(grad, outputs[i + 2], self.activation)
            x_in = self._tower_major(outputs[1]) if i == 0 else outputs[i + 1]
            torch.bmm(x_in.transpose(1, 2), grad, out=w.grad)
            torch.sum(grad, 1, keepdim=True, out=b.grad)
            grad = torch.bmm(grad, w.transpose(1, 2))
        grad = grad.transpose(0, 1).reshape(outputs[1].shape)  # back to the first layer's side-by-side layout
        grad = activation_backward(grad, outputs[1], self.activation)
        first = self.first
        torch.mm(grad.T, outputs[0], out=first.weight.grad)
        torch.sum(grad, 0, out=first.bias.grad)

    def policy_features(self, obs: torch.Tensor) -> torch.Tensor:
        """The policy tower alone (acting and export need no value)."""
        h = self.hidden[0]
        x = self.act(nn.functional.linear(obs.flatten(1), self.first.weight[:h], self.first.bias[:h]))
        for w, b in zip(self.weights, self.biases):
            x = self.act(torch.addmm(b[0], x, w[0]))
        return x

    def value_features(self, obs: torch.Tensor) -> torch.Tensor:
        h = self.hidden[0]
        x = self.act(nn.functional.linear(obs.flatten(1), self.first.weight[h:], self.first.bias[h:]))
        for w, b in zip(self.weights, self.biases):
            x = self.act(torch.addmm(b[1], x, w[1]))
        return x


class ActingMLP(BoundsMixin, nn.Module):
    """The policy half of an ActorCritic as a plain MLP with its own named weights.

    This is what export writes for vector observations: no value tower, and weights named
    `net.0.weight`, ... rather than slices of TwinTowers' fused blocks.
    """

    def __init__(self, sizes: Sequence[int], activation: str, action_space: Discrete | Box) -> None:
        super().__init__()
        self.discrete = isinstance(action_space, Discrete)
        self.net = mlp(sizes, activation, last_activation=False)
        if not self.discrete:
            self._set_bounds(action_space)

    def act(self, obs: torch.Tensor):
        out = self.net(obs.flatten(1))
        if self.discrete:
            return out, out.argmax(-1)
        return torch.clamp(out, self.low, self.high)


class ActorCritic(BoundsMixin, FlatParameters):
    """Policy and value for A2C and PPO.

    Vector observations get separate policy and value MLPs (SB3's default), computed together as
    TwinTowers; images share one CNN.
    Discrete actions: a categorical over logits. Box actions: a diagonal Gaussian with a learned,
    state-independent log std; samples are clipped to the bounds before they reach the env.
    """

    def __init__(self, obs_shape: Sequence[int], action_space: Discrete | Box,
                 hidden: Sequence[int] = (64, 64), activation: str = "tanh", log_std_init: float = 0.0) -> None:
        super().__init__()
        self.discrete = isinstance(action_space, Discrete)
        self.shared = is_image(obs_shape)
        self._activation = activation
        if self.shared:
            self.encoder = CNNEncoder(obs_shape)
            features = self.encoder.out_dim
        else:
            self.towers = TwinTowers(math.prod(obs_shape), hidden, activation)
            features = self.towers.out_dim
        n_out = action_space.n if self.discrete else math.prod(action_space.shape)
        self.pi_head = nn.Linear(features, n_out)
        self.vf_head = nn.Linear(features, 1)
        orthogonal_init(self, math.sqrt(2))
        if not self.shared:
            self.towers.init(math.sqrt(2))
        orthogonal_init(self.pi_head, 0.01)
        orthogonal_init(self.vf_head, 1.0)
        if not self.discrete:
            self._set_bounds(action_space)
            self.log_std = nn.Parameter(torch.full((n_out,), float(log_std_init)))
        self.flatten_parameters()

    def _features(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.shared:
            f = self.encoder(obs)
            return f, f
        return self.towers(obs)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        if self.shared:
            return self.vf_head(self.encoder(obs)).squeeze(-1)
        if torch.is_grad_enabled():
            return self.vf_head(self.towers.value_features(obs)).squeeze(-1)
        return self.vf_head(self.towers.features(self.towers.run(obs))[1]).squeeze(-1)

    def _heads(self, pi_features: torch.Tensor, vf_features: torch.Tensor
               ) -> tuple[torch.distributions.Distribution, torch.Tensor]:
        value = self.vf_head(vf_features).squeeze(-1)
        out = self.pi_head(pi_features)
        if self.discrete:
            return Categorical(logits=out, validate_args=False), value  # checks cost more than the math here
        return Normal(out, self.log_std.exp().expand_as(out), validate_args=False), value

    def dist_and_value(self, obs: torch.Tensor) -> tuple[torch.distributions.Distribution, torch.Tensor]:
        return self._heads(*self._features(obs))

    def _head_params(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        pi, vf = self.pi_head, self.vf_head
        return pi.weight, pi.bias, vf.weight, vf.bias

    @torch.no_grad()
    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A sampled action, its log-probability and the value of `obs`: what a rollout records per step."""
        if self.shared:
            dist, value = self.dist_and_value(obs)
            action = dist.sample()
            return action, self.log_prob(dist, action), value
        pi_w, pi_b, vf_w, vf_b = self._head_params()
        features = self.towers.features(self.towers.run(obs))
        value = torch.addmm(vf_b, features[1], vf_w.T).squeeze(-1)
        out = torch.addmm(pi_b, features[0], pi_w.T)
        if not self.discrete:
            dist = Normal(out, self.log_std.exp().expand_as(out), validate_args=False)
            action = dist.sample()
            return action, dist.log_prob(action).sum(-1), value
        # Gumbel-max: argmax(log p - log E), E ~ Exp(1), draws from p; torch.multinomial costs 5x more here
        log_p = out.log_softmax(-1)
        action = (log_p - torch.empty_like(log_p).exponential_().log_()).argmax(-1)
        return action, log_p.gather(-1, action.unsqueeze(-1)).squeeze(-1), value

    def backward(self, obs: torch.Tensor, actions: torch.Tensor, loss_fn: ActorCriticLoss) -> torch.Tensor:
        """Set every parameter's `.grad` to the gradient of the loss that `loss_fn` describes, and return
        the losses it reports.

        `loss_fn(log_prob, entropy, values)` gets the policy's per-sample log-probs of `actions`,
        entropies and values at `obs` (detached) and returns (losses to log, (d loss / d log_prob,
        d loss / d entropy as one float per sample, d loss / d values)). The chain rule from there is
        written out here for vector observations: the distribution (`_dist_backward`), the heads, the
        towers (`TwinTowers.backprop`); images go through autograd. Autograd's bookkeeping costs more
        than the math of a net this small; tests hold both paths equal to autograd on the plain loss.
        """
        if self.shared:
            self.zero_grad()
            dist, values = self.dist_and_value(obs)
            log_prob, entropy = self.log_prob(dist, actions), self.entropy(dist)
            losses, (g_log_prob, g_entropy, g_values) = loss_fn(log_prob.detach(), entropy.detach(), values.detach())
            torch.autograd.backward([log_prob, entropy, values],
                                    [g_log_prob, torch.full_like(entropy, g_entropy), g_values])
            return losses
        towers, pi_w, pi_b, vf_w, vf_b = self.towers, *self._head_params()
        outputs = towers.run(obs)
        features = towers.features(outputs)
        pi_features, vf_features = features.unbind(0)
        with torch.no_grad():
            out = torch.addmm(pi_b, pi_features, pi_w.T)
            values = torch.addmm(vf_b, vf_features, vf_w.T).squeeze(-1)
            log_prob, entropy, saved = self._dist_stats(out, actions)
            losses, (g_log_prob, g_entropy, g_values) = loss_fn(log_prob, entropy, values)
            g_out = self._dist_backward(saved, actions, entropy, g_log_prob, g_entropy)
            g_values = g_values.unsqueeze(-1)
            torch.mm(g_out.T, pi_features, out=pi_w.grad)
            torch.sum(g_out, 0, out=pi_b.grad)
            torch.mm(g_values.T, vf_features, out=vf_w.grad)
            torch.sum(g_values, 0, out=vf_b.grad)
            towers.backprop(outputs, torch.stack([g_out @ pi_w, g_values @ vf_w]))
        return losses

    def _dist_stats(self, out: torch.Tensor, actions: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, ...]]:
        """Per-sample log-prob of `actions` and entropy of the policy whose head output is `out`, plus what
        `_dist_backward` needs: the log-probabilities and probabilities of every action (discrete), or the
        noise (Gaussian)."""
        if self.discrete:
            log_p = out.log_softmax(-1)
            p = log_p.exp()
            entropy = -(p * log_p).sum(-1)
            return log_p.gather(-1, actions.unsqueeze(-1)).squeeze(-1), entropy, (log_p, p)
        noise = (actions - out) * (-self.log_std).exp()
        log_prob = (-0.5 * noise.square() - self.log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        entropy = (0.5 + 0.5 * math.log(2 * math.pi) + self.log_std).sum().expand(out.shape[0])
        return log_prob, entropy, (noise,)

    def _dist_backward(self, saved: tuple[torch.Tensor, ...], actions: torch.Tensor, entropy: torch.Tensor,
                       g_log_prob: torch.Tensor, g_entropy: float) -> torch.Tensor:
        """The gradient at the head output from those at the log-prob and entropy (Gaussian: also sets
        `log_std.grad`). Categorical: d log p_a / dz = onehot(a) - p, d H / dz = -p (log p + H).
        Gaussian: d log p / d mean = noise / std, d log p / d log_std = noise^2 - 1, d H / d log_std = 1."""
        if self.discrete:
            log_p, p = saved
            g = g_log_prob.unsqueeze(-1)
            if g_entropy:
                g = g + g_entropy * (log_p + entropy.unsqueeze(-1))
            g = p * -g
            return g.scatter_add_(-1, actions.unsqueeze(-1), g_log_prob.unsqueeze(-1))
        (noise,), g = saved, g_log_prob.unsqueeze(-1)
        torch.sum(g * (noise.square() - 1), 0, out=self.log_std.grad).add_(g_entropy * noise.shape[0])
        return g * noise * (-self.log_std).exp()

    def log_prob(self, dist: torch.distributions.Distribution, action: torch.Tensor) -> torch.Tensor:
        lp = dist.log_prob(action)
        return lp if self.discrete else lp.sum(-1)

    def entropy(self, dist: torch.distributions.Distribution) -> torch.Tensor:
        ent = dist.entropy()
        return ent if self.discrete else ent.sum(-1)

    def env_action(self, action: torch.Tensor) -> torch.Tensor:
        """What the env receives: the sample itself (discrete) or the sample clipped to the bounds."""
        return action if self.discrete else torch.clamp(action, self.low, self.high)

    def acting_module(self) -> nn.Module:
        """A module whose `act` equals this one's, shaped for export: an ActingMLP copy of the policy
        tower for vector observations, this module itself for images."""
        if self.shared:
            return self
        towers, h = self.towers, self.towers.hidden
        space = Discrete(self.pi_head.out_features) if self.discrete else Box(
            tuple(self.low.flatten().tolist()), tuple(self.high.flatten().tolist()), tuple(self.low.shape))
        acting = ActingMLP([towers.first.in_features, *h, self.pi_head.out_features], self._activation, space)
        linears = [m for m in acting.net if isinstance(m, nn.Linear)]
        with torch.no_grad():
            linears[0].weight.copy_(towers.first.weight[: h[0]])
            linears[0].bias.copy_(towers.first.bias[: h[0]])
            for layer, w, b in zip(linears[1:-1], towers.weights, towers.biases):
                layer.weight.copy_(w[0].T)
                layer.bias.copy_(b[0, 0])
            linears[-1].weight.copy_(self.pi_head.weight)
            linears[-1].bias.copy_(self.pi_head.bias)
        return acting.to(self.pi_head.weight.device)

    def act(self, obs: torch.Tensor):
        out = self.pi_head(self.encoder(obs) if self.shared else self.towers.policy_features(obs))
        if self.discrete:
            return out, out.argmax(-1)
        return torch.clamp(out, self.low, self.high)


class QNetwork(FlatParameters):
    """Q-values of every discrete action (DQN)."""

    def __init__(self, obs_shape: Sequence[int], n_actions: int, hidden: Sequence[int] = (64, 64)) -> None:
        super().__init__()
        self.encoder = make_encoder(obs_shape, hidden, "relu")
        self.head = nn.Linear(self.encoder.out_dim, n_actions)
        self.flatten_parameters()

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(obs))

    def act(self, obs: torch.Tensor):
        q = self(obs)
        return q, q.argmax(-1)


LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


class SquashedGaussianActor(BoundsMixin, FlatParameters):
    """SAC's policy: a Gaussian squashed by tanh, then rescaled from [-1, 1] to the env's bounds."""

    def __init__(self, obs_shape: Sequence[int], action_space: Box, hidden: Sequence[int] = (256, 256)) -> None:
        super().__init__()
        self._set_bounds(action_space)
        n_out = math.prod(action_space.shape)
        self.encoder = make_encoder(obs_shape, hidden, "relu")
        self.mu = nn.Linear(self.encoder.out_dim, n_out)
        self.log_std = nn.Linear(self.encoder.out_dim, n_out)
        self.flatten_parameters()

    def _scale(self, squashed: torch.Tensor) -> torch.Tensor:
        return self.low + (squashed + 1.0) * 0.5 * (self.high - self.low)

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action in the env's bounds and its log-probability (tanh-corrected)."""
        features = self.encoder(obs)
        mu = self.mu(features)
        log_std = self.log_std(features).clamp(LOG_STD_MIN, LOG_STD_MAX)
        u = mu + log_std.exp() * torch.randn_like(mu)
        squashed = torch.tanh(u)
        log_prob = Normal(mu, log_std.exp(), validate_args=False).log_prob(u)
        # tanh's change of variables, in the numerically stable form log(1 - tanh(u)^2)
        log_prob = log_prob - 2.0 * (math.log(2.0) - u - nn.functional.softplus(-2.0 * u))
        return self._scale(squashed), log_prob.sum(-1)

    def act(self, obs: torch.Tensor) -> torch.Tensor:
        return self._scale(torch.tanh(self.mu(self.encoder(obs))))


class TwinQ(FlatParameters):
    """SAC's two Q(s, a) critics, evaluated together."""

    def __init__(self, obs_shape: Sequence[int], action_space: Box, hidden: Sequence[int] = (256, 256)) -> None:
        super().__init__()
        n_act = math.prod(action_space.shape)
        self.encoders = nn.ModuleList(make_encoder(obs_shape, (), "relu") if is_image(obs_shape) else nn.Flatten()
                                      for _ in range(2))
        in_dim = (self.encoders[0].out_dim if is_image(obs_shape) else math.prod(obs_shape)) + n_act
        self.qs = nn.ModuleList(mlp([in_dim, *hidden, 1], "relu", last_activation=False) for _ in range(2))
        self.flatten_parameters()

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q1, q2 = (q(torch.cat([enc(obs), action], -1)).squeeze(-1) for enc, q in zip(self.encoders, self.qs))
        return q1, q2
