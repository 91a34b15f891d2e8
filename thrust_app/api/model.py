"""The model object, in Stable-Baselines3's shape: `PPO(env, **config)`, `learn`, `predict`, `save` / `load`,
`export`, `evaluate`.

A model is a run with a handle on it. `learn` trains through the same `train` / `resume` as `thrust train`
(training/trainer.py), in an ordinary run folder under `runs_root` (the dashboard and `thrust compare` see
it) unless `save_run=False`; a second `learn` trains on from where the first stopped (the step count
goes on, as SB3's `reset_num_timesteps=False`). `env` is an id, a gymnasium env object or a vector env
(envs/instances.py: Thrust makes its copies from it); config keywords are the algorithm's fields (SB3's
names) and `policy_kwargs` as SB3's (`net_arch`, `activation_fn`, ...).
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from ..algos import build_algorithm, get_algo
from ..algos.base import Algorithm, NumpyPolicy
from ..config import override_pairs
from ..envs import env_parted_space
from ..envs.instances import env_choice, is_instance_id, is_vector_env, register_copy, single_env
from ..envs.pipeline import Pipeline
from ..runs.files import LAST_CHECKPOINT, load_checkpoint, save_checkpoint
from ..training.device import resolve_device
from ..training.evaluation import EvalResult, evaluate
from ..training.normalization import evaluated_policy, on_raw_observations
from ..training.run_spec import RunSpec, load_spec, make_spec
from ..training.trainer import EVAL_SEED_OFFSET, Trainer, claim_run_dir, resume, train
from ..training.zoo_yaml import network_fields
from .callbacks import Callback, as_callbacks
from .model_file import load_model_files, save_model, seed_run_folder
from .predict import observation_batch, predict_actions, start_memory

#: SB3's policy names: `PPO("MlpPolicy", env)` works as in SB3 (Thrust picks the network from the spaces).
SB3_POLICY_NAMES = ("MlpPolicy", "CnnPolicy", "MultiInputPolicy", "MlpLstmPolicy", "CnnLstmPolicy", "MultiInputLstmPolicy")


class ModelUse:
    """What a model does with what it learned: predict, evaluate, plot, save, export, share, checkpoint. `Model` holds
    the state these read (`spec`, `state`, `algo`, `policy`, `run_dir`)."""

    spec: RunSpec
    state: dict[str, Any] | None
    run_dir: Path | None
    trainer: Trainer | None
    verbose: int
    algo_name: ClassVar[str] = ""

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = True,
                action_masks: Any = None) -> tuple[np.ndarray, np.ndarray | None]:  # fmt: skip
        """SB3's `predict`: (action, next state) for one observation or a batch; `state` is a recurrent
        policy's memory (pass back what it returned; `episode_start` clears it), None for the others."""
        obs, batched = observation_batch(observation, self.algo.obs_shape, self._parted_space())
        policy = self.policy
        memory = start_memory(state, episode_start, len(obs), getattr(policy, "state_size", 0))
        masks = None if action_masks is None else np.asarray(action_masks, bool).reshape(len(obs), -1)
        actions, next_state = predict_actions(self.algo, policy, obs, masks, memory, deterministic)
        if batched:
            return actions, next_state
        return actions[0], None if next_state is None else next_state[0]

    def _parted_space(self) -> Any:
        if not hasattr(self, "_parted"):
            self._parted = env_parted_space(self.spec.env, Pipeline.of(self.algo.config))
        return self._parted

    def evaluate(self, n_episodes: int = 10, seed: int | None = None) -> EvalResult:
        """Mean and spread of `n_episodes` deterministic episodes (`.mean`, `.std`, `.returns`), on the
        evaluation seeds of the run unless `seed` is given."""
        seed = self.spec.seed + EVAL_SEED_OFFSET if seed is None else seed
        return evaluate(NumpyPolicy(self.policy), self.spec.env, n_episodes, seed, None, Pipeline.of(self.algo.config))

    def plot(self) -> Any:
        """The run's learning curve (training returns and evaluations) as an Altair chart: a notebook shows it,
        `.save("curve.png")` or `.save("curve.html")` writes it."""
        from ..runs.curves import run_chart

        if self.run_dir is None:
            raise ValueError("the model has no run folder to plot (not trained yet, or trained with save_run=False)")
        return run_chart(self.run_dir, f"{self.algo_name} on {self.env_id}")

    def save(self, path: str | Path) -> Path:
        """One zip file: the run's config and its latest checkpoint (`Model.load` reads it)."""
        if self.state is None:
            raise ValueError("the model has not learned yet: call learn() before save()")
        return save_model(path, self.spec, self.state)

    def export(self, out: str | Path, force: bool = False) -> Any:
        """The ONNX bundle of the policy in folder `out` (what `thrust export` writes); returns the Bundle."""
        from ..interop.exporter import export_run

        with run_folder_of(self) as run_dir:
            return export_run(run_dir, out, force=force)

    def share(self, out: str | Path, episodes: int = 10, force: bool = False) -> Path:
        """The model as a repository folder in the Hugging Face Hub layout (`thrust share`; api/share.py)."""
        from .share import share_run

        with run_folder_of(self) as run_dir:
            return share_run(run_dir, out, episodes, force, log=print if self.verbose > 0 else _quiet)

    def checkpoint(self, path: str | Path) -> Path:
        """A whole checkpoint of the model as it is now (during `learn`: the live run's) at `path`."""
        if self.trainer is not None:
            return self.trainer.checkpoint(Path(path))
        if self.state is None:
            raise ValueError("the model has not learned yet: there is no checkpoint to write")
        save_checkpoint(Path(path), {key: value for key, value in self.state.items() if key not in ("format", "version")})
        return Path(path)


