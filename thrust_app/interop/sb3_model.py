"""Stable-Baselines3 model files read without unpickling, and their deterministic policies rebuilt in torch.

An SB3 `.zip` (from `model.save(path)`) holds `policy.pth`, the weights, which
`torch.load(weights_only=True)` reads without running code, and `data`, a JSON file whose spaces,
schedules and classes are cloudpickled — but beside each pickle SB3 writes readable copies of its
main fields (a space's `_shape`, the activation's class name). Thrust reads the weights and those
readable fields only; the env's own spaces come from the env id the user names.

Supported: PPO and A2C (`MlpPolicy`, and `CnnPolicy` for Atari's frame stacks: SB3's NatureCNN, rebuilt
as Thrust's own), DQN (both), SAC and TD3 (`MlpPolicy`) over Box observations. What SB3's
`predict(obs, deterministic=True)` does after the network is done here too: argmax for discrete
actions, clipping to the bounds for the Gaussian policies of PPO/A2C, tanh squashing (SAC) and
rescaling to the bounds (SAC, TD3). `VecNormalize` statistics (their own pickle file, read with
`safe_pickle`) become the policy's first layer: `clip((obs - mean) / sqrt(var + eps), -clip, clip)`.
"""

from __future__ import annotations

import io
import json
import math
import os
import pickle
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..envs.core import Box, Discrete, MultiDiscrete
from ..envs.pipeline import parted_space
from ..nets.obs_normalizer import NormalizedPolicy, ObsNormalizer
from ..nets.policies import CombinedEncoder, NatureCNN, masked
from ..nets.recurrent import RecurrentActorCritic
from .manifest import BundleError
from .safe_pickle import UnsafePickleError, safe_load

ACTIVATIONS: dict[str, type[nn.Module]] = {
    "Tanh": nn.Tanh,
    "ReLU": nn.ReLU,
    "ELU": nn.ELU,
    "LeakyReLU": nn.LeakyReLU,
    "GELU": nn.GELU,
    "SiLU": nn.SiLU,
    "Sigmoid": nn.Sigmoid,
}
#: SB3's default activation per algorithm (used when the saved policy_kwargs name none).
DEFAULT_ACTIVATION = {"ppo": "Tanh", "a2c": "Tanh", "recurrent_ppo": "Tanh", "dqn": "ReLU", "sac": "ReLU", "td3": "ReLU"}
#: SB3's policy class per algorithm, for the optional check against SB3 itself.
#: sb3-contrib's MaskablePPO: PPO's network, its logits masked by the env's action masks.
MASKABLE_POLICIES = "sb3_contrib.common.maskable.policies"
#: sb3-contrib's RecurrentPPO: features, an LSTM (the critic's own, shared or none), then PPO's MLPs and heads.
RECURRENT_POLICIES = "sb3_contrib.common.recurrent.policies"
#: Observation spaces whose models Thrust imports: SB3 one-hots Discrete parts and concatenates a Dict's vector
#: parts (CombinedExtractor), as Thrust's flattening does (envs/pipeline.py), so the first layer fits as it is.
FLAT_OBSERVATIONS = ("Box", "Discrete", "MultiDiscrete", "MultiBinary", "Dict")
#: Each algorithm's first layer after the features (what a flat observation goes into).
FIRST_LAYERS = (
    "mlp_extractor.policy_net.0.weight",
    "q_net.q_net.0.weight",
    "actor.latent_pi.0.weight",
    "actor.mu.0.weight",
    "lstm_actor.weight_ih_l0",
)
SB3_CNN_POLICY_CLASSES = {
    "ppo": "stable_baselines3.common.policies.ActorCriticCnnPolicy",
    "a2c": "stable_baselines3.common.policies.ActorCriticCnnPolicy",
    "dqn": "stable_baselines3.dqn.policies.CnnPolicy",
    "recurrent_ppo": f"{RECURRENT_POLICIES}.RecurrentActorCriticCnnPolicy",
}
#: SB3's policy class for a Dict observation with images (CombinedExtractor), per algorithm.
SB3_MULTI_INPUT_POLICY_CLASSES = {
    "ppo": "stable_baselines3.common.policies.MultiInputActorCriticPolicy",
    "a2c": "stable_baselines3.common.policies.MultiInputActorCriticPolicy",
    "dqn": "stable_baselines3.dqn.policies.MultiInputPolicy",
}
SB3_POLICY_CLASSES = {
    "ppo": "stable_baselines3.common.policies.ActorCriticPolicy",
    "a2c": "stable_baselines3.common.policies.ActorCriticPolicy",
    "dqn": "stable_baselines3.dqn.policies.DQNPolicy",
    "sac": "stable_baselines3.sac.policies.SACPolicy",
    "td3": "stable_baselines3.td3.policies.TD3Policy",
    "recurrent_ppo": f"{RECURRENT_POLICIES}.RecurrentActorCriticPolicy",
}


