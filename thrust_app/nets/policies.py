"""The networks every algorithm builds from: MLP and CNN encoders, actor-critic, Q-nets, SAC's actor.

An image observation (3 dims, C x H x W) gets a CNN: SB3's NatureCNN for frames of 36 x 36 and more
(Atari's 84 x 84), a small one for boards (Snake, MinAtar: 10 x 10); anything else is flattened into
an MLP. Byte images (uint8) are scaled to [0, 1] inside the CNN, so buffers and exported policies keep
bytes. Every network offers `act(obs)`, the deterministic policy used for
evaluation and ONNX export: discrete policies return (logits or Q-values, action), continuous ones
the action already inside the env's bounds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.distributions import Categorical, Normal

from ..envs.core import Box, Discrete, MultiDiscrete
from .extractor import FeatureExtractor
from .flat_params import FlatParameters

ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}
#: The logit of an action a mask forbids (sb3-contrib's MaskableCategorical): exp() of it is 0, so it is never
#: sampled nor the argmax, and unlike -inf it keeps p * log p = 0 in the entropy.
MASKED_LOGIT = -1e8


def masked(logits: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """`logits` with the actions `mask` (bool, True = allowed) forbids set to MASKED_LOGIT; as they are without one."""
    return logits if mask is None else logits.masked_fill(~mask, MASKED_LOGIT)


ACTIVATION_FUNCTIONS = {"tanh": torch.tanh, "relu": torch.relu}


def is_image(obs_shape: Sequence[int]) -> bool:
    return len(obs_shape) == 3


def mlp(sizes: Sequence[int], activation: str, last_activation: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = []
    for index, (n_in, n_out) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(n_in, n_out))
        if last_activation or index < len(sizes) - 2:
            layers.append(ACTIVATIONS[activation]())
    return nn.Sequential(*layers)


def as_float(obs: torch.Tensor) -> torch.Tensor:
    """An image batch as floats: bytes (0..255) scaled to [0, 1] (SB3's preprocess_obs), floats as they are."""
    return obs.float() / 255.0 if obs.dtype == torch.uint8 else obs


class NatureCNN(nn.Module):
    """The DQN paper's encoder (Mnih et al., 2015), SB3's NatureCNN: 32 8x8 filters stride 4, 64 4x4 stride 2,
    64 3x3 stride 1, then 512 features; for frames of at least 36 x 36 (84 x 84 Atari frames: 7 x 7 maps)."""

    def __init__(self, obs_shape: Sequence[int], features: int = 512) -> None:
        super().__init__()
        channels, height, width = obs_shape
        self.convs = nn.Sequential(
            nn.Conv2d(channels, 32, 8, stride=4),
            nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1),
            nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():
            n_flat = self.convs(torch.zeros(1, channels, height, width)).shape[1]
        self.linear = nn.Sequential(nn.Linear(n_flat, features), nn.ReLU())
        self.out_dim = features

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.linear(self.convs(as_float(obs)))


class CNNEncoder(nn.Module):
    """Two 3x3 conv layers that keep the grid size, then a linear layer: enough for a 10x10 board,
    and small enough (about 0.4M parameters) that a CPU trains it at thousands of steps per second."""

    def __init__(self, obs_shape: Sequence[int], features: int = 128) -> None:
        super().__init__()
        channels, height, width = obs_shape
        self.net = nn.Sequential(
            nn.Conv2d(channels, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(32 * height * width, features),
            nn.ReLU(),
        )
        self.out_dim = features

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(as_float(obs))


#: Frames from this size up get NatureCNN (its three strided convolutions need at least 36 x 36).
NATURE_CNN_MIN_SIZE = 36


def image_encoder(obs_shape: Sequence[int], features: int = 512) -> nn.Module:
    """NatureCNN for frames (Atari's; `features` wide), the small CNN for boards (Snake's, MinAtar's)."""
    if min(obs_shape[1:]) >= NATURE_CNN_MIN_SIZE:
        return NatureCNN(obs_shape, features)
    return CNNEncoder(obs_shape)


#: The features each image of a Dict observation gives (SB3's CombinedExtractor: cnn_output_dim=256).
PART_CNN_FEATURES = 256


class CombinedEncoder(nn.Module):
    """SB3's CombinedExtractor over a Dict or Tuple observation held as one flat vector (`parts`:
    envs/pipeline.py's ObservationPart, in gymnasium's flatten order): each image part through a CNN of its own
    (NatureCNN with 256 features from 36 x 36 up, the small CNN below; channels-last images turned channels
    first, bytes scaled to [0, 1]), every other part as it is (one-hot already), all concatenated."""

    def __init__(self, parts: Sequence) -> None:
        super().__init__()
        self.parts = tuple(parts)
        self.cnns = nn.ModuleList(
            image_encoder(self.channels_first(part.shape, part.channels_last), PART_CNN_FEATURES)
            for part in self.parts
            if part.is_image
        )
        cnn_width = sum(cnn.out_dim for cnn in self.cnns)
        self.out_dim = cnn_width + sum(part.size for part in self.parts if not part.is_image)

    @staticmethod
    def channels_first(shape: Sequence[int], channels_last: bool) -> tuple[int, ...]:
        return (shape[2], shape[0], shape[1]) if channels_last else tuple(shape)

    def forward(self, flat: torch.Tensor) -> torch.Tensor:
        features, start, cnns = [], 0, iter(self.cnns)
        for part in self.parts:
            stretch = flat[:, start : start + part.size]
            start += part.size
            if not part.is_image:
                features.append(stretch)
                continue
            image = stretch.reshape(-1, *part.shape)  # -1, not len(): the batch stays symbolic in an export
            image = image.permute(0, 3, 1, 2) if part.channels_last else image
            features.append(next(cnns)(image / 255.0 if part.dtype == "uint8" else image))
        return torch.cat(features, -1)


def gumbel_max(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A draw from softmax(logits) and its log-probability. Gumbel-max: argmax(log p - log E), E ~ Exp(1), draws
    from p; cheaper than torch.multinomial at small batches."""
    log_p = logits.log_softmax(-1)
    action = (log_p - torch.empty_like(log_p).exponential_().log_()).argmax(-1)
    return action, log_p.gather(-1, action.unsqueeze(-1)).squeeze(-1)


class MLPEncoder(nn.Module):
    def __init__(self, obs_shape: Sequence[int], hidden: Sequence[int], activation: str) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), mlp([math.prod(obs_shape), *hidden], activation))
        self.out_dim = hidden[-1] if hidden else math.prod(obs_shape)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)


def front_encoder(parts: Sequence | FeatureExtractor, obs_shape: Sequence[int]) -> nn.Module:
    """What reads the observation before the MLPs: a feature extractor of the user's own, or for a Dict observation
    with images its CombinedEncoder (`parts`)."""
    return parts.build(obs_shape) if isinstance(parts, FeatureExtractor) else CombinedEncoder(parts)


class MultiInputEncoder(nn.Module):
    """A front encoder (a Dict observation's CNNs per image, or the user's feature extractor), then an MLP of
    `hidden` (SB3's MultiInputPolicy, or its features_extractor_class)."""

    def __init__(
        self, parts: Sequence | FeatureExtractor, hidden: Sequence[int], activation: str, obs_shape: Sequence[int]
    ) -> None:
        super().__init__()
        self.combined = front_encoder(parts, obs_shape)
        self.mlp = mlp([self.combined.out_dim, *hidden], activation)
        self.out_dim = hidden[-1] if hidden else self.combined.out_dim

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.combined(obs))


def make_encoder(obs_shape: Sequence[int], hidden: Sequence[int], activation: str, parts: Sequence | None = None) -> nn.Module:
    """A CNN for an image, an MLP for a vector; for a Dict observation with images (`parts`), CNNs per image and
    the MLP after them."""
    if parts:
        return MultiInputEncoder(parts, hidden, activation, obs_shape)
    return image_encoder(obs_shape) if is_image(obs_shape) else MLPEncoder(obs_shape, hidden, activation)


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

    def scale(self, unit: torch.Tensor) -> torch.Tensor:
        """An action in [-1, 1] rescaled to the bounds: low + (unit + 1) / 2 * (high - low)."""
        return self.low + (unit + 1.0) * 0.5 * (self.high - self.low)


class TwinTowers(nn.Module):
    """Two MLPs of the same shape on the same input (policy and value), computed as one.

    The input layers sit side by side in one matmul; each later layer is one batched matmul of the
    two blocks. The function is exactly that of two separate MLPs, in about half the kernel launches,
    and launches are what a small net's update costs on a CPU. `forward` returns (policy features,
    value features); `actor_critic_backward.py` differentiates the same layers by hand.
    """

    def __init__(self, in_dim: int, hidden: Sequence[int], activation: str) -> None:
        super().__init__()
        self.hidden = tuple(hidden)
        self.activation = activation
        self.activate = ACTIVATION_FUNCTIONS[activation]
        #: Both towers' first layers, side by side: output (B, 2 * hidden[0]), policy half first.
        self.input_layer = nn.Linear(in_dim, 2 * hidden[0])
        #: Later layers, one (2, n_in, n_out) block per layer: [0] the policy tower's, [1] the value tower's.
        self.weights = nn.ParameterList(
            nn.Parameter(torch.empty(2, n_in, n_out)) for n_in, n_out in itertools.pairwise(hidden)
        )
        self.biases = nn.ParameterList(nn.Parameter(torch.zeros(2, 1, n_out)) for n_out in hidden[1:])
        self.out_dim = hidden[-1]
        self._register_load_state_dict_pre_hook(_rename_first_layer)

    def init_default(self) -> None:
        """Every layer as torch's nn.Linear starts: weights and biases uniform in +-1/sqrt(inputs) (SB3's
        ortho_init=False)."""
        with torch.no_grad():
            for layer, (weight, bias) in enumerate(
                ((self.input_layer.weight, self.input_layer.bias), *zip(self.weights, self.biases, strict=True))
            ):
                bound = 1.0 / math.sqrt(self.input_layer.in_features if layer == 0 else weight.shape[1])
                nn.init.uniform_(weight, -bound, bound)
                nn.init.uniform_(bias, -bound, bound)

    def init(self, gain: float) -> None:
        width = self.hidden[0]
        with torch.no_grad():
            for tower in (self.input_layer.weight[:width], self.input_layer.weight[width:]):
                nn.init.orthogonal_(tower, gain)
            nn.init.zeros_(self.input_layer.bias)
            for weight in self.weights:
                for block in weight:
                    nn.init.orthogonal_(block, gain)

    @property
    def out_dims(self) -> tuple[int, int]:
        return self.out_dim, self.out_dim

    def layers(self, index: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """One tower's layers as nn.Linear holds them, (weight (out, in), bias): 0 the policy's, 1 the value's."""
        rows = slice(index * self.hidden[0], (index + 1) * self.hidden[0])
        first = (self.input_layer.weight[rows], self.input_layer.bias[rows])
        return [first, *((weight[index].T, bias[index, 0]) for weight, bias in zip(self.weights, self.biases, strict=True))]

    def tower_major(self, x: torch.Tensor) -> torch.Tensor:
        """(B, 2h) side-by-side input-layer outputs as (2, B, h)."""
        return x.view(x.shape[0], 2, self.hidden[0]).transpose(0, 1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        layer = self.input_layer
        x = self.tower_major(self.activate(torch.addmm(layer.bias, obs.flatten(1), layer.weight.T)))
        for weight, bias in zip(self.weights, self.biases, strict=True):
            x = self.activate(torch.baddbmm(bias, x, weight))
        return x[0], x[1]

    def tower(self, obs: torch.Tensor, index: int) -> torch.Tensor:
        """One tower alone: 0 the policy's (acting and export need no value), 1 the value's."""
        width = self.hidden[0]
        rows = slice(0, width) if index == 0 else slice(width, 2 * width)
        x = self.activate(nn.functional.linear(obs.flatten(1), self.input_layer.weight[rows], self.input_layer.bias[rows]))
        for weight, bias in zip(self.weights, self.biases, strict=True):
            x = self.activate(torch.addmm(bias[index], x, weight[index]))
        return x


class SplitTowers(nn.Module):
    """Policy and value MLPs of different sizes (SB3's net_arch=dict(pi=[...], vf=[...]) with two lists): two plain
    MLPs behind TwinTowers' interface, without its one-matmul speed (the speed layer's forms need TwinTowers)."""

    def __init__(self, in_dim: int, hidden: Sequence[int], vf_hidden: Sequence[int], activation: str) -> None:
        super().__init__()
        self.hidden, self.vf_hidden, self.activation = tuple(hidden), tuple(vf_hidden), activation
        self.pi = mlp([in_dim, *hidden], activation)
        self.vf = mlp([in_dim, *vf_hidden], activation)

    @property
    def out_dims(self) -> tuple[int, int]:
        return self.hidden[-1], self.vf_hidden[-1]

    def init(self, gain: float) -> None:
        orthogonal_init(self, gain)

    def init_default(self) -> None:
        """torch's own nn.Linear initialisation, which the layers already have."""

    def layers(self, index: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [(layer.weight, layer.bias) for layer in (self.pi, self.vf)[index] if isinstance(layer, nn.Linear)]

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.pi(obs.flatten(1)), self.vf(obs.flatten(1))

    def tower(self, obs: torch.Tensor, index: int) -> torch.Tensor:
        return (self.pi, self.vf)[index](obs.flatten(1))


def _rename_first_layer(state_dict: dict, prefix: str, *args: object) -> None:
    """Checkpoints written before the input layer got its name call it `first`."""
    for suffix in ("weight", "bias"):
        old = f"{prefix}first.{suffix}"
        if old in state_dict:
            state_dict[f"{prefix}input_layer.{suffix}"] = state_dict.pop(old)


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

    def act(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        out = self.net(obs.flatten(1))
        if self.discrete:
            out = masked(out, mask)
            return out, out.argmax(-1)
        return torch.clamp(out, self.low, self.high)


class ActionHead(BoundsMixin):
    """The policy's distribution over actions, from the policy head's output, for the actor-critics (feed-forward
    and recurrent): a categorical over logits (Discrete), independent categoricals (MultiDiscrete; MultiBinary as
    choices of two), or a diagonal Gaussian (Box) whose log std is learned and state-independent, or with gSDE
    (generalised state-dependent exploration, Raffin et al., 2022; SB3's `use_sde`) state-dependent:

        sigma_j(s)^2 = sum_i z_i(s)^2 exp(2 log_std_ij),   action = mu(s) + z(s) W,   W_ij ~ N(0, exp(log_std_ij)^2)

    with z(s) the policy's last features (detached: the noise does not train them) and W drawn at a rollout's
    start and every `sde_sample_freq` steps (-1: once per rollout), one W per env."""

    nvec: tuple[int, ...] | None
    discrete: bool
    #: gSDE: the width of z(s) (0: a state-independent Gaussian, or discrete actions)
    sde_features: int = 0
    sde_sample_freq: int = -1
    #: gSDE: the exploration weights W, one (features x actions) matrix per env
    exploration: torch.Tensor | None = None

    def init_action_space(self, action_space: Discrete | Box | MultiDiscrete) -> int:
        """Set what kind of actions this policy takes; returns the policy head's width."""
        self.nvec = tuple(action_space.nvec) if isinstance(action_space, MultiDiscrete) else None
        self.discrete = isinstance(action_space, Discrete | MultiDiscrete)
        return sum(self.nvec) if self.nvec else action_space.n if self.discrete else math.prod(action_space.shape)

    def init_log_std(
        self, action_space: Discrete | Box | MultiDiscrete, n_out: int, log_std_init: float, sde_sample_freq: int | None = None
    ) -> None:
        """Box actions: the bounds, and the Gaussian's log std: one per action dimension, or with gSDE (an
        `sde_sample_freq`) one per (feature, action dimension), the features being what `pi_head` reads."""
        if not self.discrete:
            self._set_bounds(action_space)
            if sde_sample_freq is not None:
                self.sde_features, self.sde_sample_freq = self.pi_head.in_features, sde_sample_freq
            shape = (self.sde_features, n_out) if self.sde_features else (n_out,)
            self.log_std = nn.Parameter(torch.full(shape, float(log_std_init)))

    def distribution(self, head_out: torch.Tensor, features: torch.Tensor | None = None) -> Categorical | Normal:
        """The policy's distribution from the policy head's output (argument checks cost more than the math); gSDE
        reads the policy's features too."""
        if self.discrete:
            return Categorical(logits=head_out, validate_args=False)
        if self.sde_features:  # sigma^2 = z^2 exp(log_std)^2, plus SB3's epsilon 1e-6
            variance = features.detach().square() @ (2 * self.log_std).exp()
            return Normal(head_out, (variance + 1e-6).sqrt(), validate_args=False)
        return Normal(head_out, self.log_std.exp().expand_as(head_out), validate_args=False)

    def log_prob_entropy(
        self, head_out: torch.Tensor, actions: torch.Tensor, features: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per sample: log pi(a|s) of `actions` and the policy's entropy, from the (masked) head output (and the
        policy's features, for gSDE)."""
        if self.nvec:  # independent components: log-probs and entropies add up
            dists = [self.distribution(part) for part in head_out.split(self.nvec, -1)]
            log_prob = sum(dist.log_prob(actions[:, i]) for i, dist in enumerate(dists))
            return log_prob, sum(dist.entropy() for dist in dists)
        dist = self.distribution(head_out, features)
        log_prob, entropy = dist.log_prob(actions), dist.entropy()
        if not self.discrete:  # independent action dimensions: log-probs and entropies add up
            log_prob, entropy = log_prob.sum(-1), entropy.sum(-1)
        return log_prob, entropy

    def draw(self, head_out: torch.Tensor, features: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """A sampled action from the (masked) head output and its log-probability (gSDE: mu + z W)."""
        if not self.discrete:
            dist = self.distribution(head_out, features)
            action = head_out + self.sde_noise(features) if self.sde_features else dist.sample()
            return action, dist.log_prob(action).sum(-1)
        if self.nvec:  # one draw per component, log-probabilities added
            drawn = [gumbel_max(part) for part in head_out.split(self.nvec, -1)]
            return torch.stack([a for a, _ in drawn], -1), sum(lp for _, lp in drawn)
        return gumbel_max(head_out)

    def reset_noise(self, n_envs: int) -> None:
        """gSDE: draw new exploration weights W ~ N(0, exp(log_std)^2), one matrix per env."""
        std = self.log_std.detach().exp()
        self.exploration = std * torch.randn((n_envs, *std.shape), device=std.device)

    def resample_noise(self, step: int, n_envs: int) -> None:
        """Before step `step` of a rollout: gSDE's weights are drawn anew at step 0 and every sde_sample_freq steps
        (SB3's schedule); nothing for other policies."""
        if self.sde_features and (step == 0 or (self.sde_sample_freq > 0 and step % self.sde_sample_freq == 0)):
            self.reset_noise(n_envs)

    def sde_noise(self, features: torch.Tensor) -> torch.Tensor:
        """z(s) W for a batch: each env's own W when the batch is the envs', else the first W for every row (as SB3's
        predict); weights drawn first if there are none yet."""
        if self.exploration is None:
            self.reset_noise(features.shape[0])
        z = features.detach()
        if len(z) == len(self.exploration):
            return torch.bmm(z.unsqueeze(1), self.exploration).squeeze(1)
        return z @ self.exploration[0]

    def greedy(
        self, head_out: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """The deterministic policy: (logits, argmax among the allowed actions) for discrete actions, per
        component for MultiDiscrete; the Gaussian's mean clipped to the bounds for Box actions."""
        if self.nvec:
            out = masked(head_out, mask)
            return out, torch.stack([part.argmax(-1) for part in out.split(self.nvec, -1)], -1)
        if self.discrete:
            out = masked(head_out, mask)
            return out, out.argmax(-1)
        return torch.clamp(head_out, self.low, self.high)

    def env_action(self, action: torch.Tensor) -> torch.Tensor:
        """What the env receives: the sample itself (discrete) or the sample clipped to the bounds."""
        return action if self.discrete else torch.clamp(action, self.low, self.high)


class ActorCritic(ActionHead, FlatParameters):
    """Policy and value for A2C and PPO.

    Vector observations get separate policy and value MLPs (SB3's default), computed together as
    TwinTowers; images share one CNN (`uses_cnn`). Actions as ActionHead describes; Gaussian samples are
    clipped to the bounds before they reach the env.
    """

    def __init__(
        self,
        obs_shape: Sequence[int],
        action_space: Discrete | Box,
        hidden: Sequence[int] = (64, 64),
        activation: str = "tanh",
        log_std_init: float = 0.0,
        parts: Sequence | None = None,
        ortho_init: bool = True,
        vf_hidden: Sequence[int] = (),
        sde_sample_freq: int | None = None,
    ) -> None:
        """`sde_sample_freq`: None for the state-independent Gaussian, else gSDE with new exploration weights every
        this many steps (-1: once per rollout)."""
        super().__init__()
        n_out = self.init_action_space(action_space)
        self.uses_cnn = is_image(obs_shape) and not isinstance(parts, FeatureExtractor)
        self.activation = activation
        #: a Dict observation with images: CNNs per image before the towers (SB3's MultiInputPolicy)
        self.combined = front_encoder(parts, obs_shape) if parts else None
        if self.uses_cnn:
            self.encoder = image_encoder(obs_shape)
        else:
            width = self.combined.out_dim if self.combined else math.prod(obs_shape)
            split = bool(vf_hidden) and tuple(vf_hidden) != tuple(hidden)
            self.towers = SplitTowers(width, hidden, vf_hidden, activation) if split else TwinTowers(width, hidden, activation)
        pi_dim, vf_dim = (self.encoder.out_dim,) * 2 if self.uses_cnn else self.towers.out_dims
        self.pi_head = nn.Linear(pi_dim, n_out)
        self.vf_head = nn.Linear(vf_dim, 1)
        if ortho_init:  # SB3's gains: sqrt(2) for the encoders and towers, 0.01 policy head, 1 value head
            orthogonal_init(self, math.sqrt(2))
            if not self.uses_cnn:
                self.towers.init(math.sqrt(2))
            orthogonal_init(self.pi_head, 0.01)
            orthogonal_init(self.vf_head, 1.0)
        elif not self.uses_cnn:  # torch's defaults throughout (the other layers have them from their constructors)
            self.towers.init_default()
        self.init_log_std(action_space, n_out, log_std_init, sde_sample_freq)
        self.flatten_parameters()

    def features(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(policy features, value features) of `obs`."""
        if self.uses_cnn:
            shared = self.encoder(obs)
            return shared, shared
        return self.towers(self.combined(obs) if self.combined else obs)

    def tower(self, obs: torch.Tensor, index: int) -> torch.Tensor:
        """One side's features: 0 the policy's, 1 the value's."""
        if self.uses_cnn:
            return self.encoder(obs)
        return self.towers.tower(self.combined(obs) if self.combined else obs, index)

    def evaluate_actions(
        self, obs: torch.Tensor, actions: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per sample: log pi(a|s) of `actions`, the policy's entropy, and V(s); differentiable (SB3's name).
        With an action `mask` the distribution is over the allowed actions only (sb3-contrib's MaskablePPO)."""
        pi_features, vf_features = self.features(obs)
        log_prob, entropy = self.log_prob_entropy(masked(self.pi_head(pi_features), mask), actions, pi_features)
        return log_prob, entropy, self.vf_head(vf_features).squeeze(-1)

    @torch.no_grad()
    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """V(s), for bootstrapping (no gradient)."""
        return self.vf_head(self.tower(obs, 1)).squeeze(-1)

    @torch.no_grad()
    def sample(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A sampled action (among those `mask` allows), its log-probability and the value of `obs`: what a
        rollout records per step."""
        pi_features, vf_features = self.features(obs)
        head_out = masked(nn.functional.linear(pi_features, self.pi_head.weight, self.pi_head.bias), mask)
        value = nn.functional.linear(vf_features, self.vf_head.weight, self.vf_head.bias).squeeze(-1)
        return (*self.draw(head_out, pi_features), value)

    def act(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        return self.greedy(self.pi_head(self.tower(obs, 0)), mask)

    def policy_mlp(self) -> ActingMLP:
        """The policy tower and head as a plain ActingMLP whose `act` equals this one's (vector observations)."""
        if self.uses_cnn or self.nvec or self.combined:
            raise ValueError("policy_mlp needs vector observations and one action; other policies are exported as they are")
        layers = self.towers.layers(0)
        space = (
            Discrete(self.pi_head.out_features)
            if self.discrete
            else Box(tuple(self.low.flatten().tolist()), tuple(self.high.flatten().tolist()), tuple(self.low.shape))
        )
        sizes = [layers[0][0].shape[1], *(weight.shape[0] for weight, _ in layers), self.pi_head.out_features]
        acting = ActingMLP(sizes, self.activation, space)
        linears = [m for m in acting.net if isinstance(m, nn.Linear)]
        with torch.no_grad():
            for layer, (weight, bias) in zip(linears, [*layers, (self.pi_head.weight, self.pi_head.bias)], strict=True):
                layer.weight.copy_(weight)
                layer.bias.copy_(bias)
        return acting.to(self.pi_head.weight.device)


class QNetwork(FlatParameters):
    """Q-values of every discrete action (DQN)."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        n_actions: int,
        hidden: Sequence[int] = (64, 64),
        parts: Sequence | None = None,
        activation: str = "relu",
    ) -> None:
        super().__init__()
        self.encoder = make_encoder(obs_shape, hidden, activation, parts)
        self.head = nn.Linear(self.encoder.out_dim, n_actions)
        self.flatten_parameters()

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(obs))

    def act(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        q_values = masked(self(obs), mask)  # the greedy action among those `mask` allows
        return q_values, q_values.argmax(-1)


LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
#: SB3's (and CleanRL's) epsilon in SAC's tanh correction, log pi(a | s) = log N(u) - sum log(1 - tanh(u)^2 + eps):
#: it bounds the correction where tanh saturates (float32's tanh is exactly 1 past |u| ~ 9).
SQUASH_EPSILON = 1e-6


class SquashedGaussianActor(BoundsMixin, FlatParameters):
    """SAC's policy: a Gaussian squashed by tanh, then rescaled from [-1, 1] to the env's bounds."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        action_space: Box,
        hidden: Sequence[int] = (256, 256),
        parts: Sequence | None = None,
        activation: str = "relu",
    ) -> None:
        super().__init__()
        self._set_bounds(action_space)
        n_out = math.prod(action_space.shape)
        self.encoder = make_encoder(obs_shape, hidden, activation, parts)
        self.mu = nn.Linear(self.encoder.out_dim, n_out)
        self.log_std = nn.Linear(self.encoder.out_dim, n_out)
        self.flatten_parameters()

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action in the env's bounds and its log-probability (tanh-corrected)."""
        features = self.encoder(obs)
        mu = self.mu(features)
        log_std = self.log_std(features).clamp(LOG_STD_MIN, LOG_STD_MAX)
        u = mu + log_std.exp() * torch.randn_like(mu)
        squashed = torch.tanh(u)
        log_prob = Normal(mu, log_std.exp(), validate_args=False).log_prob(u)
        log_prob = log_prob - torch.log(1.0 - squashed.square() + SQUASH_EPSILON)  # tanh's change of variables, SB3's form
        return self.scale(squashed), log_prob.sum(-1)

    def act(self, obs: torch.Tensor) -> torch.Tensor:
        return self.scale(torch.tanh(self.mu(self.encoder(obs))))


class QCritics(FlatParameters):
    """n Q(s, a) critics on the same input, evaluated together (TD3's two, DDPG's one). Each reads the action in
    [-1, 1], as SB3's critics do: a_unit = (a - c) / h, c = (high + low) / 2 and h = (high - low) / 2 of the env's
    bounds (the callers pass actions in the env's units)."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        action_space: Box,
        hidden: Sequence[int] = (256, 256),
        n_critics: int = 2,
        parts: Sequence | None = None,
        activation: str = "relu",
    ) -> None:
        super().__init__()
        n_act = math.prod(action_space.shape)
        encoded = is_image(obs_shape) or bool(parts)  # a CNN (per image part) of each critic's own
        self.encoders = nn.ModuleList(
            make_encoder(obs_shape, (), "relu", parts) if encoded else nn.Flatten() for _ in range(n_critics)
        )
        in_dim = (self.encoders[0].out_dim if encoded else math.prod(obs_shape)) + n_act
        self.qs = nn.ModuleList(mlp([in_dim, *hidden, 1], activation, last_activation=False) for _ in range(n_critics))
        low, high = (torch.tensor(bound, dtype=torch.float32).reshape(-1) for bound in (action_space.low, action_space.high))
        self.register_buffer("action_centre", (high + low) / 2)
        self.register_buffer("action_half", (high - low) / 2)
        #: bounds of +-1 (the MuJoCo robots'): a_unit is a, and the critics skip the two ops per call
        self.unit_bounds = bool((low == -1).all() and (high == 1).all())
        self._register_load_state_dict_pre_hook(_critics_on_unit_actions, with_module=True)
        self.flatten_parameters()

    def unit(self, action: torch.Tensor) -> torch.Tensor:
        """An action in the env's units as the critics read it, in [-1, 1]: (a - c) / h."""
        return action if self.unit_bounds else (action - self.action_centre) / self.action_half

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, ...]:
        unit = self.unit(action)
        return tuple(
            q_net(torch.cat([encoder(obs), unit], -1)).squeeze(-1)
            for encoder, q_net in zip(self.encoders, self.qs, strict=True)
        )

    def smallest(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """min_i Q_i(s, a): the pessimistic estimate targets and actors use (clipped double Q)."""
        return torch.stack(self(obs, action)).min(0).values


def _critics_on_unit_actions(module: QCritics, state_dict: dict, prefix: str, *args: object) -> None:
    """Checkpoints written before the critics read actions in [-1, 1] (no `action_half`) hold first layers for
    the env's units, a = c + h a_unit: W [x, a] + b = [W_x, h W_a] [x, a_unit] + (b + W_a c), the same Q(s, a)."""
    if f"{prefix}action_half" in state_dict:
        return
    for i in range(len(module.qs)):
        weight_key, bias_key = f"{prefix}qs.{i}.0.weight", f"{prefix}qs.{i}.0.bias"
        weight = state_dict[weight_key]
        centre, half = (bound.to(weight.device) for bound in (module.action_centre, module.action_half))
        on_action = weight[:, -len(half) :]
        state_dict[weight_key] = torch.cat([weight[:, : -len(half)], on_action * half], 1)
        state_dict[bias_key] = state_dict[bias_key] + on_action @ centre
    state_dict[f"{prefix}action_centre"] = module.action_centre.detach().clone()
    state_dict[f"{prefix}action_half"] = module.action_half.detach().clone()


class TwinQ(QCritics):
    """SAC's two critics (the written-out and compiled SAC updates know this layout)."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        action_space: Box,
        hidden: Sequence[int] = (256, 256),
        parts: Sequence | None = None,
        activation: str = "relu",
    ) -> None:
        super().__init__(obs_shape, action_space, hidden, n_critics=2, parts=parts, activation=activation)


class DeterministicActor(BoundsMixin, FlatParameters):
    """TD3's and DDPG's policy: mu(s) = tanh(MLP(s)) in [-1, 1], rescaled to the env's bounds."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        action_space: Box,
        hidden: Sequence[int] = (400, 300),
        parts: Sequence | None = None,
        activation: str = "relu",
    ) -> None:
        super().__init__()
        self._set_bounds(action_space)
        self.encoder = make_encoder(obs_shape, hidden, activation, parts)
        self.mu = nn.Linear(self.encoder.out_dim, math.prod(action_space.shape))
        self.flatten_parameters()

    def unit_action(self, obs: torch.Tensor) -> torch.Tensor:
        """The action in [-1, 1] (where exploration and smoothing noise are added)."""
        return torch.tanh(self.mu(self.encoder(obs)))

    def act(self, obs: torch.Tensor) -> torch.Tensor:
        return self.scale(self.unit_action(obs))