class Model(ModelUse):
    """One algorithm on one env: `model = PPO("CartPole-v1"); model.learn(50_000); model.predict(obs)`."""

    algo_name: ClassVar[str] = ""

    def __init__(self, *args: Any, preset: str = "default", seed: int = 0, device: str = "auto", eval_every: int | None = None,
                 eval_episodes: int = 10, stop_at_return: float | None = None, tensorboard: bool = False,
                 runs_root: str | Path = "runs", save_run: bool = True, torch_threads: int = 1, env_backend: str | None = None,
                 verbose: int = 1, policy_kwargs: dict[str, Any] | None = None, run_dir: str | Path | None = None,
                 overrides: dict[str, Any] | list[str] | None = None, **config: Any) -> None:  # fmt: skip
        """`overrides`: settings as a dict or `key=value` texts (the command line's --set), `config` wins over them;
        `run_dir`: the folder the first `learn` trains in (default: a new one under `runs_root`)."""
        choice = env_choice(env_argument(args, type(self).__name__))
        fields = {field.name for field in dataclasses.fields(get_algo(self.algo_name).Config)}
        overrides = override_pairs(overrides) | dict(config) | network_fields(policy_kwargs or {}, "policy_kwargs", fields)
        if choice.n_envs is not None:
            overrides.setdefault("n_envs", choice.n_envs)
        self.settings = dict(seed=seed, device=device, eval_every=eval_every, eval_episodes=eval_episodes,
                             stop_at_return=stop_at_return, overrides=overrides, torch_threads=torch_threads,
                             env_backend=env_backend, tensorboard=tensorboard, preset=preset)  # fmt: skip
        spec = make_spec(self.algo_name, choice.env_id, None, seed, device, eval_every, eval_episodes, stop_at_return,
                         overrides, None, torch_threads, env_backend, tensorboard, preset, budget_known=False)  # fmt: skip
        self.spec = dataclasses.replace(spec, env_spec=choice.spec_json)
        self.runs_root, self.save_run, self.verbose = Path(runs_root), save_run, verbose
        self.requested_run_dir = Path(run_dir) if run_dir is not None else None
        self.run_dir: Path | None = None  #: the run folder of the last `learn` (None with save_run=False)
        self.summary: dict[str, Any] | None = None  #: how the last `learn` ended (the run's summary.json)
        self.state: dict[str, Any] | None = None  #: the latest checkpoint, in memory (None before any learning)
        self.trainer: Trainer | None = None  #: the live training loop, while `learn` runs
        self._algo: Algorithm | None = None  # built on first use: training builds its own (with its buffers)

    # -- what the model is now ------------------------------------------------------------------------
    @property
    def algo(self) -> Algorithm:
        """The algorithm (nets, optimizers, buffers): the training loop's while `learn` runs; before any learning,
        one with fresh weights (built when first asked for)."""
        if self.trainer is not None:
            return self.trainer.algo
        if self._algo is None:
            self._algo = build_algorithm(self.algo_name, self.spec.env, self.spec.config, torch.device("cpu"), self.spec.seed)
        return self._algo

    @property
    def num_timesteps(self) -> int:
        return self.algo.num_timesteps

    @property
    def env_id(self) -> str:
        return self.spec.env

    @property
    def policy(self) -> torch.nn.Module:
        """The deterministic policy on raw observations (`policy.act(obs)`), normalisation folded in front."""
        if self.trainer is not None:
            return evaluated_policy(self.trainer.algo, self.trainer.env)
        env_state = self.state["env_state"] if self.state is not None else None
        if self.algo.config.normalize and env_state is None:
            return self.algo.policy  # not trained yet: no statistics to normalise with
        return on_raw_observations(self.algo.policy, self.algo.config, env_state)

    @property
    def last_evaluation(self) -> tuple[int, EvalResult] | None:
        """(step, result) of the latest evaluation of the run, None before the first."""
        if self.trainer is not None:
            logger = self.trainer.logger
            return None if logger.last_eval is None else (logger.last_eval_step, logger.last_eval)
        if self.state is None or not self.state.get("last_eval"):
            return None
        return self.state.get("last_eval_step"), EvalResult(**self.state["last_eval"])

    # -- training -------------------------------------------------------------------------------------
    def learn(self, total_timesteps: int | None = None, callback: Callback | Callable | Sequence | None = None,
              progress_bar: bool | None = None) -> Model:  # fmt: skip
        """Train `total_timesteps` more env steps (the first time, None: the preset's budget); returns the model
        (SB3's chaining). Callbacks: api/callbacks.py."""
        if total_timesteps is None and self.state is not None:
            raise ValueError("the model has learned before: say how many more steps, learn(total_timesteps)")
        callbacks = as_callbacks(callback)
        progress = self.verbose > 0 if progress_bar is None else progress_bar
        for one in callbacks:
            one.on_training_start(self)
        with training_folder(self) as (run_dir, fresh):
            hooks = dict(
                progress=progress, on_iteration=iteration_hook(self, callbacks), log=print if self.verbose > 0 else _quiet
            )
            try:
                if fresh:
                    self.summary = train(self.algo_name, self.spec.env, timesteps=total_timesteps, run_dir=run_dir,
                                         runs_root=self.runs_root, env_spec=self.spec.env_spec, **self.settings,
                                         **hooks)  # fmt: skip
                else:
                    self.summary = resume(run_dir, timesteps=self.num_timesteps + total_timesteps, **hooks)
            finally:
                self.trainer = None
            self._take_state(run_dir)
            for one in callbacks:
                one.on_training_end(self)
        return self

    def _take_state(self, run_dir: Path) -> None:
        """The run's config and last checkpoint, read back as the model's own after training (a run that diverged
        before its first checkpoint leaves none: the model stays as it was)."""
        if not (run_dir / LAST_CHECKPOINT).exists():
            return
        self.spec = load_spec(run_dir)
        self.state = load_checkpoint(run_dir / LAST_CHECKPOINT)
        self._algo = trained_algorithm(self.spec, self.state, "cpu")

    @classmethod
    def resume_run(cls, run_dir: str | Path, timesteps: int | None = None, device: str | None = None, verbose: int = 1,
                   progress_bar: bool = True) -> Model:  # fmt: skip
        """Continue the run in `run_dir` in its own folder from its last checkpoint, to its own budget or to
        `timesteps` in all (`thrust train --resume`); the model as it ends, `summary` saying how."""
        log = print if verbose > 0 else _quiet
        summary = resume(run_dir, device=device, timesteps=timesteps, progress=progress_bar, log=log)
        model = load_into(cls, run_dir, None, None, "cpu", Path(run_dir).parent, verbose)
        model.run_dir, model.summary = Path(run_dir), summary
        return model

    @classmethod
    def load(cls, path: str | Path, env: Any = None, *, checkpoint: str | Path | None = None, device: str = "cpu",
             runs_root: str | Path = "runs", verbose: int = 1) -> Model:  # fmt: skip
        """A model from `model.save`'s zip or a run folder (`checkpoint="best"`: KeepBest's). An env trained
        as an object that only lived in its process (envs/instances.py) must be passed again as `env`."""
        return load_into(cls, path, env, checkpoint, device, runs_root, verbose)