class SB3FormatError(BundleError):
    """The file is not an SB3 model Thrust can import; the message says what is missing."""


@dataclass
class SB3Model:
    """What Thrust read from an SB3 zip."""

    path: Path
    algo: str  #: ppo, a2c, dqn, sac or td3
    sb3_version: str
    data: dict[str, Any]  #: the `data` JSON (pickled entries left as they are, never unpickled)
    weights: dict[str, torch.Tensor]

    @property
    def policy_kwargs(self) -> dict[str, Any]:
        kwargs = self.data.get("policy_kwargs") or {}
        return {key: value for key, value in kwargs.items() if not key.startswith(":")}

    @property
    def activation(self) -> str:
        """The class name of the hidden layers' activation, from the readable policy_kwargs."""
        named = self.policy_kwargs.get("activation_fn")
        if named is None:
            return DEFAULT_ACTIVATION[self.algo]
        match = re.search(r"\.(\w+)'>$", str(named))
        name = match.group(1) if match else str(named)
        if name not in ACTIVATIONS:
            raise SB3FormatError(f"{self.path}: the policy uses activation {named}; Thrust imports {', '.join(ACTIVATIONS)}")
        return name

    @property
    def observation_kind(self) -> str:
        """The observation space's class name (Box, Discrete, Dict, ...), from the readable `:type:` field."""
        return str(self.space_field("observation_space", ":type:") or "").rsplit(".", 1)[-1].rstrip("'>")

    @property
    def maskable(self) -> bool:
        """True for sb3-contrib's MaskablePPO (its policy class's module)."""
        return str((self.data.get("policy_class") or {}).get("__module__", "")) == MASKABLE_POLICIES

    @property
    def uses_cnn(self) -> bool:
        """True for a CnnPolicy model (SB3's NatureCNN: `...features_extractor.cnn.*` weights)."""
        return any((".cnn." in key or key.startswith("cnn.")) and not self.is_extractor(key) for key in self.weights)

    @property
    def multi_input_images(self) -> bool:
        """True for a MultiInputPolicy model with an image key (a NatureCNN per image in its CombinedExtractor)."""
        return any(self.is_extractor(key) and ".cnn." in key for key in self.weights)

    @staticmethod
    def is_extractor(key: str) -> bool:
        return ".extractors." in key

    def space_field(self, space: str, field: str) -> str | None:
        entry = self.data.get(space)
        return entry.get(field) if isinstance(entry, dict) else None


def read_sb3_zip(path: str | Path) -> SB3Model:
    """The weights and readable fields of an SB3 model file; nothing in it is unpickled, and no member is
    inflated past `max_member_bytes()`. Anything else than a model file is one SB3FormatError naming the
    file and the member."""
    path = Path(path)
    if not zipfile.is_zipfile(path):
        raise SB3FormatError(f"{path} is not an SB3 model file (a .zip written by model.save); check the path")
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            missing = {"data", "policy.pth"} - names
            if missing:
                raise SB3FormatError(f"{path} has no {' or '.join(sorted(missing))}: not a Stable-Baselines3 model file")
            data = _read_data(path, read_member(archive, path, "data"))
            weights = _read_weights(path, read_member(archive, path, "policy.pth"))
            version_file = "_stable_baselines3_version"
            version = (
                read_member(archive, path, version_file).decode(errors="replace").strip() if version_file in names else "?"
            )
    except (zipfile.BadZipFile, OSError) as err:  # a damaged archive: CRC errors, truncated members
        raise SB3FormatError(f"{path} is a damaged zip ({str(err).splitlines()[0]}): not a readable model file") from None
    model = SB3Model(path, _identify(path, data, weights), version, data, weights)
    _refuse_unsupported(model)
    return model


