"""Acting without torch: the off-policy behaviour policies' forward passes in numpy, for a few envs.

DQN and SAC act one env step at a time on a batch of one (or a few) observations. Through torch that
forward pays dispatch for every op (about 55 us for DQN's 4-256-256-2 Q-net on this CPU, 134 us for
SAC's actor with its sampling); the same matmuls in numpy cost about 10 us. The arrays here are numpy
views of the nets' flat parameter buffers (`flat_params.py`), so they see every optimizer step without
a copy. Selected by the off-policy configs' `acting` switch ("fast", for vector observations with a
numpy env on the CPU; "torch" is the reference); `tests/test_fast_acting.py` holds both equal.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .flat_params import FlatParameters
from .nets import LOG_STD_MAX, LOG_STD_MIN, QNetwork, SquashedGaussianActor, is_image


def unsupported_reason(obs_shape: tuple[int, ...], env, device: torch.device) -> str | None:
    """Why the numpy acting path cannot serve this run, or None when it can."""
    if is_image(obs_shape):
        return "image observations go through a CNN, which acting='fast' does not compute"
    if device.type != "cpu":
        return f"the nets are on {device}; numpy acts on the CPU"
    if env.backend.name != "numpy":
        return "the env's arrays are torch tensors (env_backend 'torch'); acting='fast' steps numpy envs"
    return None


class NumpyMLP:
    """The Linear layers of a ReLU MLP as numpy views: x @ W.T + b, ReLU between layers (and after the
    last one when `relu_last`)."""

    def __init__(self, net: FlatParameters, linears: list[nn.Linear], relu_last: bool) -> None:
        self.net = net
        self.linears = linears
        self.relu_last = relu_last
        self._bind()

    def _bind(self) -> None:
        self.bound_to = self.net.flat.data_ptr()
        self.layers = [(layer.weight.detach().numpy(), layer.bias.detach().numpy()) for layer in self.linears]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if self.net.flat.data_ptr() != self.bound_to:  # the net was re-flattened (moved or copied): new views
            self._bind()
        last = len(self.layers) - 1
        for index, (weight, bias) in enumerate(self.layers):
            x = x @ weight.T
            x += bias
            if index < last or self.relu_last:
                np.maximum(x, 0.0, out=x)
        return x


def linears_of(module: nn.Module) -> list[nn.Linear]:
    return [layer for layer in module.modules() if isinstance(layer, nn.Linear)]


class FastEpsilonGreedy:
    """DQN's behaviour policy: a uniform random action where u < epsilon, else argmax_a Q(s, a)."""

    def __init__(self, q_net: QNetwork) -> None:
        self.q_values = NumpyMLP(q_net, linears_of(q_net), relu_last=False)

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
        self.features = NumpyMLP(actor, linears_of(actor.encoder), relu_last=True)
        self.mu = NumpyMLP(actor, [actor.mu], relu_last=False)
        self.log_std = NumpyMLP(actor, [actor.log_std], relu_last=False)
        self.low = actor.low.detach().cpu().numpy()
        self.high = actor.high.detach().cpu().numpy()

    def __call__(self, obs: np.ndarray, noise: np.ndarray) -> np.ndarray:
        features = self.features(obs.reshape(obs.shape[0], -1))
        log_std = np.clip(self.log_std(features), LOG_STD_MIN, LOG_STD_MAX)
        squashed = np.tanh(self.mu(features) + np.exp(log_std) * noise)
        return self.low + (squashed + 1.0) * 0.5 * (self.high - self.low)