def load_into(
    cls: type[Model], path: str | Path, env: Any, checkpoint: Any, device: str, runs_root: Any, verbose: int
) -> Model:
    """`Model.load`: the spec and checkpoint read back, into a model of the algorithm they hold."""
    spec, state, _ = load_model_files(path, checkpoint)  # a run folder stays the run's own: learning on writes a new one
    if cls.algo_name and spec.algo != cls.algo_name:
        raise ValueError(f"{path} holds a {spec.algo} model; load it with thrust_app.{MODELS[spec.algo].__name__}.load")
    reconnect_env(spec.env, spec.env_spec, env, path)
    model = MODELS[spec.algo].__new__(MODELS[spec.algo])
    model.spec, model.state, model.trainer, model.run_dir = spec, state, None, None
    model.settings = dict(seed=spec.seed, device=device, eval_every=spec.eval_every, eval_episodes=spec.eval_episodes,
                          stop_at_return=spec.stop_at_return, overrides=spec.overrides, torch_threads=spec.torch_threads,
                          env_backend=spec.env_backend, tensorboard=spec.tensorboard, preset=spec.preset)  # fmt: skip
    model.runs_root, model.save_run, model.verbose = Path(runs_root), True, verbose
    model.requested_run_dir, model.summary = None, None
    model._algo = trained_algorithm(spec, state, device)
    return model