#: The most bytes one member of an imported zip may inflate to (an SB3 policy.pth is a few MB, an Atari
#: CNN's under 20 MB); a member past it is refused before it fills memory. THRUST_IMPORT_MAX_MB raises it.
MAX_MEMBER_MB = 512


def max_member_bytes() -> int:
    """The limit on one inflated member, in bytes: MAX_MEMBER_MB, or the THRUST_IMPORT_MAX_MB environment setting."""
    setting = os.environ.get("THRUST_IMPORT_MAX_MB", str(MAX_MEMBER_MB))
    if not setting.isdigit() or int(setting) < 1:
        raise SB3FormatError(f"THRUST_IMPORT_MAX_MB must be a whole number of megabytes >= 1, got {setting!r}")
    return int(setting) * 2**20


def read_member(archive: zipfile.ZipFile, path: Path, name: str) -> bytes:
    """One member's bytes, inflated a megabyte at a time and refused once past the limit (its declared size is
    checked first, but a zip can declare less than it holds)."""
    limit = max_member_bytes()
    refusal = (
        f"{path}: {name} inflates to more than {limit // 2**20:,} MB, the limit for an imported file's member; "
        "if you trust the file, raise it with THRUST_IMPORT_MAX_MB"
    )
    info = archive.getinfo(name)
    if info.file_size > limit:
        raise SB3FormatError(refusal)
    chunks, total = [], 0
    with archive.open(info) as member:
        while chunk := member.read(2**20):
            total += len(chunk)
            if total > limit:
                raise SB3FormatError(refusal)
            chunks.append(chunk)
    return b"".join(chunks)


def _read_data(path: Path, raw: bytes) -> dict[str, Any]:
    """SB3's `data` member: a JSON object."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SB3FormatError(f"{path}: its data member is not JSON ({err}); not a Stable-Baselines3 model file") from None
    if not isinstance(data, dict):
        raise SB3FormatError(f"{path}: its data member is a JSON {type(data).__name__}, not an object: not an SB3 model file")
    return data


def _read_weights(path: Path, raw: bytes) -> dict[str, torch.Tensor]:
    """SB3's `policy.pth`: a state dict of tensors, read with `weights_only=True` (nothing is unpickled)."""
    try:
        weights = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:  # never pass on torch's advice to load with weights_only=False
        raise SB3FormatError(
            f"{path}: its policy.pth holds objects other than tensors, which Thrust never unpickles"
        ) from None
    except Exception as err:  # EOFError, RuntimeError, ...: torch's many ways of saying "not a torch file"
        reason = str(err).strip().splitlines()[0][:160] if str(err).strip() else type(err).__name__
        raise SB3FormatError(f"{path}: its policy.pth is not a readable torch file ({reason})") from None
    if not isinstance(weights, dict) or not all(torch.is_tensor(v) for v in weights.values()):
        raise SB3FormatError(f"{path}: its policy.pth holds a {type(weights).__name__}, not a state dict of tensors")
    return weights


