"""A run's settings in rl-baselines3-zoo's hyperparameter format (`hyperparams/ppo.yml` and friends),
both ways: export a Thrust run as a zoo entry, and read a zoo entry into Thrust overrides.

The zoo writes linear schedules as `lin_<start>` and the network as a `policy_kwargs` string such as
`dict(net_arch=[64, 64], activation_fn=nn.ReLU)`; Thrust's `lr_schedule`/`clip_schedule`, `hidden` and
`activation` map onto those. Settings without a zoo key (Thrust's `update`, DQN's `loss`, ...) are
written as comments on export; zoo keys Thrust does not have are named on import, never guessed.
"""

from __future__ import annotations

import ast
import re
from typing import Any

import yaml

from ..config import ConfigError
from ..envs import GYMNASIUM_TWINS as ENV_TWINS

#: Thrust config fields the zoo spells differently or not at all.
SCHEDULED = {"learning_rate": "lr_schedule", "clip_range": "clip_schedule"}
NETWORK = ("hidden", "activation")
#: Read and set aside: the policy class follows the observations; SB3's optimize_memory_usage is a storage layout,
#: which Thrust's replay buffer chooses itself (`share_frames`, the same samples either way).
ZOO_ONLY_IGNORED = ("policy", "n_timesteps", "optimize_memory_usage")
#: The zoo's `env_wrapper` class for Thrust's `atari` pipeline (envs/pipeline.py).
ZOO_ATARI_WRAPPER = "stable_baselines3.common.atari_wrappers.AtariWrapper"
#: Thrust settings about how a run computes or steps its envs, not what it learns: comments on export.
THRUST_ONLY = ("update", "acting", "cuda_graphs", "loss", "double_dqn", "vec_env", "share_frames")
#: VecNormalize's keyword arguments that the zoo's `normalize` may hold as a dict, and Thrust's fields for them.
NORMALIZE_KEYS = {"norm_obs": "norm_obs", "norm_reward": "norm_reward", "clip_obs": "clip_obs", "clip_reward": "clip_reward"}
#: Thrust's envs whose dynamics are gymnasium's (tests step both side by side): the zoo knows the gymnasium id.
#: VecNormalize's defaults, which the zoo's `normalize: true` means.
NORMALIZE_DEFAULTS = {"norm_obs": True, "norm_reward": True, "clip_obs": 10.0, "clip_reward": 10.0}
#: Thrust's cores by the gymnasium id the zoo knows them by (envs.GYMNASIUM_TWINS the other way round).
GYMNASIUM_TWINS = {core: gym_id for gym_id, core in ENV_TWINS.items()}


def to_zoo_yaml(run_config: dict[str, Any]) -> str:
    """A run's config.json as a zoo hyperparameter file with one entry, keyed by the env id."""
    config = dict(run_config["config"])
    images = config.get("env_wrapper", "none") != "none"
    entry: dict[str, Any] = {"n_timesteps": run_config["timesteps"], "policy": "CnnPolicy" if images else "MlpPolicy"}
    wrapper = config.pop("env_wrapper", "none")
    if wrapper == "atari":
        entry["env_wrapper"] = [ZOO_ATARI_WRAPPER]
    if config.get("frame_stack", 1) == 1:
        config.pop("frame_stack", None)
    for key, schedule_key in SCHEDULED.items():
        if key in config:
            value = config.pop(key)
            entry[key] = f"lin_{value}" if config.pop(schedule_key, "constant") == "linear" else value
    hidden, activation = config.pop("hidden", None), config.pop("activation", None)
    kwargs = [f"net_arch=[{', '.join(map(str, hidden))}]"] if hidden and not images else []  # a CNN has no hidden sizes
    if activation == "relu":
        kwargs.append("activation_fn=nn.ReLU")
    if activation == "tanh":
        kwargs.append("activation_fn=nn.Tanh")
    if kwargs:
        entry["policy_kwargs"] = f"dict({', '.join(kwargs)})"
    thrust_only = {key: config.pop(key) for key in THRUST_ONLY if key in config}
    if wrapper == "minatar":  # the zoo has no MinAtar wrapper
        thrust_only["env_wrapper"] = wrapper
    normalize = {key: config.pop(field) for key, field in NORMALIZE_KEYS.items() if field in config}
    config.pop("norm_epsilon", None)
    if config.get("normalize"):  # the zoo's form: true, or a dict of VecNormalize's arguments
        changed = {key: value for key, value in normalize.items() if value != NORMALIZE_DEFAULTS[key]}
        config["normalize"] = str(changed) if changed else True
    entry.update(config)
    env_id = GYMNASIUM_TWINS.get(run_config["env"], run_config["env"])
    text = yaml.safe_dump({env_id: entry}, sort_keys=False, default_flow_style=False)
    notes = "".join(f"#   {key}: {value}\n" for key, value in thrust_only.items())
    return (
        f"# {run_config['algo']} on {run_config['env']}, exported by Thrust\n"
        + (f"# Thrust-only settings (no zoo key):\n{notes}" if notes else "")
        + text
    )