def trained_algorithm(spec: RunSpec, state: dict[str, Any], device: str) -> Algorithm:
    """The algorithm of `spec` with the checkpoint `state`'s weights, its policy in eval mode."""
    algo = build_algorithm(spec.algo, spec.env, spec.config, resolve_device(device, spec.torch_threads), spec.seed)
    algo.load_state_dict(state["algo"])
    algo.policy.eval()
    return algo


def iteration_hook(model: Model, callbacks: list[Callback]) -> Callable[[Trainer], None]:
    """The training loop's `on_iteration`: the model follows the live run, then every callback sees it;
    one returning False asks the loop to stop."""

    def on_iteration(trainer: Trainer) -> None:
        model.trainer, model.run_dir = trainer, trainer.run_dir
        if any([one.on_iteration(model) is False for one in callbacks]):  # a list: every callback runs
            trainer.request_stop()

    return on_iteration


@contextlib.contextmanager
def run_folder_of(model: Model) -> Iterator[Path]:
    """The model's run folder, or (a model loaded from a zip, or trained with save_run=False) a temporary one
    seeded from its checkpoint, for what reads a run folder (export, share)."""
    if model.state is None:
        raise ValueError("the model has not learned yet: call learn() first")
    if model.run_dir is not None and (Path(model.run_dir) / LAST_CHECKPOINT).exists():
        yield Path(model.run_dir)
        return
    with tempfile.TemporaryDirectory(prefix="thrust-model-") as folder:
        yield seed_run_folder(Path(folder) / f"{model.spec.algo}-model", model.spec, model.state)


@contextlib.contextmanager
def training_folder(model: Model) -> Iterator[tuple[Path, bool]]:
    """Where `learn` trains, and whether the run starts there: the model's own run folder; else a new one,
    seeded from the checkpoint in memory when there is one; with save_run=False a temporary one, removed
    once its checkpoint is read back."""
    if model.save_run and model.run_dir is not None and model.state is not None:
        yield model.run_dir, False
        return
    temporary = None if model.save_run else tempfile.mkdtemp(prefix="thrust-model-")
    requested, model.requested_run_dir = model.requested_run_dir, None  # the first run only
    run_dir = claim_run_dir(model.spec, None if temporary else requested, temporary or model.runs_root)
    if model.state is not None:
        seed_run_folder(run_dir, model.spec, model.state)
    model.run_dir = run_dir
    try:
        yield run_dir, model.state is None
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
            model.run_dir = None


def reconnect_env(saved_id: str, saved_spec: str | None, env: Any, path: str | Path) -> None:
    """Make the saved env id known again: an env object that lived in the saving process only is registered
    anew from the `env` passed; an env passed for an id model must be that env."""
    import gymnasium as gym

    if env is None:
        if is_instance_id(saved_id) and not saved_spec and saved_id not in gym.registry:
            raise ValueError(
                f"{path} trained on an env object ({saved_id}) that Thrust cannot make again in this process: "
                "pass it, Model.load(path, env=your_env)"
            )
        return
    if is_instance_id(saved_id) and not saved_spec:
        register_copy(single_env(env) if is_vector_env(env) else env, saved_id)
        return
    given = env_choice(env).env_id
    if given != saved_id:
        raise ValueError(f"{path} trained on {saved_id}, but the env passed is {given}: pass the same env, or none")


def env_argument(args: tuple[Any, ...], name: str) -> Any:
    """The env from `Model(env)` or SB3's `Model("MlpPolicy", env)`."""
    if len(args) == 2 and args[0] in SB3_POLICY_NAMES:
        return args[1]
    if len(args) == 1 and args[0] not in SB3_POLICY_NAMES:
        return args[0]
    raise TypeError(f"{name} takes the env (an id, a gymnasium env or a vector env): {name}(env) or {name}('MlpPolicy', env)")


def _quiet(_: str) -> None:
    return None


class A2C(Model):
    algo_name = "a2c"


class PPO(Model):
    algo_name = "ppo"


class RecurrentPPO(Model):
    algo_name = "recurrent_ppo"


class DQN(Model):
    algo_name = "dqn"


class SAC(Model):
    algo_name = "sac"


class TD3(Model):
    algo_name = "td3"


class DDPG(Model):
    algo_name = "ddpg"


MODELS: dict[str, type[Model]] = {cls.algo_name: cls for cls in (A2C, PPO, RecurrentPPO, DQN, SAC, TD3, DDPG)}


def load_model(path: str | Path, env: Any = None, **kwargs: Any) -> Model:
    """A saved model of whichever algorithm it holds (`Model.load`'s arguments)."""
    return Model.load(path, env, **kwargs)
