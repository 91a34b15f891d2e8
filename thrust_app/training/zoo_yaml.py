"""A run's settings in rl-baselines3-zoo's hyperparameter format (`hyperparams/ppo.yml` and friends),
both ways: export a Thrust run as a zoo entry, and read a zoo entry into Thrust overrides.

The zoo writes linear schedules as `lin_<start>` and the network as a `policy_kwargs` string such as
`dict(net_arch=[64, 64], activation_fn=nn.ReLU)`; Thrust's `lr_schedule`/`clip_schedule`, `hidden`,
`activation`, `log_std_init`, `ortho_init` and recurrent PPO's LSTM settings map onto those (the string is
read as an expression tree, never run). Settings without a zoo key (Thrust's `update`, DQN's `loss`, ...) are
written as comments on export; zoo keys Thrust does not have are named on import, never guessed.
"""

from __future__ import annotations

import ast
import json
from typing import Any

import yaml

from ..config import ConfigError
from ..envs import GYMNASIUM_TWINS as ENV_TWINS
from ..nets.extractor import class_path

#: Thrust config fields the zoo spells differently or not at all.
SCHEDULED = {"learning_rate": "lr_schedule", "clip_range": "clip_schedule"}
#: Read and set aside: the policy class follows the observations; SB3's optimize_memory_usage is a storage layout,
#: which Thrust's replay buffer chooses itself (`share_frames`, the same samples either way).
ZOO_ONLY_IGNORED = ("policy", "n_timesteps", "optimize_memory_usage")
#: The zoo's `env_wrapper` class for Thrust's `atari` pipeline (envs/pipeline.py).
ZOO_ATARI_WRAPPER = "stable_baselines3.common.atari_wrappers.AtariWrapper"
#: Thrust settings about how a run computes or steps its envs, not what it learns: comments on export.
THRUST_ONLY = (
    "update", "acting", "cuda_graphs", "loss", "double_dqn", "vec_env", "share_frames", "rnn_type",
    "features_extractor", "features_extractor_kwargs",
)  # fmt: skip
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
    hidden, activation, vf_hidden = config.pop("hidden", None), config.pop("activation", None), config.pop("vf_hidden", ())
    kwargs = [f"net_arch=[{', '.join(map(str, hidden))}]"] if hidden and not images else []  # a CNN has no hidden sizes
    if kwargs and vf_hidden and list(vf_hidden) != list(hidden):  # a value MLP of its own sizes
        kwargs = [f"net_arch=dict(pi=[{', '.join(map(str, hidden))}], vf=[{', '.join(map(str, vf_hidden))}])"]
    if activation == "relu":
        kwargs.append("activation_fn=nn.ReLU")
    if activation == "tanh":
        kwargs.append("activation_fn=nn.Tanh")
    kwargs += [f"{key}={config.pop(key)!r}" for key in POLICY_KWARGS_FIELDS if key in config]
    critic_rnn = config.pop("critic_rnn", None)
    if critic_rnn is not None:  # sb3-contrib's two flags
        kwargs += [f"enable_critic_lstm={critic_rnn == 'separate'}", f"shared_lstm={critic_rnn == 'shared'}"]
        entry["policy"] = "CnnLstmPolicy" if images else "MlpLstmPolicy"
    if kwargs:
        entry["policy_kwargs"] = f"dict({', '.join(kwargs)})"
    entry.update(_replay_buffer_entry(config))
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
            overrides.update(_network(str(value), fields))
        elif key == "normalize":
            overrides.update(_normalize(value))
        elif key == "replay_buffer_kwargs":
            overrides.update(_replay_buffer(str(value)))
        elif key == "use_rms_prop" and "rms_prop_eps" in fields:  # A2C's optimizer: Thrust's is SB3's default
            if value is not True:
                raise ConfigError("use_rms_prop false (Adam): Thrust's A2C uses RMSprop, SB3's default, only")
        elif key == "ent_coef" and "auto_alpha" in fields:  # SAC's temperature, SB3's way of writing it
            overrides.update(_temperature(value))
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


#: policy_kwargs keys that are Thrust fields of the same name (where the algorithm has the field).
POLICY_KWARGS_FIELDS = ("log_std_init", "ortho_init", "lstm_hidden_size", "n_lstm_layers", "n_critics")


def _network(policy_kwargs: str, fields: set[str]) -> dict[str, Any]:
    """Thrust's fields from a zoo policy_kwargs string such as `dict(net_arch=dict(pi=[64], vf=[64]),
    activation_fn=nn.ReLU, lstm_hidden_size=64)`. Keys Thrust has no field for, for this algorithm, are refused
    in one line."""
    kwargs = _dict_call(policy_kwargs, "policy_kwargs")
    return network_fields(kwargs, f"policy_kwargs {policy_kwargs!r}", fields)


#: replay_buffer_kwargs keys of SB3's HerReplayBuffer that are Thrust fields of the same name.
HER_FIELDS = ("n_sampled_goal", "goal_selection_strategy")