def _identify(path: Path, data: dict[str, Any], weights: dict[str, torch.Tensor]) -> str:
    module = str((data.get("policy_class") or {}).get("__module__", ""))
    if "lstm_actor.weight_ih_l0" in weights:
        return "recurrent_ppo"
    if module.startswith("sb3_contrib") and module != MASKABLE_POLICIES:
        raise SB3FormatError(
            f"{path} comes from sb3-contrib ({module}); Thrust imports SB3's PPO, A2C, DQN, SAC and TD3 and "
            "sb3-contrib's MaskablePPO and RecurrentPPO"
        )
    if "q_net.q_net.0.weight" in weights:
        return "dqn"
    if "actor.latent_pi.0.weight" in weights and "actor.mu.weight" in weights:
        return "sac"
    if "actor.mu.0.weight" in weights:
        return "td3"
    if "action_net.weight" in weights:
        return "ppo" if "clip_range" in data else "a2c"
    raise SB3FormatError(
        f"{path}: unrecognised SB3 policy (weights {sorted(weights)[:4]}...); Thrust imports MlpPolicy models"
    )


def _refuse_unsupported(model: SB3Model) -> None:
    where = model.path
    kind = model.observation_kind
    if kind not in FLAT_OBSERVATIONS:
        raise SB3FormatError(
            f"{where} observes a {kind or 'unknown'} space; Thrust imports models of Box, Discrete, MultiDiscrete, "
            "MultiBinary and Dict (of vectors) observations: not supported"
        )
    if model.multi_input_images and model.algo not in ("ppo", "a2c", "dqn"):
        raise SB3FormatError(f"{where}: a {model.algo} MultiInputPolicy with an image key; Thrust imports PPO, A2C, DQN ones")
    if model.uses_cnn and model.algo not in SB3_CNN_POLICY_CLASSES:
        raise SB3FormatError(f"{where} is a {model.algo} CnnPolicy model; Thrust imports CnnPolicy models of PPO, A2C and DQN")
    if model.policy_kwargs.get("features_extractor_class") is not None:
        raise SB3FormatError(f"{where} uses a custom features extractor; Thrust imports SB3's MlpPolicy and CnnPolicy only")
    model.activation  # noqa: B018 (raises on an activation Thrust cannot rebuild)
    if model.algo == "recurrent_ppo" and model.activation not in ("Tanh", "ReLU"):
        raise SB3FormatError(f"{where} is a RecurrentPPO model with {model.activation}; Thrust rebuilds Tanh and ReLU ones")


def check_spaces(model: SB3Model, obs_space: Box, action_space: Box | Discrete, env_id: str) -> None:
    """The model was trained on spaces like the env's, or one line saying how they differ."""
    if model.multi_input_images:  # CNNs per image key: rebuilding them on the env's parts checks every shape
        return _check_action_space(model, action_space, env_id)
    if model.observation_kind != "Box":  # one-hot and concatenated by SB3 as by Thrust: the first layer's width
        width = next(w.shape[1] for key, w in model.weights.items() if key in FIRST_LAYERS)
        if width != math.prod(obs_space.shape):
            raise SB3FormatError(
                f"{model.path} takes {width} inputs after SB3's preprocessing of its {model.observation_kind} "
                f"observations, but {env_id}'s flatten to {math.prod(obs_space.shape)}: a different env"
            )
        return _check_action_space(model, action_space, env_id)
    saved_shape = model.space_field("observation_space", "_shape")
    if isinstance(saved_shape, str):
        saved_shape = [int(n) for n in re.findall(r"\d+", saved_shape)]
    if saved_shape is not None and tuple(saved_shape) != tuple(obs_space.shape):
        raise SB3FormatError(
            f"{model.path} observes shape {tuple(saved_shape)} but {env_id} gives {tuple(obs_space.shape)}: a different env, "
            "or a frame stack / wrapper that Thrust bundles do not support"
        )
    _check_action_space(model, action_space, env_id)


def _check_action_space(model: SB3Model, action_space: Box | Discrete | MultiDiscrete, env_id: str) -> None:
    saved = str(model.space_field("action_space", ":type:") or "").rsplit(".", 1)[-1].rstrip("'>")
    if saved == "MultiBinary":
        raise SB3FormatError(f"{model.path} acts in a MultiBinary space (SB3's Bernoulli per bit): not supported")
    if saved != type(action_space).__name__:
        raise SB3FormatError(f"{model.path} acts in a {saved or 'different'} action space, unlike {env_id}")