def from_zoo_yaml(text: str, fields: set[str]) -> tuple[str, int | None, dict[str, Any]]:
    """(env id, timesteps, Thrust overrides) of a zoo file's first entry, for a config with `fields`.
    A zoo key Thrust has no field for is a ConfigError naming it."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"not a YAML file: {str(err).splitlines()[0]}") from None
    if not isinstance(document, dict) or not document or not isinstance(next(iter(document.values())), dict):
        raise ConfigError("expected a zoo hyperparameter file: an env id, then its settings")
    env_id, entry = next(iter(document.items()))
    overrides: dict[str, Any] = {}
    unknown = []
    for key, value in entry.items():
        if key in SCHEDULED and isinstance(value, str) and value.startswith("lin_"):
            overrides[key], overrides[SCHEDULED[key]] = float(value[4:]), "linear"
        elif key == "policy_kwargs":
            overrides.update(_network(str(value)))
        elif key == "normalize":
            overrides.update(_normalize(value))
        elif key == "env_wrapper":
            overrides["env_wrapper"] = _wrapper(value)
        elif key in fields:
            overrides[key] = value
        elif key not in ZOO_ONLY_IGNORED:
            unknown.append(key)
    if unknown:
        raise ConfigError(f"Thrust has no setting for the zoo keys {', '.join(unknown)}; remove them to load the rest")
    timesteps = entry.get("n_timesteps")
    return str(env_id), int(float(timesteps)) if timesteps is not None else None, overrides


def _wrapper(value: Any) -> str:
    """Thrust's `env_wrapper` for the zoo's (a class path, or a list of them): SB3's AtariWrapper is `atari`."""
    paths = [value] if isinstance(value, (str, dict)) else list(value or [])
    names = [next(iter(path)) if isinstance(path, dict) else str(path) for path in paths]
    if names == [ZOO_ATARI_WRAPPER] or names == ["AtariWrapper"]:
        return "atari"
    raise ConfigError(f"env_wrapper {value!r}: Thrust has the zoo's AtariWrapper ({ZOO_ATARI_WRAPPER}) only")


def _normalize(value: Any) -> dict[str, Any]:
    """Thrust's normalisation fields from the zoo's `normalize`: a bool, or a dict (as a string) of
    VecNormalize's arguments such as "{'norm_obs': True, 'norm_reward': False}"."""
    if isinstance(value, bool):
        return {"normalize": value}
    try:
        arguments = ast.literal_eval(str(value))
    except (ValueError, SyntaxError):
        arguments = None
    if not isinstance(arguments, dict) or not set(arguments) <= set(NORMALIZE_KEYS):
        raise ConfigError(f"normalize {value!r}: Thrust reads true/false or a dict of {', '.join(NORMALIZE_KEYS)}")
    return {"normalize": True} | {NORMALIZE_KEYS[key]: arguments[key] for key in arguments}


def _network(policy_kwargs: str) -> dict[str, Any]:
    """`hidden` and `activation` from a zoo policy_kwargs string; other keys in it are refused."""
    network: dict[str, Any] = {}
    sizes = re.search(r"net_arch\s*=\s*\[([\d,\s]*)\]", policy_kwargs)
    if sizes:
        network["hidden"] = tuple(int(size) for size in sizes.group(1).replace(",", " ").split())
    activation = re.search(r"activation_fn\s*=\s*nn\.(\w+)", policy_kwargs)
    if activation:
        network["activation"] = {"ReLU": "relu", "Tanh": "tanh"}.get(activation.group(1), activation.group(1))
    rest = re.sub(r"net_arch\s*=\s*\[[\d,\s]*\]|activation_fn\s*=\s*nn\.\w+|dict\(|\)|,|\s", "", policy_kwargs)
    if rest:
        raise ConfigError(
            f"policy_kwargs {policy_kwargs!r}: Thrust reads net_arch (a flat list) and activation_fn (ReLU or Tanh) only"
        )
    return network
