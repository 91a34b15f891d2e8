"""A Thrust run as a Stable-Baselines3 model zip: `stable_baselines3.PPO.load(path)` then predicts what Thrust's
policy does. SB3 itself writes the file: the SB3 model is built for the run's env with the run's network
shape, its policy's weights are filled from Thrust's nets (each SB3 name from its Thrust tensor, below), and
`model.save` does the rest, so the zip is exactly SB3's format (its `data` holds SB3's own pickles, which
SB3 writes and reads; Thrust never reads them).

Covered where the architecture maps onto SB3's MlpPolicy: PPO and A2C (Discrete or Box actions), DQN, SAC,
TD3 and DDPG, on vector (Box) observations, without observation normalisation, action masks, memory or image
pipelines; anything else raises SB3ExportError naming why, in one line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch

from ..algos import build_algorithm
from ..algos.base import Algorithm
from ..envs.pipeline import Pipeline
from ..runs.files import LAST_CHECKPOINT, load_checkpoint
from ..training.run_spec import RunSpec, load_spec

#: Thrust's algorithm -> SB3's class name (stable_baselines3.<name>).
SB3_CLASSES = {"ppo": "PPO", "a2c": "A2C", "dqn": "DQN", "sac": "SAC", "td3": "TD3", "ddpg": "DDPG"}


class SB3ExportError(ValueError):
    """A run whose policy has no Stable-Baselines3 counterpart (or SB3 is not installed)."""


def write_sb3_zip(run_dir: str | Path, path: str | Path) -> Path:
    """The run's policy as an SB3 zip at `path`; returns where SB3 wrote it."""
    spec = load_spec(run_dir)
    check_exportable(spec)
    try:
        import stable_baselines3 as sb3
    except ImportError:
        raise SB3ExportError("stable-baselines3 is not installed: `pip install stable-baselines3==2.9.2`") from None
    state = load_checkpoint(Path(run_dir) / LAST_CHECKPOINT)
    algo = build_algorithm(spec.algo, spec.env, spec.config, torch.device("cpu"), spec.seed)
    algo.load_state_dict(state["algo"])
    env = raw_env(spec.env)
    sb3_class = getattr(sb3, SB3_CLASSES[spec.algo])
    sde = {"use_sde": True, "sde_sample_freq": spec.config["sde_sample_freq"]} if spec.config.get("use_sde") else {}
    model = sb3_class("MlpPolicy", env, policy_kwargs=policy_kwargs(spec), device="cpu", seed=spec.seed, **sde)
    env.close()
    weights = dict(sb3_weights(spec.algo, algo))
    own = model.policy.state_dict()
    if set(weights) != set(own) or any(weights[name].shape != own[name].shape for name in own):
        raise SB3ExportError(f"the {spec.algo} network does not map onto SB3's MlpPolicy (names or shapes differ)")
    model.policy.load_state_dict(weights)
    model.num_timesteps = algo.num_timesteps
    model.save(Path(path))
    return Path(path) if Path(path).suffix == ".zip" else Path(f"{path}.zip")


def check_exportable(spec: RunSpec) -> None:
    """SB3's MlpPolicy can hold the run's policy, or SB3ExportError says what it cannot."""
    config = spec.config
    reasons = [
        (spec.algo not in SB3_CLASSES, f"{spec.algo} has no SB3 class here (sb3-contrib's are not written)"),
        (config.get("normalize", False), "the run normalises observations (SB3 keeps those statistics in VecNormalize)"),
        (bool(config.get("features_extractor")), "the run's feature extractor is a module of your own"),
        (Pipeline.of(config) != Pipeline(), "the run's observations pass a pipeline (frame stacks, Atari wrappers)"),
    ]
    for refused, why in reasons:
        if refused:
            raise SB3ExportError(f"no SB3 zip for this run: {why}")
    env = raw_env(spec.env)
    try:
        space = env.observation_space
        if not (isinstance(space, gym.spaces.Discrete) or (isinstance(space, gym.spaces.Box) and len(space.shape) == 1)):
            kind = type(space).__name__
            raise SB3ExportError(f"no SB3 zip for this run: {spec.env}'s observations are a {kind}, not a vector")
        if hasattr(env.unwrapped, "action_masks"):
            raise SB3ExportError(f"no SB3 zip for this run: {spec.env} masks actions (sb3-contrib's MaskablePPO)")
    finally:
        env.close()


def raw_env(env_id: str) -> gym.Env:
    """The env as gymnasium makes it, observations unflattened: SB3 one-hots a Discrete observation itself, as
    Thrust's flattening does, so the first layer's weights mean the same."""
    from ..envs import make_env  # registers Thrust's ids (and Atari's, MinAtar's) with gymnasium first

    make_env(env_id).close()
    return gym.make(env_id)


def policy_kwargs(spec: RunSpec) -> dict[str, Any]:
    """SB3's network arguments for the run's network: the same layer sizes and activation."""
    hidden = list(spec.config["hidden"])
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[spec.config.get("activation", "relu")]
    if spec.algo in ("ppo", "a2c"):
        return {"net_arch": {"pi": hidden, "vf": list(spec.config.get("vf_hidden") or hidden)}, "activation_fn": activation}
    if spec.algo in ("td3", "ddpg"):
        n_critics = spec.config.get("n_critics", 1 if spec.algo == "ddpg" else 2)
        return {"net_arch": hidden, "n_critics": n_critics, "activation_fn": activation}
    return {"net_arch": hidden, "activation_fn": activation}