def _linear(weights: dict[str, torch.Tensor], name: str) -> nn.Linear:
    weight, bias = weights[f"{name}.weight"], weights[f"{name}.bias"]
    layer = nn.Linear(weight.shape[1], weight.shape[0])
    with torch.no_grad():
        layer.weight.copy_(weight)
        layer.bias.copy_(bias)
    return layer


def _mlp(weights: dict[str, torch.Tensor], prefix: str, activation: type[nn.Module], last_activation: bool) -> nn.Sequential:
    """SB3's `create_mlp` layout: Linear layers at even indices of a Sequential, the activation between."""
    pattern = re.compile(rf"^{re.escape(prefix)}\.(\d+)\.weight$")
    indices = sorted(int(m.group(1)) for key in weights if (m := pattern.match(key)))
    layers: list[nn.Module] = []
    for position, index in enumerate(indices):
        layers.append(_linear(weights, f"{prefix}.{index}"))
        if position < len(indices) - 1 or last_activation:
            layers.append(activation())
    return nn.Sequential(*layers)


class ImportedPolicy(nn.Module):
    """An imported policy's deterministic action in Thrust's `act(obs)` form (what a bundle exports)."""

    def __init__(self, body: nn.Module, head: nn.Module, post: str, action_space: Box | Discrete, normalizer=None) -> None:
        super().__init__()
        self.normalizer = normalizer or nn.Identity()
        self.body, self.head, self.post = body, head, post  # post: argmax | clip | squash | rescale
        #: SB3's MultiCategorical: one argmax per component of these sizes (MultiDiscrete actions)
        self.nvec = tuple(action_space.nvec) if isinstance(action_space, MultiDiscrete) else None
        if isinstance(action_space, Box):
            self.register_buffer("low", torch.tensor(action_space.low, dtype=torch.float32))
            self.register_buffer("high", torch.tensor(action_space.high, dtype=torch.float32))

    def act(self, obs: torch.Tensor, mask: torch.Tensor | None = None):
        out = self.head(self.body(self.normalizer(obs)))
        if self.post == "argmax":  # among the allowed actions, for an env that offers masks (MaskablePPO)
            out = masked(out, mask)
            if self.nvec:
                return out, torch.stack([part.argmax(-1) for part in out.split(self.nvec, -1)], -1)
            return out, out.argmax(-1)
        if self.post == "clip":  # PPO/A2C: the Gaussian's mean, clipped to the bounds
            return torch.maximum(torch.minimum(out, self.high), self.low)
        if self.post == "squash":  # SAC: the mean squashed into [-1, 1]
            out = torch.tanh(out)
        return self.low + 0.5 * (out + 1.0) * (self.high - self.low)  # [-1, 1] -> [low, high]

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None):
        return self.act(obs, mask)