def _replay_buffer_entry(config: dict[str, Any]) -> dict[str, Any]:
    """The zoo's replay_buffer_kwargs of a HER run (its fields taken out of `config`); nothing for a plain
    replay buffer (SB3's default, which the zoo does not write)."""
    her = {key: config.pop(key) for key in HER_FIELDS if key in config}
    if config.get("replay_buffer_class", "ReplayBuffer") == "ReplayBuffer":
        config.pop("replay_buffer_class", None)
        return {}
    return {"replay_buffer_kwargs": f"dict({', '.join(f'{key}={value!r}' for key, value in her.items())})"}


def _replay_buffer(replay_buffer_kwargs: str) -> dict[str, Any]:
    """Thrust's HER fields from a zoo replay_buffer_kwargs string such as `dict(goal_selection_strategy='future',
    n_sampled_goal=4)`; other keys are refused in one line."""
    kwargs = _dict_call(replay_buffer_kwargs, "replay_buffer_kwargs")
    unknown = [key for key in kwargs if key not in HER_FIELDS]
    if unknown:
        raise ConfigError(f"replay_buffer_kwargs {replay_buffer_kwargs!r}: Thrust has no setting for {', '.join(unknown)}")
    return kwargs


def _temperature(ent_coef: Any) -> dict[str, Any]:
    """SAC's temperature fields from SB3's `ent_coef`: "auto" (tuned from 1.0), "auto_<x>" (tuned from x), or a
    number (fixed)."""
    text = str(ent_coef)
    if text == "auto" or text.startswith("auto_"):
        return {"auto_alpha": True, "init_alpha": float(text[5:]) if text != "auto" else 1.0}
    try:
        return {"auto_alpha": False, "init_alpha": float(text)}
    except ValueError:
        raise ConfigError(f"ent_coef {ent_coef!r}: expected auto, auto_<number> or a number") from None


def _dict_call(text: str, key: str) -> dict[str, Any]:
    """The keywords of a `dict(key=value, ...)` string, read as an expression tree (never run)."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        tree = None
    if not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id == "dict" and not tree.args):
        raise ConfigError(f"{key} {text!r}: expected dict(key=value, ...)")
    return {keyword.arg: _kwarg_value(keyword.value, text) for keyword in tree.keywords}


def network_fields(policy_kwargs: dict[str, Any], described: str, fields: set[str]) -> dict[str, Any]:
    """Thrust's fields from SB3's policy_kwargs as a dict (`net_arch`, `activation_fn` as "nn.ReLU" or the
    class itself, `log_std_init`, the LSTM sizes, ...); `described` names them in the one-line refusal of a
    key Thrust has no field for, for this algorithm."""
    kwargs = dict(policy_kwargs)
    network: dict[str, Any] = {}
    arch = kwargs.pop("net_arch", None)
    if isinstance(arch, dict):  # dict(pi=[...], vf=[...]): `hidden`, and `vf_hidden` where the value MLP differs
        pi, vf = list(arch.get("pi") or []), list(arch.get("vf") or [])
        if pi != vf and "vf_hidden" not in fields:
            raise ConfigError(f"{described}: this algorithm's policy and value MLPs share one net_arch")
        if pi != vf:
            network["vf_hidden"] = tuple(int(size) for size in vf)
        arch = pi
    if arch is not None:
        network["hidden"] = tuple(int(size) for size in arch)
    activation = kwargs.pop("activation_fn", None)
    if isinstance(activation, type):  # torch.nn.ReLU itself, as a Python caller passes it
        activation = f"nn.{activation.__name__}"
    if activation is not None:
        network["activation"] = {"nn.ReLU": "relu", "nn.Tanh": "tanh"}.get(activation, activation)
    extractor = kwargs.pop("features_extractor_class", None)
    if extractor is not None:  # the class itself (Python callers) or its 'package.module:Class'
        network["features_extractor"] = extractor if isinstance(extractor, str) else class_path(extractor)
        network["features_extractor_kwargs"] = json.dumps(kwargs.pop("features_extractor_kwargs", None) or {})
    enable, shared = kwargs.pop("enable_critic_lstm", None), kwargs.pop("shared_lstm", None)
    if enable is not None or shared is not None:  # sb3-contrib's two flags as recurrent PPO's critic_rnn
        network["critic_rnn"] = "shared" if shared else "none" if enable is False else "separate"
    network |= {key: kwargs.pop(key) for key in POLICY_KWARGS_FIELDS if key in kwargs}
    unknown = [*kwargs, *(key for key in network if key not in fields)]
    if unknown or network.get("activation") not in (None, "relu", "tanh"):
        what = ", ".join(unknown) or f"activation_fn={activation}"
        raise ConfigError(f"{described}: Thrust has no setting for {what} (for this algorithm)")
    return network


def _kwarg_value(node: ast.expr, policy_kwargs: str) -> Any:
    """A policy_kwargs value: a literal, a dotted name (nn.ReLU), or a nested dict(...) call."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return {keyword.arg: _kwarg_value(keyword.value, policy_kwargs) for keyword in node.keywords}
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ConfigError(f"policy_kwargs {policy_kwargs!r}: cannot read {ast.unparse(node)}") from None