def sb3_weights(algo_name: str, algo: Algorithm) -> Iterator[tuple[str, torch.Tensor]]:
    """(SB3 policy state-dict name, tensor) for every weight of the SB3 policy: views of the algorithm's own tensors
    (SB3's `load_state_dict` copies them)."""
    parts = algo.stateful_parts()
    if algo_name in ("ppo", "a2c"):
        yield from actor_critic_weights(parts["net"])
    elif algo_name == "dqn":
        yield from linear_stack("q_net.q_net", [*linears(parts["q_net"].encoder), parts["q_net"].head])
        yield from linear_stack("q_net_target.q_net", [*linears(parts["target_net"].encoder), parts["target_net"].head])
    elif algo_name == "sac":
        actor = parts["actor"]
        yield from linear_stack("actor.latent_pi", linears(actor.encoder))
        yield from linear_stack("actor.mu", [actor.mu], step=1)
        yield from linear_stack("actor.log_std", [actor.log_std], step=1)
        yield from critic_weights("critic", parts["critic"])
        yield from critic_weights("critic_target", parts["critic_target"])
    else:  # td3, ddpg
        for name in ("actor", "actor_target"):
            yield from linear_stack(f"{name}.mu", [*linears(parts[name].encoder), parts[name].mu])
        yield from critic_weights("critic", parts["critic"])
        yield from critic_weights("critic_target", parts["critic_target"])


def actor_critic_weights(net: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """PPO's and A2C's ActorCritic: the policy and value towers as SB3's policy_net and value_net (views of the
    net's own tensors, like every weight here: writing one writes the net)."""
    for index, tower in enumerate(("policy_net", "value_net")):
        for i, (weight, bias) in enumerate(net.towers.layers(index)):  # SB3: Linear, activation, Linear, ...
            yield f"mlp_extractor.{tower}.{2 * i}.weight", weight.detach()
            yield f"mlp_extractor.{tower}.{2 * i}.bias", bias.detach()
    yield from linear_stack("action_net", [net.pi_head], step=1)
    yield from linear_stack("value_net", [net.vf_head], step=1)
    if hasattr(net, "log_std") and not net.discrete:
        yield "log_std", net.log_std.detach()


def thrust_cnn_extractor() -> type:
    """Thrust's board CNN (`CNNEncoder`, what Thrust's algorithms read MinAtar and Snake with) as an SB3 features
    extractor class. With `net_arch=[]` an SB3 actor-critic on it has the shape of Thrust's for boards, both heads on
    the one shared CNN (`shared_cnn_weights` names its tensors), and an SB3 DQN on it Thrust's board Q-net
    (`board_q_weights`). No export uses it: it lets SB3 train beside Thrust on the same network (benches/parity.py,
    tests/algos/test_on_policy.py and test_off_policy.py)."""
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    from ..nets.policies import CNNEncoder

    class ThrustCNN(BaseFeaturesExtractor):
        def __init__(self, observation_space: gym.spaces.Box) -> None:
            encoder = CNNEncoder(observation_space.shape)
            super().__init__(observation_space, encoder.out_dim)
            self.encoder = encoder

        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            return self.encoder(obs)

    return ThrustCNN


def shared_cnn_weights(net: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """An ActorCritic on a board (`uses_cnn`) as SB3's policy on `thrust_cnn_extractor`: the CNN's tensors under
    `features_extractor.encoder`, the heads as action_net and value_net (views of the net's own tensors)."""
    for name, weight in net.encoder.named_parameters():
        yield f"features_extractor.encoder.{name}", weight.detach()
    yield from linear_stack("action_net", [net.pi_head], step=1)
    yield from linear_stack("value_net", [net.vf_head], step=1)


def board_q_weights(algo: Algorithm) -> Iterator[tuple[str, torch.Tensor]]:
    """DQN's online and target Q-networks on a board as SB3's DQN on `thrust_cnn_extractor` with `net_arch=[]`: the
    CNN's tensors under `features_extractor.encoder`, the head as `q_net.0` (views of the nets' own tensors)."""
    parts = algo.stateful_parts()
    for prefix, q in (("q_net", parts["q_net"]), ("q_net_target", parts["target_net"])):
        for name, weight in q.encoder.named_parameters():
            yield f"{prefix}.features_extractor.encoder.{name}", weight.detach()
        yield from linear_stack(f"{prefix}.q_net", [q.head])


def critic_weights(prefix: str, critics: Any) -> Iterator[tuple[str, torch.Tensor]]:
    for i, q in enumerate(critics.qs):
        yield from linear_stack(f"{prefix}.qf{i}", linears(q))


def linears(module: torch.nn.Module) -> list[torch.nn.Linear]:
    return [layer for layer in module.modules() if isinstance(layer, torch.nn.Linear)]


def linear_stack(prefix: str, layers: list[torch.nn.Linear], step: int = 2) -> Iterator[tuple[str, torch.Tensor]]:
    """SB3's nn.Sequential names: Linear layers at 0, 2, 4, ... (activations between), or `prefix.weight`
    for a single layer (`step=1`)."""
    for i, layer in enumerate(layers):
        name = prefix if step == 1 else f"{prefix}.{step * i}"
        yield f"{name}.weight", layer.weight.detach()
        yield f"{name}.bias", layer.bias.detach()


__all__ = ["SB3ExportError", "check_exportable", "write_sb3_zip"]