def _nature_cnn_state(weights: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    """SB3's NatureCNN weights under `prefix` under the names of Thrust's NatureCNN (`cnn` -> `convs`)."""
    state = {}
    for key, value in weights.items():
        if key.startswith(f"{prefix}.cnn."):
            state["convs." + key.removeprefix(f"{prefix}.cnn.")] = value
        elif key.startswith(f"{prefix}.linear."):
            state["linear." + key.removeprefix(f"{prefix}.linear.")] = value
    return state


def _nature_cnn(weights: dict[str, torch.Tensor], prefix: str, obs_shape: tuple[int, ...]) -> NatureCNN:
    """SB3's NatureCNN under `prefix` as Thrust's NatureCNN (the same layers)."""
    encoder = NatureCNN(obs_shape, features=weights[f"{prefix}.linear.0.weight"].shape[0])
    encoder.load_state_dict(_nature_cnn_state(weights, prefix))
    return encoder


def _combined(weights: dict[str, torch.Tensor], prefix: str, parts: list) -> CombinedEncoder:
    """SB3's CombinedExtractor under `prefix` as Thrust's CombinedEncoder over the env's parts: the NatureCNN of
    each image key (keys in sorted order on both sides), every other key as it is."""
    images = [part for part in parts if part.is_image]
    if not images:
        raise SB3FormatError("the model reads a Dict with an image key (a NatureCNN each); the env has no image: another env?")
    encoder = CombinedEncoder(parts)
    for part, cnn in zip(images, encoder.cnns, strict=True):
        extractor = f"{prefix}.extractors.{part.name.removeprefix('obs.')}"
        if f"{extractor}.linear.0.weight" not in weights:
            raise SB3FormatError(f"the model has no NatureCNN for the env's image key {part.name[4:]!r}: another env?")
        try:
            cnn.load_state_dict(_nature_cnn_state(weights, extractor))
        except RuntimeError:
            raise SB3FormatError(f"the model's NatureCNN for {part.name[4:]!r} does not fit the env's image") from None
    return encoder


def _features(model: SB3Model, prefix: str, obs_shape: tuple[int, ...], parts: list | None = None) -> nn.Module:
    """What comes before the MLP: SB3's NatureCNN (CnnPolicy; bytes scaled inside), its CombinedExtractor with a
    NatureCNN per image key (MultiInputPolicy), else flattening."""
    if model.multi_input_images:
        return _combined(model.weights, prefix, parts or [])
    return _nature_cnn(model.weights, prefix, obs_shape) if model.uses_cnn else nn.Flatten()


def rebuild_policy(
    model: SB3Model,
    action_space: Box | Discrete,
    normalizer: ObsNormalizer | None,
    obs_shape: tuple[int, ...] = (),
    parts: list | None = None,
) -> ImportedPolicy:
    """The deterministic policy of `model` as a torch module, from its weights alone (`obs_shape`: the
    observations', which a CnnPolicy's encoder is built for; `parts`: a Dict observation's, envs/pipeline.py)."""
    if model.algo == "recurrent_ppo":
        return rebuild_recurrent(model, action_space, normalizer, obs_shape)
    weights, activation = model.weights, ACTIVATIONS[model.activation]
    if model.algo in ("ppo", "a2c"):
        shared = "pi_features_extractor" if "pi_features_extractor.cnn.0.weight" in weights else "features_extractor"
        body = nn.Sequential(
            _features(model, shared, obs_shape, parts),
            _mlp(weights, "mlp_extractor.policy_net", activation, last_activation=True),
        )
        post = "argmax" if isinstance(action_space, Discrete | MultiDiscrete) else "clip"
        return ImportedPolicy(body, _linear(weights, "action_net"), post, action_space, normalizer)
    if model.algo == "dqn":
        body = nn.Sequential(
            _features(model, "q_net.features_extractor", obs_shape, parts), _mlp(weights, "q_net.q_net", activation, False)
        )
        return ImportedPolicy(body, nn.Identity(), "argmax", action_space, normalizer)
    if model.algo == "sac":
        body = nn.Sequential(nn.Flatten(), _mlp(weights, "actor.latent_pi", activation, last_activation=True))
        return ImportedPolicy(body, _linear(weights, "actor.mu"), "squash", action_space, normalizer)
    # TD3: actor.mu is Linear/activation/.../Linear followed by a Tanh (no weights), so [-1, 1] already
    body = nn.Sequential(nn.Flatten(), _mlp(weights, "actor.mu", activation, False), nn.Tanh())
    return ImportedPolicy(body, nn.Identity(), "rescale", action_space, normalizer)


#: sb3-contrib's names of a RecurrentPPO policy's acting parts -> Thrust's RecurrentActorCritic's.
RECURRENT_NAMES = {
    "lstm_actor.": "actor_rnn.",
    "mlp_extractor.policy_net.": "pi_mlp.",
    "action_net.": "pi_head.",
    "log_std": "log_std",
    "features_extractor.cnn.": "encoder.convs.",
    "features_extractor.linear.": "encoder.linear.",
}


def rebuild_recurrent(
    model: SB3Model, action_space: Box | Discrete | MultiDiscrete, normalizer: ObsNormalizer | None, obs_shape: tuple
) -> nn.Module:
    """sb3-contrib's RecurrentPPO policy as Thrust's RecurrentActorCritic (the same layers: features, LSTM, MLP,
    heads), its acting parts loaded; the critic is left out, as acting does not use it."""
    weights = model.weights
    for key in ("lstm_actor.weight_hh_l0", "lstm_actor.bias_ih_l0", "action_net.weight"):
        if key not in weights:
            raise SB3FormatError(f"{model.path}: a recurrent (LSTM) policy without {key}: not one Thrust can rebuild")
    layers = sum(1 for key in weights if re.fullmatch(r"lstm_actor\.weight_ih_l\d+", key))
    pattern = re.compile(r"^mlp_extractor\.policy_net\.(\d+)\.weight$")
    indices = sorted(int(m.group(1)) for key in weights if (m := pattern.match(key)))
    hidden = [weights[f"mlp_extractor.policy_net.{index}.weight"].shape[0] for index in indices]
    net = RecurrentActorCritic(
        obs_shape,
        action_space,
        hidden,
        model.activation.lower(),
        rnn_hidden=weights["lstm_actor.weight_hh_l0"].shape[1],
        rnn_layers=layers,
        critic_rnn="none",
    )
    state = {}
    for key, value in weights.items():
        for theirs, ours in RECURRENT_NAMES.items():
            if key.removeprefix("pi_").startswith(theirs):
                state[ours + key.removeprefix("pi_")[len(theirs) :]] = value
    built = ("vf_", "critic", "low", "high")  # the critic's parts (unused) and the bounds (from the env's space)
    missing = [key for key in net.load_state_dict(state, strict=False).missing_keys if not key.startswith(built)]
    if missing:
        raise SB3FormatError(f"{model.path}: a recurrent (LSTM) policy without {missing[0]}: not one Thrust can rebuild")
    net.eval()
    return net if normalizer is None else NormalizedPolicy(net, normalizer)


def read_vec_normalize(path: str | Path, trust_pickle: bool) -> ObsNormalizer | None:
    """VecNormalize's observation statistics from its pickle (None when it does not normalise observations).

    Read with the safe reader unless `trust_pickle`, which unpickles the file as SB3 does (runs its code)."""
    path = Path(path)
    if zipfile.is_zipfile(path):
        raise SB3FormatError(f"{path} is a zip (a model file?), not the pickle VecNormalize.save() writes")
    try:
        if trust_pickle:
            with open(path, "rb") as file:
                stats = pickle.load(file)  # the user passed --trust-pickle
        else:
            stats = safe_load(path)
    except UnsafePickleError as err:
        raise SB3FormatError(
            f"{path} asks for {err}, which Thrust's safe reader does not build; if you trust the file, "
            "pass --trust-pickle (unpickling runs code from it, as SB3's own loader does)"
        ) from None
    except (pickle.UnpicklingError, EOFError, AttributeError, ModuleNotFoundError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise SB3FormatError(f"{path} is not a VecNormalize file saved by SB3 ({reason})") from None
    rms = getattr(stats, "obs_rms", None)
    if rms is None or not hasattr(rms, "mean") or isinstance(rms, dict):
        raise SB3FormatError(
            f"{path} holds no observation statistics (obs_rms): not a VecNormalize file, or Dict observations"
        )
    if not getattr(stats, "norm_obs", True):
        return None
    return ObsNormalizer(rms.mean, rms.var, float(getattr(stats, "epsilon", 1e-8)), float(getattr(stats, "clip_obs", 10.0)))


def channels_first(space: Any) -> Any:
    """A Dict space with its channels-last images turned channels first, as SB3's VecTransposeImage gives them to
    the policy it trains."""
    import gymnasium as gym

    def turned(part: Any) -> Any:
        if isinstance(part, gym.spaces.Box) and len(part.shape) == 3 and min(part.shape) == part.shape[-1] < part.shape[0]:
            return gym.spaces.Box(part.low.transpose(2, 0, 1), part.high.transpose(2, 0, 1), dtype=part.dtype)
        return part

    return gym.spaces.Dict({key: turned(part) for key, part in space.spaces.items()})


def as_sb3_dict(space: Any, flat: np.ndarray) -> dict[str, np.ndarray]:
    """Flat observations (gymnasium's flatten of `space`) as the batch of Dicts SB3's MultiInputPolicy reads."""
    import gymnasium as gym

    rows = [gym.spaces.unflatten(space, row) for row in flat]
    batch = {key: np.stack([row[key] for row in rows]) for key in space.spaces}
    turned = channels_first(space)
    return {
        key: value if turned[key].shape == space[key].shape else value.transpose(0, 3, 1, 2) for key, value in batch.items()
    }


def sb3_policy_class(model: SB3Model) -> type | None:
    """SB3's (or sb3-contrib's) policy class of `model`; None when the library it needs is not installed."""
    import importlib

    classes = SB3_CNN_POLICY_CLASSES if model.uses_cnn else SB3_POLICY_CLASSES
    classes = SB3_MULTI_INPUT_POLICY_CLASSES if model.multi_input_images else classes
    path = f"{MASKABLE_POLICIES}.MaskableActorCriticPolicy" if model.maskable else classes[model.algo]
    module_name, class_name = path.rsplit(".", 1)
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except ImportError:  # stable-baselines3, or sb3-contrib for MaskablePPO and RecurrentPPO, is not installed
        return None


def sb3_reference(model: SB3Model, env_id: str, normalizer: ObsNormalizer | None, pipeline: Any = None):
    """SB3's own `predict(obs, deterministic=True)` for the model, built from its class, the spaces of the env
    (inside `pipeline`) and the weights (no pickle); None when stable-baselines3 is not installed."""
    from ..envs import make_env

    policy_class = sb3_policy_class(model)
    if policy_class is None:
        return None
    class_name = policy_class.__name__
    kwargs = {
        key: value for key, value in model.policy_kwargs.items() if not isinstance(value, (dict, str)) or key in ("net_arch",)
    }
    kwargs["activation_fn"] = ACTIVATIONS[model.activation]
    if model.data.get("use_sde"):  # gSDE: a log_std per (feature, action); the deterministic action is the mean still
        kwargs["use_sde"] = True
    env = make_env(env_id, pipeline)
    dict_space = parted_space(env) if model.multi_input_images else None
    space = channels_first(dict_space) if dict_space is not None else env.observation_space
    try:
        policy = policy_class(space, env.action_space, lambda _: 0.0, **kwargs)
    finally:
        env.close()
    try:
        policy.load_state_dict(model.weights)
    except RuntimeError as err:
        first = str(err).splitlines()[1].strip() if len(str(err).splitlines()) > 1 else str(err)
        raise SB3FormatError(f"{model.path}: SB3's own {class_name} does not take these weights ({first})") from None
    policy.set_training_mode(False)

    def predict(obs: np.ndarray, masks: np.ndarray | None = None, state: np.ndarray | None = None) -> np.ndarray:
        if normalizer is not None:
            with torch.no_grad():
                obs = normalizer(torch.as_tensor(obs)).numpy()
        if dict_space is not None:  # the flat vector as the Dict SB3 reads, its images channels first
            obs = as_sb3_dict(dict_space, obs)
        if model.maskable:
            return policy.predict(obs, deterministic=True, action_masks=masks)[0]
        if model.algo == "recurrent_ppo":  # Thrust's flat memory (N, (h, c) x layers x hidden) as sb3-contrib's (h, c)
            layers, hidden = policy.lstm_hidden_state_shape[0], policy.lstm_hidden_state_shape[2]
            h, c = state.reshape(len(obs), 2, layers, hidden).transpose(1, 2, 0, 3)
            return policy.predict(obs, state=(h, c), episode_start=np.zeros(len(obs)), deterministic=True)[0]
        return policy.predict(obs, deterministic=True)[0]

    return predict
