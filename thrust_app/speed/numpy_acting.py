"""Acting without torch: the behaviour policies' forward passes in numpy, for a few envs.

Every algorithm acts one env step at a time on a batch of one to a few observations. Through torch that
forward pays dispatch for every op (about 55 us for DQN's 4-256-256-2 Q-net on this CPU, 134 us for
SAC's actor with its sampling, 77 us for PPO's actor-critic at 8 envs); the same matmuls in numpy cost
about 10 us. The arrays here are numpy views of the nets' flat parameter buffers (`flat_params.py`), so
they see every optimizer step without a copy. Selected by the `acting` switch ("numpy", for vector
observations with a numpy env on the CPU; "torch" is the reference); `tests/speed/test_numpy_acting.py` holds
both equal.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..envs.core import MultiDiscrete
from ..nets.flat_params import FlatParameters
from ..nets.policies import LOG_STD_MAX, LOG_STD_MIN, ActorCritic, QNetwork, SquashedGaussianActor, is_image
from .mlp_backward import linear_layers


def unsupported_reason(obs_shape: tuple[int, ...], env, device: torch.device) -> str | None:
    """Why the numpy acting path cannot serve this run, or None when it can."""
    if is_image(obs_shape):
        return "image observations go through a CNN, which acting='numpy' does not compute"
    if isinstance(env.action_space, MultiDiscrete):
        return "MultiDiscrete actions are drawn per component, which acting='numpy' does not do"
    if device.type != "cpu":
        return f"the nets are on {device}; numpy acts on the CPU"
    if env.backend.name != "numpy":
        return "the env's arrays are torch tensors (env_backend 'torch'); acting='numpy' steps numpy envs"
    return None


class FlatViews:
    """Numpy views of some of a FlatParameters net's parameters, made again when the net is re-flattened
    (moved or copied): call `fresh()` before using them."""

    def __init__(self, net: FlatParameters) -> None:
        self.net = net
        self.bound_to: int | None = None

    def fresh(self) -> None:
        if self.net.flat.data_ptr() != self.bound_to:
            self.bound_to = self.net.flat.data_ptr()
            self.bind()

    def bind(self) -> None:
        """Make the numpy views."""
        raise NotImplementedError


class NumpyMLP(FlatViews):
    """The Linear layers of a ReLU MLP as numpy views: x @ W.T + b, ReLU between layers (and after the
    last one when `relu_last`)."""

    def __init__(self, net: FlatParameters, linears: list[nn.Linear], relu_last: bool) -> None:
        super().__init__(net)
        self.linears = linears
        self.relu_last = relu_last
        self.fresh()

    def bind(self) -> None:
        self.layers = [(layer.weight.detach().numpy(), layer.bias.detach().numpy()) for layer in self.linears]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        self.fresh()
        last = len(self.layers) - 1
        for index, (weight, bias) in enumerate(self.layers):
            x = x @ weight.T
            x += bias
            if index < last or self.relu_last:
                np.maximum(x, 0.0, out=x)
        return x


class FastEpsilonGreedy:
    """DQN's behaviour policy: a uniform random action where u < epsilon, else argmax_a Q(s, a)."""

    def __init__(self, q_net: QNetwork) -> None:
        self.q_values = NumpyMLP(q_net, linear_layers(q_net), relu_last=False)

    def __call__(self, obs: np.ndarray, uniform: np.ndarray, random_actions: np.ndarray, epsilon: float) -> np.ndarray:
        actions = random_actions.copy()
        greedy = uniform >= epsilon
        if greedy.any():  # the forward only for the rows that act greedily
            actions[greedy] = self.q_values(obs[greedy].reshape(int(greedy.sum()), -1)).argmax(1)
        return actions


