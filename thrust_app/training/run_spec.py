"""What defines a run (`RunSpec`, saved as the run folder's config.json), how one is made from a
user's choices with every value checked before any work starts, and how one is read back."""

from __future__ import annotations

import dataclasses
import math
import shlex
from pathlib import Path
from typing import Any

from ..algos import Algorithm, get_algo
from ..config import AlgoConfig, ConfigError, apply_overrides
from ..envs import env_spaces, make_env
from ..envs.batched import BATCHED_ENVS
from ..envs.core import UnknownEnvError, resolve_env_id
from ..envs.instances import register_spec_json
from ..envs.pipeline import Pipeline
from ..nets.extractor import FeatureExtractor
from ..runs.files import CONFIG_FILE, RunDirError, read_json
from .presets import Preset, get_preset

#: Returns at which Thrust's envs count as solved (gymnasium envs use their spec's reward_threshold).
SOLVED_AT = {
    "thrust/Bandit-v0": 0.98,
    "thrust/CartPole-v0": 475.0,
    "thrust/Pendulum-v0": -200.0,
    "CartPole-v1": 475.0,
    "Pendulum-v1": -200.0,
    # the cores equal to gymnasium's classic-control envs: gymnasium's reward_threshold for each
    "thrust/Acrobot-v0": -100.0,
    "thrust/MountainCar-v0": -110.0,
    "thrust/MountainCarContinuous-v0": 90.0,
}


#: Deterministic episodes per evaluation unless the user says otherwise.
EVAL_EPISODES = 10


@dataclasses.dataclass
class RunSpec:
    """Everything that defines a run; saved as config.json."""

    algo: str
    env: str
    timesteps: int
    seed: int = 0
    device: str = "auto"
    eval_every: int = 0
    eval_episodes: int = EVAL_EPISODES
    stop_at_return: float | None = None
    checkpoint_every: int = 0
    torch_threads: int = 1
    #: Where Thrust's array-batched envs live: numpy on the host, or torch tensors on the training device.
    env_backend: str = "numpy"
    #: Also write the records as TensorBoard scalars under RUN/tb (thrust_app/runs/tensorboard.py).
    tensorboard: bool = False
    #: The preset the config starts from: "default" (the pair's tuned one), or a named one such as "fast".
    preset: str = "default"
    #: The algorithm's whole config (preset and overrides applied).
    config: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: The values the user set that differ from the preset's (what `command` repeats).
    overrides: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: For an env object handed to the model API under a derived id (envs/instances.py): its gymnasium
    #: spec as JSON, registered again wherever the run is read.
    env_spec: str | None = None

    def command(self) -> str:
        """The `thrust train` command line that makes this run again."""
        preset = get_preset(self.algo, self.env, self.preset)
        words = ["thrust", "train", self.algo, self.env, "--timesteps", str(self.timesteps), "--seed", str(self.seed)]
        if self.preset != "default":
            words += ["--preset", self.preset]
        if self.device != "auto":
            words += ["--device", self.device]
        if self.env_backend != preset.env_backend:
            words += ["--env-backend", self.env_backend]
        if self.eval_every != default_eval_every(preset, self.timesteps):
            words += ["--eval-every", str(self.eval_every)]
        if self.eval_episodes != EVAL_EPISODES:
            words += ["--eval-episodes", str(self.eval_episodes)]
        if self.stop_at_return is not None:
            words += ["--stop-at-return", str(self.stop_at_return)]
        if self.tensorboard:
            words += ["--tensorboard"]
        for key, value in self.overrides.items():
            text = ",".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)
            words += ["--set", f"{key}={text}"]
        return shlex.join(words)


