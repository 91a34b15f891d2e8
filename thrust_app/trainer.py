"""The training loop every algorithm shares: a run folder, logging, evaluation, checkpoints, resume.

`train("ppo", "cartpole")` starts a run; `resume("runs/<name>")` continues one from its last
checkpoint, exactly where it stopped for Thrust's array-batched envs (the env state and every
random stream are in the checkpoint). The algorithm only supplies `iteration()`.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import __version__
from .algos import ALGOS, get_algo
from .algos.base import Algorithm, deterministic_action
from .config import ConfigError, apply_overrides
from .device import resolve_device
from .envs import make_env
from .envs.batched import BATCHED_ENVS, make_batched
from .envs.core import UnknownEnvError, resolve_env_id
from .evaluation import EvalResult, evaluate
from .presets import get_preset
from .runs import (LAST_CHECKPOINT, RunDirError, append_jsonl, atomic_write_json, load_checkpoint, new_run_dir,
                   read_json, save_checkpoint, truncate_metrics)
from .tensors import EnvIO

#: Returns at which Thrust's envs count as solved (gymnasium envs use their spec's reward_threshold).
SOLVED_AT = {"thrust/Bandit-v0": 0.98, "thrust/CartPole-v0": 475.0, "thrust/Pendulum-v0": -200.0,
             "CartPole-v1": 475.0, "Pendulum-v1": -200.0}

#: A file of this name in a run folder asks the run to stop at its next iteration (checkpoint kept).
STOP_FILE = "STOP"
#: Present while a process trains in the run folder; holds that process's PID.
RUNNING_FILE = "RUNNING"

#: Seeds of evaluation episodes start here, away from the training envs' seeds.
EVAL_SEED_OFFSET = 1_000_000

Callback = Callable[[dict[str, Any]], None]


def resolve_env_name(name: str) -> str:
    """Thrust alias or id -> Thrust id; otherwise a gymnasium id, checked to exist."""
    try:
        return resolve_env_id(name)
    except UnknownEnvError:
        make_env(name).close()  # raises UnknownEnvError listing Thrust's names if gymnasium lacks it too
        return name


def solve_threshold(env_id: str) -> float | None:
    if env_id in SOLVED_AT:
        return SOLVED_AT[env_id]
    spec = make_env(env_id).spec
    return spec.reward_threshold if spec is not None else None


@dataclasses.dataclass
class RunSpec:
    """Everything that defines a run; saved as config.json."""

    algo: str
    env: str
    timesteps: int
    seed: int = 0
    device: str = "auto"
    eval_every: int = 0
    eval_episodes: int = 10
    stop_at_return: float | None = None
    checkpoint_every: int = 0
    torch_threads: int = 1
    #: Where Thrust's array-batched envs live: numpy on the host, or torch tensors on the training device.
    env_backend: str = "numpy"
    config: dict[str, Any] = dataclasses.field(default_factory=dict)
    overrides: dict[str, Any] = dataclasses.field(default_factory=dict)
    preset_source: str = ""

    def command(self) -> str:
        parts = ["thrust", "train", self.algo, self.env, "--timesteps", str(self.timesteps), "--seed", str(self.seed)]
        if self.stop_at_return is not None:
            parts += ["--stop-at-return", str(self.stop_at_return)]
        for key, value in self.overrides.items():
            text = ",".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)
            parts += ["--set", f"{key}={text}"]
        return shlex.join(parts)


def make_spec(algo: str, env: str, timesteps: int | None = None, seed: int = 0, device: str = "auto",
              eval_every: int | None = None, eval_episodes: int = 10, stop_at_return: float | None = None,
              overrides: dict[str, Any] | list[str] | None = None, checkpoint_every: int | None = None,
              torch_threads: int = 1, env_backend: str = "numpy") -> RunSpec:
    """Check every choice and fill in presets; any bad value raises a clear error before work starts."""
    algo_cls = get_algo(algo)
    env_id = resolve_env_name(env)
    probe = make_batched(env_id, 1, seed=0)  # checks the spaces: Box observations, an action space that fits
    algo_cls.check_fits(probe.action_space, env_id)
    probe.close()
    if env_backend not in ("numpy", "torch"):
        raise ConfigError(f"env_backend must be 'numpy' or 'torch', got {env_backend!r}")
    if env_backend == "torch" and env_id not in BATCHED_ENVS:
        raise ConfigError(f"env_backend 'torch' needs an array-batched env ({', '.join(BATCHED_ENVS)}); "
                          f"{env_id} steps in a Python loop, so use 'numpy'")
    preset = get_preset(algo_cls.name, env_id)
    preset_config = dataclasses.asdict(apply_overrides(algo_cls.Config(), preset.config, algo_cls.name))
    config = dataclasses.asdict(apply_overrides(algo_cls.Config(**preset_config), overrides, algo_cls.name))
    user = {k: v for k, v in config.items() if v != preset_config[k]}  # what the user changed, for `command`
    timesteps = preset.timesteps if timesteps is None else int(timesteps)
    if timesteps < 1:
        raise ConfigError(f"timesteps must be >= 1, got {timesteps}")
    if eval_episodes < 1:
        raise ConfigError(f"eval_episodes must be >= 1, got {eval_episodes}")
    return RunSpec(
        algo=algo_cls.name, env=env_id, timesteps=timesteps, seed=seed, device=device,
        eval_every=eval_every if eval_every is not None else max(1000, timesteps // 20),
        eval_episodes=eval_episodes, stop_at_return=stop_at_return,
        checkpoint_every=checkpoint_every if checkpoint_every is not None else max(10_000, timesteps // 10),
        torch_threads=torch_threads, env_backend=env_backend, config=config, overrides=user,
        preset_source=preset.source,
    )


class Trainer:
    """Runs one RunSpec in one run folder; `run()` trains until done, stopped or solved."""

    def __init__(self, spec: RunSpec, run_dir: Path, device: torch.device, progress: bool = True,
                 should_stop: Callable[[], bool] | None = None, on_record: Callback | None = None) -> None:
        self.spec, self.run_dir, self.device = spec, run_dir, device
        self.progress, self.should_stop, self.on_record = progress, should_stop, on_record
        algo_cls = ALGOS[spec.algo]
        self.config = apply_overrides(algo_cls.Config(), spec.config, spec.algo)
        torch.manual_seed(spec.seed)
        np.random.seed(spec.seed % 2**32)
        # Actions come from the policy's own action space, so the env need not re-check them (a sync on GPU).
        self.env = make_batched(spec.env, self.config.n_envs, seed=spec.seed, backend=spec.env_backend,
                                device=str(device), check_actions=False)
        self.algo: Algorithm = algo_cls(self.env.observation_space.shape, self.env.action_space, self.config,
                                        device, spec.seed)
        self.algo.total_timesteps = spec.timesteps
        self.io = EnvIO(device)
        self.obs = self.io.reset(self.env)
        self.threshold = spec.stop_at_return if spec.stop_at_return is not None else solve_threshold(spec.env)
        self.train_s = 0.0  # time in collect + update, what SPS is measured on
        self.wall_s = 0.0  # everything, evaluation included
        self.solved_at_step: int | None = None
        self.solved_at_s: float | None = None
        self.last_eval: EvalResult | None = None
        self.recent_returns: list[float] = []
        #: Episodes and losses since the last metrics record (checkpointed, so a resumed run logs the same).
        self.pending: dict[str, list] = {"returns": [], "lengths": [], "stats": []}

    # -- checkpoints -------------------------------------------------------------------------------
    def checkpoint(self) -> None:
        state = {
            "algo_name": self.spec.algo, "env": self.spec.env, "algo": self.algo.state_dict(),
            "obs": self.obs.cpu(), "env_state": self.env.get_state(),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None,
            "train_s": self.train_s, "wall_s": self.wall_s, "solved_at_step": self.solved_at_step,
            "solved_at_s": self.solved_at_s, "recent_returns": self.recent_returns,
            "last_eval": dataclasses.asdict(self.last_eval) if self.last_eval else None,
            "pending": self.pending,
        }
        save_checkpoint(self.run_dir / LAST_CHECKPOINT, state)

    def restore(self, state: dict[str, Any]) -> None:
        if state["algo_name"] != self.spec.algo or state["env"] != self.spec.env:
            raise RunDirError(f"checkpoint is for {state['algo_name']} on {state['env']}, but the run folder "
                              f"says {self.spec.algo} on {self.spec.env}")
        self.algo.load_state_dict(state["algo"])
        if state["env_state"] is not None:
            self.env.set_state(state["env_state"])
            self.obs = state["obs"].to(self.device)
        else:  # gymnasium envs: start fresh episodes, seeded by the step reached
            self.obs = self.io.reset(self.env, self.spec.seed + self.algo.num_timesteps)
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] is not None and self.device.type == "cuda":
            torch.cuda.set_rng_state(state["cuda_rng"], self.device)
        self.train_s, self.wall_s = state["train_s"], state["wall_s"]
        self.solved_at_step, self.solved_at_s = state["solved_at_step"], state["solved_at_s"]
        self.recent_returns = list(state["recent_returns"])
        self.last_eval = EvalResult(**state["last_eval"]) if state["last_eval"] else None
        self.pending = state["pending"]

    # -- the loop ----------------------------------------------------------------------------------
    def record(self, record: dict[str, Any]) -> None:
        append_jsonl(self.run_dir / "metrics.jsonl", record)
        if self.on_record:
            self.on_record(record)

    def act(self, obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return deterministic_action(self.algo.policy, torch.as_tensor(obs, device=self.device)).cpu().numpy()

    def run_eval(self) -> EvalResult:
        result = evaluate(self.act, self.spec.env, self.spec.eval_episodes, self.spec.seed + EVAL_SEED_OFFSET)
        self.last_eval = result
        self.record({"kind": "eval", "step": self.algo.num_timesteps, "wall_s": round(self.wall_s, 3),
                     "train_s": round(self.train_s, 4), **result.as_dict()})
        if self.threshold is not None and self.solved_at_step is None and result.mean >= self.threshold:
            self.solved_at_step, self.solved_at_s = self.algo.num_timesteps, round(self.wall_s, 3)
        return result

    def run(self) -> dict[str, Any]:
        """Train to `timesteps` (or until stopped or, with stop_at_return, solved); returns the summary."""
        from tqdm.auto import tqdm

        running = self.run_dir / RUNNING_FILE
        running.write_text(str(os.getpid()))
        try:
            return self._run(tqdm)
        finally:
            running.unlink(missing_ok=True)

    def _run(self, tqdm) -> dict[str, Any]:
        spec, algo = self.spec, self.algo
        bar = tqdm(total=spec.timesteps, initial=algo.num_timesteps, unit="step", disable=not self.progress,
                   desc=f"{spec.algo} {spec.env}", dynamic_ncols=True, smoothing=0.1)
        status = "finished"
        log_every = max(1000, spec.timesteps // 200)
        next_log = (algo.num_timesteps // log_every + 1) * log_every
        next_eval = (algo.num_timesteps // spec.eval_every + 1) * spec.eval_every
        next_ckpt = (algo.num_timesteps // spec.checkpoint_every + 1) * spec.checkpoint_every
        try:
            while algo.num_timesteps < spec.timesteps:
                start = time.perf_counter()
                progress_remaining = max(0.0, 1.0 - algo.num_timesteps / spec.timesteps)
                it = algo.iteration(self.env, self.io, self.obs, progress_remaining)
                self.obs = it.obs
                elapsed = time.perf_counter() - start
                self.train_s += elapsed
                self.wall_s += elapsed
                self.pending["returns"] += it.episode_returns
                self.pending["lengths"] += it.episode_lengths
                if it.stats:
                    self.pending["stats"].append(it.stats)
                self.recent_returns = (self.recent_returns + it.episode_returns)[-100:]
                bar.update(it.steps)
                if algo.num_timesteps >= next_log or algo.num_timesteps >= spec.timesteps:
                    self.log_train()
                    next_log = (algo.num_timesteps // log_every + 1) * log_every
                stop = False
                if algo.num_timesteps >= next_eval:
                    t0 = time.perf_counter()
                    result = self.run_eval()
                    self.wall_s += time.perf_counter() - t0
                    next_eval = (algo.num_timesteps // spec.eval_every + 1) * spec.eval_every
                    stop = spec.stop_at_return is not None and result.mean >= spec.stop_at_return
                bar.set_postfix(self.postfix(), refresh=False)
                if algo.num_timesteps >= next_ckpt:
                    self.checkpoint()
                    next_ckpt = (algo.num_timesteps // spec.checkpoint_every + 1) * spec.checkpoint_every
                if stop:
                    status = "solved"
                    break
                if self.stop_requested():
                    status = "stopped"
                    break
        except KeyboardInterrupt:
            status = "interrupted"
        finally:
            bar.close()
        if status in ("finished", "solved"):
            if self.pending["returns"] or self.pending["stats"]:
                self.log_train()
            t0 = time.perf_counter()
            if self.last_eval is None or status == "finished":
                self.run_eval()
            self.wall_s += time.perf_counter() - t0
        self.checkpoint()
        summary = self.summary(status)
        atomic_write_json(self.run_dir / "summary.json", summary)
        if self.on_record:
            self.on_record({"kind": "summary", **summary})
        self.env.close()
        return summary

    def stop_requested(self) -> bool:
        """True once `should_stop()` says so or someone (the dashboard, a user) created the STOP file."""
        stop_file = self.run_dir / STOP_FILE
        if stop_file.exists():
            stop_file.unlink(missing_ok=True)
            return True
        return self.should_stop is not None and self.should_stop()

    def log_train(self) -> None:
        """Write one train record of everything since the last one."""
        pending = self.pending
        self.pending = {"returns": [], "lengths": [], "stats": []}
        stats = pending["stats"]
        losses = {k: statistics.fmean(s[k] for s in stats if k in s) for k in (stats[0] if stats else {})}
        returns = pending["returns"]
        self.record({
            "kind": "train", "step": self.algo.num_timesteps, "wall_s": round(self.wall_s, 3),
            "sps": round(self.algo.num_timesteps / self.train_s, 1) if self.train_s else None,
            "episodes": len(returns), "return_mean": statistics.fmean(returns) if returns else None,
            "episode_returns": returns, "episode_lengths": pending["lengths"], "losses": losses,
        })

    def postfix(self) -> dict[str, str]:
        fields = {"sps": f"{self.algo.num_timesteps / max(self.train_s, 1e-9):,.0f}"}
        if self.recent_returns:
            fields["return"] = f"{statistics.fmean(self.recent_returns[-20:]):.3g}"
        if self.last_eval:
            fields["eval"] = f"{self.last_eval.mean:.3g}"
        return fields

    def summary(self, status: str) -> dict[str, Any]:
        spec, ev = self.spec, self.last_eval
        return {
            "algo": spec.algo, "env": spec.env, "seed": spec.seed, "device": str(self.device), "status": status,
            "timesteps": self.algo.num_timesteps, "target_timesteps": spec.timesteps,
            "wall_s": round(self.wall_s, 3), "train_s": round(self.train_s, 3),
            "sps": round(self.algo.num_timesteps / self.train_s, 1) if self.train_s else None,
            "eval_mean": ev.mean if ev else None, "eval_std": ev.std if ev else None,
            "eval_episodes": len(ev.returns) if ev else 0, "solve_threshold": self.threshold,
            "solved_at_step": self.solved_at_step, "solved_at_s": self.solved_at_s,
            "thrust_version": __version__, "torch_version": torch.__version__,
        }


def train(algo: str, env: str, *, timesteps: int | None = None, seed: int = 0, device: str = "auto",
          run_dir: str | Path | None = None, runs_root: str | Path = "runs", eval_every: int | None = None,
          eval_episodes: int = 10, stop_at_return: float | None = None,
          overrides: dict[str, Any] | list[str] | None = None, checkpoint_every: int | None = None,
          torch_threads: int = 1, env_backend: str = "numpy", progress: bool = True,
          should_stop: Callable[[], bool] | None = None, on_record: Callback | None = None,
          log: Callable[[str], None] = print) -> dict[str, Any]:
    """Train `algo` on `env` in a new run folder; returns the summary (also saved as summary.json)."""
    spec = make_spec(algo, env, timesteps, seed, device, eval_every, eval_episodes, stop_at_return, overrides,
                     checkpoint_every, torch_threads, env_backend)
    torch_device = resolve_device(device, torch_threads)
    if run_dir is None:
        alias = spec.env.split("/")[-1].split("-v")[0].lower()
        run_dir = new_run_dir(Path(runs_root), f"{spec.algo}-{alias}-s{seed}-{time.strftime('%Y%m%d-%H%M%S')}")
    run_dir = Path(run_dir)
    if (run_dir / "config.json").exists():
        raise RunDirError(f"{run_dir} already holds a run; continue it with `thrust train --resume {run_dir}` "
                          "or choose another --run-dir")
    log(f"thrust: training {spec.algo} on {spec.env} for {spec.timesteps:,} steps, device {torch_device}"
        f"{' (auto)' if device == 'auto' else ''}, run folder {run_dir}")
    trainer = Trainer(spec, run_dir, torch_device, progress, should_stop, on_record)
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(run_dir / "config.json", {**dataclasses.asdict(spec), "command": spec.command(),
                                                "thrust_version": __version__, "torch_version": torch.__version__})
    (run_dir / "metrics.jsonl").touch()
    return trainer.run()


def load_spec(run_dir: str | Path) -> RunSpec:
    path = Path(run_dir) / "config.json"
    if not path.is_file():
        raise RunDirError(f"{run_dir} is not a Thrust run folder (no config.json)")
    saved = read_json(path)
    fields = {f.name for f in dataclasses.fields(RunSpec)}
    return RunSpec(**{k: v for k, v in saved.items() if k in fields})


def resume(run_dir: str | Path, *, device: str | None = None, timesteps: int | None = None, progress: bool = True,
           should_stop: Callable[[], bool] | None = None, on_record: Callback | None = None,
           log: Callable[[str], None] = print) -> dict[str, Any]:
    """Continue a run from its last checkpoint (to its own budget, or to `timesteps` if given)."""
    run_dir = Path(run_dir)
    spec = load_spec(run_dir)
    if timesteps is not None:
        spec = dataclasses.replace(spec, timesteps=timesteps)
        atomic_write_json(run_dir / "config.json", {**read_json(run_dir / "config.json"), "timesteps": timesteps})
    torch_device = resolve_device(device or spec.device, spec.torch_threads)
    state = load_checkpoint(run_dir / LAST_CHECKPOINT, torch_device)
    trainer = Trainer(spec, run_dir, torch_device, progress, should_stop, on_record)
    trainer.restore(state)
    truncate_metrics(run_dir / "metrics.jsonl", trainer.algo.num_timesteps)
    log(f"thrust: resuming {spec.algo} on {spec.env} at step {trainer.algo.num_timesteps:,} of "
        f"{spec.timesteps:,}, device {torch_device}")
    return trainer.run()


def load_policy(run_dir: str | Path, device: str = "cpu") -> tuple[RunSpec, torch.nn.Module]:
    """The trained deterministic policy of a run (its `act(obs)`), on `device`."""
    spec = load_spec(run_dir)
    torch_device = resolve_device(device, spec.torch_threads)
    state = load_checkpoint(Path(run_dir) / LAST_CHECKPOINT, torch_device)
    algo_cls = ALGOS[spec.algo]
    config = apply_overrides(algo_cls.Config(), spec.config, spec.algo)
    env = make_batched(spec.env, 1, seed=0)
    algo = algo_cls(env.observation_space.shape, env.action_space, config, torch_device, spec.seed)
    algo.load_state_dict(state["algo"])
    algo.policy.eval()
    return spec, algo.policy


__all__ = ["RunSpec", "Trainer", "load_policy", "load_spec", "make_spec", "resume", "train"]