class FastSquashedGaussian:
    """SAC's behaviour policy: a = scale(tanh(mu + sigma * noise)), sigma = exp(clamp(log_std)), as
    `SquashedGaussianActor.sample` draws it (the noise comes in, drawn by the caller's generator)."""

    def __init__(self, actor: SquashedGaussianActor) -> None:
        self.features = NumpyMLP(actor, linear_layers(actor.encoder), relu_last=True)
        self.mu = NumpyMLP(actor, [actor.mu], relu_last=False)
        self.log_std = NumpyMLP(actor, [actor.log_std], relu_last=False)
        self.low = actor.low.detach().cpu().numpy()
        self.high = actor.high.detach().cpu().numpy()

    def __call__(self, obs: np.ndarray, noise: np.ndarray) -> np.ndarray:
        features = self.features(obs.reshape(obs.shape[0], -1))
        log_std = np.clip(self.log_std(features), LOG_STD_MIN, LOG_STD_MAX)
        squashed = np.tanh(self.mu(features) + np.exp(log_std) * noise)
        return self.low + (squashed + 1.0) * 0.5 * (self.high - self.low)


class FastActorCritic(FlatViews):
    """A2C's and PPO's rollout policy on vector observations: the sampled action, its log-probability and
    V(s) per env, as `ActorCritic.sample` computes them, from noise the caller drew: Exp(1) per action for
    Gumbel-max over the categorical's log-probabilities, N(0, 1) per dimension for the Gaussian."""

    def __init__(self, net: ActorCritic) -> None:
        super().__init__(net)
        self.discrete = net.discrete
        self.width = net.towers.hidden[0]
        self.activate = np.tanh if net.activation == "tanh" else (lambda x: np.maximum(x, 0.0, out=x))
        self.fresh()

    def bind(self) -> None:
        net, towers = self.net, self.net.towers
        view = lambda tensor: tensor.detach().numpy()  # noqa: E731
        self.input_layer = (view(towers.input_layer.weight).T, view(towers.input_layer.bias))
        self.layers = [(view(weight), view(bias)) for weight, bias in zip(towers.weights, towers.biases, strict=True)]
        self.pi_head = (view(net.pi_head.weight).T, view(net.pi_head.bias))
        self.vf_head = (view(net.vf_head.weight).T, view(net.vf_head.bias))
        if not self.discrete:
            self.log_std = view(net.log_std)

    def features(self, obs: np.ndarray, towers: tuple[int, ...] = (0, 1)) -> list[np.ndarray]:
        """The policy (0) and/or value (1) tower's features of a batch of observations."""
        self.fresh()
        weight, bias = self.input_layer
        first = self.activate(obs.reshape(obs.shape[0], -1) @ weight + bias)
        outputs = []
        for tower in towers:
            x = first[:, tower * self.width : (tower + 1) * self.width]
            for block_weight, block_bias in self.layers:
                x = self.activate(x @ block_weight[tower] + block_bias[tower])
            outputs.append(x)
        return outputs

    def value(self, obs: np.ndarray) -> np.ndarray:
        """V(s) (for bootstrapping a truncated episode)."""
        (features,) = self.features(obs, (1,))
        return (features @ self.vf_head[0] + self.vf_head[1])[:, 0]

    def __call__(self, obs: np.ndarray, noise: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pi_features, vf_features = self.features(obs)
        head_out = pi_features @ self.pi_head[0] + self.pi_head[1]
        value = (vf_features @ self.vf_head[0] + self.vf_head[1])[:, 0]
        if self.discrete:
            # log p = z - logsumexp(z); Gumbel-max: argmax(log p - log E), E ~ Exp(1), draws from p
            shifted = head_out - head_out.max(-1, keepdims=True)
            log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
            action = (log_p - np.log(noise)).argmax(-1)
            return action, np.take_along_axis(log_p, action[:, None], -1)[:, 0], value
        # a = mu + sigma * eps; log N(a; mu, sigma) = sum(-eps^2 / 2 - log sigma - log(2 pi) / 2)
        action = head_out + np.exp(self.log_std) * noise
        log_prob = (-0.5 * noise * noise - self.log_std - 0.5 * np.log(2 * np.pi)).sum(-1)
        return action.astype(np.float32), log_prob.astype(np.float32), value