def default_eval_every(preset: Preset, timesteps: int) -> int:
    """Env steps between evaluations when the user gives none: the preset's, else timesteps / 20 (at least 1,000)."""
    return preset.eval_every if preset.eval_every is not None else max(1000, timesteps // 20)


def resolve_env_name(name: str) -> str:
    """Thrust alias or id -> Thrust id; otherwise a gymnasium id, checked to exist."""
    try:
        return resolve_env_id(name)
    except UnknownEnvError:
        make_env(name).close()  # raises UnknownEnvError listing Thrust's names if gymnasium lacks it too
        return name


def solve_threshold(env_id: str) -> float | None:
    """The mean evaluation return at which `env_id` counts as solved, if it has one."""
    if env_id in SOLVED_AT:
        return SOLVED_AT[env_id]
    spec = make_env(env_id).spec
    return spec.reward_threshold if spec is not None else None


def check_env_fits(
    algo_cls: type[Algorithm], env_id: str, env_backend: str, config: AlgoConfig, timesteps: int | None = None
) -> None:
    """The algorithm can act in the env's spaces (inside the config's observation pipeline), a feature extractor of
    the user's builds on its observations, the env backend and the vec env choice can step it, and (given the
    budget) one rollout and the buffers fit the budget and this machine's memory."""
    pipeline = Pipeline.of(config)
    obs_space, action_space = env_spaces(env_id, pipeline)  # a non-Box observation space raises here, naming it
    algo_cls.check_fits(action_space, env_id)
    if config.features_extractor:
        FeatureExtractor(config.features_extractor, config.features_extractor_kwargs).build(obs_space.shape)
    if timesteps is not None:
        config.check_fits(timesteps, math.prod(obs_space.shape) * (1 if obs_space.dtype == "uint8" else 4))
    if env_backend not in ("numpy", "torch"):
        raise ConfigError(f"env_backend must be 'numpy' or 'torch', got {env_backend!r}")
    if env_backend == "torch" and (env_id not in BATCHED_ENVS or pipeline != Pipeline()):
        raise ConfigError(
            f"env_backend 'torch' needs an array-batched env ({', '.join(BATCHED_ENVS)}); "
            f"{env_id} steps in a Python loop, so use 'numpy'"
        )
    if config.vec_env != "sync" and env_id in BATCHED_ENVS and pipeline == Pipeline():
        raise ConfigError(
            f"vec_env={config.vec_env}: {env_id} already steps all its copies at once in arrays; drop vec_env "
            "(worker processes are for gymnasium envs whose step is slow)"
        )


def check_counts(**counts: int | None) -> None:
    """Each count given (not None) is at least 1, or a ConfigError names the first that is not."""
    for name, value in counts.items():
        if value is not None and value < 1:
            raise ConfigError(f"{name} must be >= 1, got {value}")


def make_spec(
    algo: str,
    env: str,
    timesteps: int | None = None,
    seed: int = 0,
    device: str = "auto",
    eval_every: int | None = None,
    eval_episodes: int = EVAL_EPISODES,
    stop_at_return: float | None = None,
    overrides: dict[str, Any] | list[str] | None = None,
    checkpoint_every: int | None = None,
    torch_threads: int = 1,
    env_backend: str | None = None,
    tensorboard: bool = False,
    preset: str = "default",
    *,
    budget_known: bool = True,
) -> RunSpec:
    """Check every choice and fill in presets; any bad value raises a clear error before work starts (without
    `budget_known`, a model before its `learn`, the checks that need the budget wait for training)."""
    algo_cls = get_algo(algo)
    env_id = resolve_env_name(env)
    chosen = get_preset(algo_cls.name, env_id, preset)
    env_backend = chosen.env_backend if env_backend is None else env_backend
    start = dataclasses.asdict(apply_overrides(algo_cls.Config(), chosen.config, algo_cls.name))
    checked = apply_overrides(algo_cls.Config(**start), overrides, algo_cls.name)
    timesteps = chosen.timesteps if timesteps is None else int(timesteps)
    check_counts(timesteps=timesteps, eval_episodes=eval_episodes, eval_every=eval_every, checkpoint_every=checkpoint_every)
    check_env_fits(algo_cls, env_id, env_backend, checked, timesteps if budget_known else None)
    config = dataclasses.asdict(checked)
    user = {key: value for key, value in config.items() if value != start[key]}
    eval_every = chosen.eval_every if eval_every is None else eval_every
    stop_at_return = chosen.stop_at_return if stop_at_return is None else stop_at_return
    return RunSpec(
        algo=algo_cls.name,
        env=env_id,
        timesteps=timesteps,
        seed=seed,
        device=device,
        eval_every=eval_every if eval_every is not None else default_eval_every(chosen, timesteps),
        eval_episodes=eval_episodes,
        stop_at_return=stop_at_return,
        checkpoint_every=checkpoint_every if checkpoint_every is not None else max(10_000, timesteps // 10),
        torch_threads=torch_threads,
        env_backend=env_backend,
        tensorboard=tensorboard,
        preset=preset,
        config=config,
        overrides=user,
    )


def with_overrides(spec: RunSpec, overrides: dict[str, Any]) -> RunSpec:
    """`spec` with some of its algorithm's settings changed (a PBT exploit's new learning rate), checked
    like any user's choice; everything else (env, seed, budget, intervals) stays."""
    changed = make_spec(
        spec.algo,
        spec.env,
        spec.timesteps,
        spec.seed,
        spec.device,
        spec.eval_every,
        spec.eval_episodes,
        spec.stop_at_return,
        {**spec.overrides, **overrides},
        spec.checkpoint_every,
        spec.torch_threads,
        spec.env_backend,
        spec.tensorboard,
        spec.preset,
    )
    return dataclasses.replace(changed, env_spec=spec.env_spec)


def load_spec(run_dir: str | Path) -> RunSpec:
    """The RunSpec a run folder's config.json holds."""
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise RunDirError(f"{run_dir} is not a Thrust run folder (no config.json)")
    saved = read_json(path)
    if saved.get("env_spec"):  # an env object's spec under a derived id: known again in this process
        register_spec_json(saved["env"], saved["env_spec"])
    fields = {field.name for field in dataclasses.fields(RunSpec)}
    return RunSpec(**{key: value for key, value in saved.items() if key in fields})


__all__ = ["SOLVED_AT", "RunSpec", "load_spec", "make_spec", "resolve_env_name", "solve_threshold", "with_overrides"]
