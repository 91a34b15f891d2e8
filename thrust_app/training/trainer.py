"""The training loop every algorithm shares, and `train` / `resume` / `load_policy` around it.

`train("ppo", "cartpole")` starts a run in a new folder; `resume("runs/<name>")` continues one from its
last checkpoint, exactly where it stopped for Thrust's array-batched envs (the env state and every
random stream are in the checkpoint). The algorithm supplies `apply_schedules`, `iteration` and
`iteration_steps` (where the schedules are read: `learning_progress`); the
loop (`Trainer.run`) reads as the list of what happens each iteration. Records go to a RunLogger,
checkpoints to a Checkpointer; a caller can watch and steer the loop through `on_iteration`.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..algos import build_algorithm
from ..algos.base import Algorithm, Iteration, NumpyPolicy
from ..config import ConfigError
from ..envs.batched import make_batched
from ..envs.core import Discrete, MultiDiscrete
from ..envs.pipeline import Pipeline
from ..envs.tensors import EnvIO
from ..envs.vec import VecEnv
from ..runs.files import (
    CONFIG_FILE,
    LAST_CHECKPOINT,
    METRICS_FILE,
    STOP_FILE,
    SUMMARY_FILE,
    RunDirError,
    atomic_write_json,
    load_checkpoint,
    new_run_dir,
    read_json,
    remove_stale_temporaries,
    truncate_metrics,
)
from ..runs.lock import RunLock
from ..speed.switches import apply_speed
from ..version import __version__
from .checkpointer import Checkpointer
from .device import resolve_device
from .evaluation import EvalResult, evaluate
from .normalization import evaluated_policy, normalized, on_raw_observations
from .run_logger import RecordListener, RunLogger
from .run_spec import RunSpec, load_spec, make_spec, solve_threshold, with_overrides

#: Seeds of evaluation episodes start here, away from the training envs' seeds.
EVAL_SEED_OFFSET = 1_000_000


class Every:
    """True once per `interval` steps: at the first step at or past each multiple of it."""

    def __init__(self, interval: int, step: int = 0) -> None:
        self.interval = interval
        self.next_step = (step // interval + 1) * interval

    def __call__(self, step: int) -> bool:
        if step < self.next_step:
            return False
        self.next_step = (step // self.interval + 1) * self.interval
        return True


def env_device(env_backend: str, device: torch.device) -> str:
    """Where a run's env keeps its arrays: a torch env on the training device (no host copy per step), a
    numpy env on the host, whatever the device (EnvIO copies its arrays to the learner)."""
    return str(device) if env_backend == "torch" else "cpu"


#: Called after every iteration with the trainer: it may read progress and records, call
#: `trainer.checkpoint(path)` and `trainer.request_stop()`.
IterationHook = Callable[["Trainer"], None]


def host_policy(policy: torch.nn.Module) -> NumpyPolicy:
    """The deterministic policy of a copy of `policy` on the CPU, as evaluations on a GPU run act: an
    evaluation steps its episodes one batch at a time, and on the GPU each step would pay a copy there and
    back for a forward of a few rows (on an H200 an evaluation of `--preset gpu`, 10 CartPole episodes,
    takes about 45 ms this way against about 130 ms acting on the GPU)."""
    return NumpyPolicy(copy.deepcopy(policy).cpu())


def make_training_env(spec: RunSpec, algo: Algorithm, device: torch.device) -> VecEnv:
    """The run's vec env: its copies, seed, array backend, observation pipeline and workers, normalised
    where the config says so. Actions come from the policy's own action space, so the env need not
    re-check them (a sync on GPU)."""
    config = algo.config
    env = make_batched(
        spec.env,
        config.n_envs,
        seed=spec.seed,
        backend=spec.env_backend,
        device=env_device(spec.env_backend, device),
        check_actions=False,
        pipeline=Pipeline.of(config),
        vec_env=config.vec_env,
    )
    if not config.normalize:
        return env
    env = normalized(env, config)
    algo.use_normalizer(env)  # an off-policy algorithm keeps the env's own values and normalises its samples
    return env


def check_masks_fit(env: VecEnv, algo: Algorithm) -> None:
    """An env that offers action masks trains an algorithm that uses them, or the run is refused in one line."""
    if env.action_masks() is None:
        return
    if not algo.uses_masks or not isinstance(algo.action_space, Discrete | MultiDiscrete):
        raise ConfigError(
            f"{env.env_id} offers action masks, which Thrust's ppo, a2c and dqn use with Discrete (ppo and a2c also "
            f"MultiDiscrete) actions; {algo.name} would ignore them: train ppo, a2c or dqn"
        )


def learning_progress(algo: Algorithm, num_envs: int, timesteps: int) -> float:
    """The fraction of training left when `algo`'s next iteration learns, after its collection: where SB3 reads its
    schedules (the learning rate, PPO's clip range), 1 - (steps so far + the iteration's) / timesteps."""
    return max(0.0, 1.0 - (algo.num_timesteps + algo.iteration_steps(num_envs)) / timesteps)


class Trainer:
    """Runs one RunSpec in one run folder; `run()` trains until done, stopped or solved."""

    def __init__(
        self,
        spec: RunSpec,
        run_dir: Path,
        device: torch.device,
        progress: bool = True,
        on_record: RecordListener | None = None,
        on_iteration: IterationHook | None = None,
    ) -> None:
        self.spec = spec
        self.run_dir = run_dir
        self.device = device
        self.on_iteration = on_iteration
        torch.manual_seed(spec.seed)
        np.random.seed(spec.seed % 2**32)
        self.algo: Algorithm = build_algorithm(spec.algo, spec.env, spec.config, device, spec.seed)
        self.algo.total_timesteps = spec.timesteps
        self.env = make_training_env(spec, self.algo, device)
        self.env_io = EnvIO(device)
        self.obs = self.env_io.reset(self.env)
        check_masks_fit(self.env, self.algo)
        apply_speed(self.algo, self.env)  # the run's speed switches (speed/switches.py)
        threshold = spec.stop_at_return if spec.stop_at_return is not None else solve_threshold(spec.env)
        self.logger = RunLogger(run_dir, spec, threshold, progress, on_record)
        if spec.tensorboard:
            from ..runs.tensorboard import TensorBoardSink

            self.logger.listeners.append(TensorBoardSink(run_dir))
        self.checkpointer = Checkpointer(run_dir, spec, self.algo, self.env, self.env_io, self.logger, device)
        #: The status the run ends with once a stop was asked for: "stopped", or after a signal
        #: "interrupted" (SIGINT) / "terminated" (SIGTERM).
        self._stop_status: str | None = None
        self.diverged_at_step: int | None = None

    @property
    def step(self) -> int:
        return self.algo.num_timesteps

    # -- the loop ----------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Train to `timesteps` (or until stopped, solved or diverged); returns the summary. SIGINT and
        SIGTERM stop the run at the end of the current iteration, checkpoint kept (a second one at once)."""
        with stop_on_signals(self.request_stop):  # finish() too: a signal then changes nothing
            with self.logger.progress_bar(self.step):
                status = self.train_until_done()
            return self.finish(status)

    def train_until_done(self) -> str:
        """Iterate until the budget is spent ("finished"), an evaluation reaches stop_at_return ("solved"), a stop is
        asked for ("stopped"; "interrupted" / "terminated" by a signal), or a loss or weight is not finite ("diverged")."""
        self.start_schedule()
        try:
            while self.step < self.spec.timesteps:
                status = self.after_iteration(self.run_iteration())
                if status is not None:
                    return status
        except KeyboardInterrupt:
            return "interrupted"
        return "finished"

    def start_schedule(self) -> None:
        """When records, evaluations and checkpoints fall due, counted from the step the run is at."""
        spec, step = self.spec, self.step
        self.log_due, self.eval_due = Every(max(1000, spec.timesteps // 200), step), Every(spec.eval_every, step)
        self.checkpoint_due = Every(spec.checkpoint_every, step)

    def run_iteration(self) -> Iteration:
        """The schedules set for this iteration's learning, then one iteration of the algorithm, timed as training."""
        self.algo.apply_schedules(learning_progress(self.algo, self.env.num_envs, self.spec.timesteps))
        with self.logger.clock.timing(training=True):
            return self.algo.iteration(self.env, self.env_io, self.obs)

    def after_iteration(self, iteration: Iteration) -> str | None:
        """Record an iteration and do what falls due (a record, an evaluation, a checkpoint, the caller's hook); the
        status the run ends with here, or None to go on. A seed batch (seed_batch.py) calls it for each seed."""
        spec = self.spec
        if not all(math.isfinite(value) for value in iteration.stats.values()):  # weights: at each checkpoint
            self.diverged_at_step = self.step
            return "diverged"
        self.obs = iteration.obs
        iteration.stats["learning_rate"] = self.algo.learning_rate
        self.logger.add_iteration(iteration)
        if self.log_due(self.step) or self.step >= spec.timesteps:
            self.logger.write_train(self.step)
        if self.eval_due(self.step) and self.evaluate() and spec.stop_at_return is not None:
            return "solved"
        if self.checkpoint_due(self.step) and not self.save_finite_checkpoint():
            return "diverged"
        if self.on_iteration is not None:
            self.on_iteration(self)
        if self.stop_requested():
            return self._stop_status or "stopped"
        return None

    def evaluate(self) -> bool:
        """Evaluate the deterministic policy and record it; True when the mean return reaches stop_at_return
        (or, without one, the env's solve threshold)."""
        with self.logger.clock.timing(training=False):
            policy = evaluated_policy(self.algo, self.env)
            act = NumpyPolicy(policy) if self.device.type == "cpu" else host_policy(policy)
            seed = self.spec.seed + EVAL_SEED_OFFSET
            result = evaluate(act, self.spec.env, self.spec.eval_episodes, seed, None, Pipeline.of(self.algo.config))
        return self.record_eval(result)

    def record_eval(self, result: EvalResult) -> bool:
        """Record an evaluation; True when its mean return reaches stop_at_return (or the solve threshold)."""
        self.logger.write_eval(result, self.step)
        return self.logger.threshold is not None and result.mean >= self.logger.threshold

    def finish(self, status: str) -> dict[str, Any]:
        """Last records (a closing evaluation unless this step has one), a checkpoint, the summary. A
        diverged run writes no checkpoint: the last one, from before the divergence, stays."""
        if status in ("finished", "solved"):
            if self.logger.has_pending():
                self.logger.write_train(self.step)
            if self.logger.last_eval_step != self.step:
                self.evaluate()
        if status != "diverged" and not self.save_finite_checkpoint():
            status = "diverged"
        summary = self.logger.summary(status, self.step, self.device)
        summary["diverged_at_step"] = self.diverged_at_step
        summary["run_dir"] = str(self.run_dir)
        atomic_write_json(self.run_dir / SUMMARY_FILE, summary)
        self.logger.close()
        self.env.close()
        return summary

    # -- what a caller may ask for ----------------------------------------------------------------
    def checkpoint(self, path: Path | None = None) -> Path:
        """Save everything needed to continue from here (to the run's last.pt unless told another path)."""
        return self.checkpointer.save(self.obs, path)

    def save_finite_checkpoint(self) -> bool:
        """Checkpoint to last.pt, unless a weight is no longer finite: then nothing is written (the last
        checkpoint, finite, stays) and the run has diverged here."""
        if not self.algo.parameters_finite():
            self.diverged_at_step = self.step
            return False
        self.checkpoint()
        return True

    def restore(self, state: dict[str, Any]) -> None:
        self.obs = self.checkpointer.restore(state)

    def request_stop(self, status: str = "stopped") -> None:
        """Stop after this iteration, checkpoint kept; the run ends with `status`."""
        self._stop_status = self._stop_status or status

    def stop_requested(self) -> bool:
        """True once `request_stop()` was called or someone (the dashboard, a user) created the STOP file."""
        stop_file = self.run_dir / STOP_FILE
        if stop_file.exists():
            stop_file.unlink(missing_ok=True)
            return True
        return self._stop_status is not None


@contextmanager
def stop_on_signals(request_stop: Callable[[str], None]) -> Iterator[None]:
    """While inside, SIGINT and SIGTERM call `request_stop("interrupted" / "terminated")`; a second one
    raises KeyboardInterrupt at once. Only the main thread can take signals: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    statuses = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}
    received: list[int] = []

    def handle(signum: int, frame: Any) -> None:
        if received:
            raise KeyboardInterrupt
        received.append(signum)
        request_stop(statuses[signum])

    previous = {signum: signal.signal(signum, handle) for signum in statuses}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def train(
    algo: str,
    env: str,
    *,
    timesteps: int | None = None,
    seed: int = 0,
    device: str = "auto",
    run_dir: str | Path | None = None,
    runs_root: str | Path = "runs",
    eval_every: int | None = None,
    eval_episodes: int = 10,
    stop_at_return: float | None = None,
    overrides: dict[str, Any] | list[str] | None = None,
    checkpoint_every: int | None = None,
    torch_threads: int = 1,
    env_backend: str | None = None,
    tensorboard: bool = False,
    preset: str = "default",
    progress: bool = True,
    on_record: RecordListener | None = None,
    on_iteration: IterationHook | None = None,
    log: Callable[[str], None] = print,
    env_spec: str | None = None,
) -> dict[str, Any]:
    """Train `algo` on `env` in a new run folder, from its `preset` ("default", or a named one such as
    "fast"); returns the summary (also saved as summary.json). `env_spec`: the gymnasium spec JSON of an env
    object registered under a derived id (envs/instances.py), kept in config.json."""
    spec = make_spec(
        algo,
        env,
        timesteps,
        seed,
        device,
        eval_every,
        eval_episodes,
        stop_at_return,
        overrides,
        checkpoint_every,
        torch_threads,
        env_backend,
        tensorboard,
        preset,
    )
    spec = dataclasses.replace(spec, env_spec=env_spec)
    torch_device = resolve_device(device, torch_threads)
    run_dir = claim_run_dir(spec, run_dir, runs_root)
    with RunLock(run_dir):
        claim_run_dir(spec, run_dir, runs_root)  # again, now that no one else can write the folder
        return _train_in(run_dir, spec, torch_device, device, progress, on_record, on_iteration, log)


def _train_in(
    run_dir: Path,
    spec: RunSpec,
    torch_device: torch.device,
    device: str,
    progress: bool,
    on_record: RecordListener | None,
    on_iteration: IterationHook | None,
    log: Callable[[str], None],
) -> dict[str, Any]:
    log(
        f"thrust: training {spec.algo} on {spec.env} for {spec.timesteps:,} steps, device {torch_device}"
        f"{' (auto)' if device == 'auto' else ''}, run folder {run_dir}"
    )
    trainer = Trainer(spec, run_dir, torch_device, progress, on_record, on_iteration)
    for note in trainer.algo.notes:
        log(f"thrust: {note}")
    write_config(run_dir, spec)
    return trainer.run()


def claim_run_dir(spec: RunSpec, run_dir: str | Path | None, runs_root: str | Path) -> Path:
    """The folder a new run writes to: `run_dir`, which must not hold a run yet, or a fresh
    `runs_root/<algo>-<env>-s<seed>-<time>`."""
    if run_dir is None:
        alias = spec.env.split("/")[-1].split("-v")[0].lower()
        stem = f"{spec.algo}-{alias}-s{spec.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
        return new_run_dir(Path(runs_root), stem)
    run_dir = Path(run_dir)
    if (run_dir / CONFIG_FILE).exists():
        raise RunDirError(
            f"{run_dir} already holds a run; continue it with `thrust train --resume {run_dir}` or choose another --run-dir"
        )
    return run_dir


def write_config(run_dir: Path, spec: RunSpec) -> None:
    """config.json (the spec, the command that repeats it, the versions) and an empty metrics file."""
    run_dir.mkdir(parents=True, exist_ok=True)
    versions = {"thrust_version": __version__, "torch_version": torch.__version__}
    atomic_write_json(run_dir / CONFIG_FILE, {**dataclasses.asdict(spec), "command": spec.command(), **versions})
    (run_dir / METRICS_FILE).touch()


@dataclasses.dataclass
class ResumeFrom:
    """Where and how `resume` continues: another checkpoint than the folder's last.pt (a PBT exploit
    continues from the better trial's), and settings changed on the way (its new learning rate)."""

    checkpoint: Path | None = None
    overrides: dict[str, Any] = dataclasses.field(default_factory=dict)


def resume(
    run_dir: str | Path,
    *,
    device: str | None = None,
    timesteps: int | None = None,
    start: ResumeFrom | None = None,
    progress: bool = True,
    on_record: RecordListener | None = None,
    on_iteration: IterationHook | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Continue a run from its last checkpoint (to its own budget, or to `timesteps` if given); `start`
    continues from another checkpoint and/or under changed settings, written to config.json."""
    run_dir = Path(run_dir)
    load_spec(run_dir)  # not a run folder: say so before taking its lock
    with RunLock(run_dir):
        remove_stale_temporaries(run_dir)  # a run killed mid-write leaves its temporary file behind
        return _resume_in(run_dir, device, timesteps, start or ResumeFrom(), progress, on_record, on_iteration, log)


def _resume_in(
    run_dir: Path,
    device: str | None,
    timesteps: int | None,
    start: ResumeFrom,
    progress: bool,
    on_record: RecordListener | None,
    on_iteration: IterationHook | None,
    log: Callable[[str], None],
) -> dict[str, Any]:
    spec = load_spec(run_dir)
    if timesteps is not None:
        spec = dataclasses.replace(spec, timesteps=timesteps)
    if start.overrides:
        spec = with_overrides(spec, start.overrides)
    summary_path = run_dir / SUMMARY_FILE
    done = read_json(summary_path) if summary_path.exists() and start.checkpoint is None else {}
    if done.get("status") in ("finished", "solved") and done.get("timesteps", 0) >= spec.timesteps:
        raise RunDirError(
            f"{run_dir} already {done['status']} at step {done['timesteps']:,} of its {spec.timesteps:,}; "
            f"to train on, give a larger budget: `thrust train --resume {run_dir} --timesteps N`"
        )
    torch_device = resolve_device(device or spec.device, spec.torch_threads)
    trainer = Trainer(spec, run_dir, torch_device, progress, on_record, on_iteration)
    trainer.restore(trainer.checkpointer.load(start.checkpoint))
    for note in trainer.algo.notes:
        log(f"thrust: {note}")
    if start.overrides:
        write_config(run_dir, spec)
    elif timesteps is not None:
        atomic_write_json(run_dir / CONFIG_FILE, {**read_json(run_dir / CONFIG_FILE), "timesteps": timesteps})
    truncate_metrics(run_dir / METRICS_FILE, trainer.step)
    log(f"thrust: resuming {spec.algo} on {spec.env} at step {trainer.step:,} of {spec.timesteps:,}, device {torch_device}")
    return trainer.run()


def load_policy(run_dir: str | Path, device: str = "cpu") -> tuple[RunSpec, torch.nn.Module]:
    """The trained deterministic policy of a run (its `act(obs)`), on `device`."""
    spec = load_spec(run_dir)
    torch_device = resolve_device(device, spec.torch_threads)
    state = load_checkpoint(Path(run_dir) / LAST_CHECKPOINT)
    algo = build_algorithm(spec.algo, spec.env, spec.config, torch_device, spec.seed)
    algo.load_state_dict(state["algo"])
    algo.policy.eval()
    return spec, on_raw_observations(algo.policy, algo.config, state["env_state"]).eval()


__all__ = ["Every", "ResumeFrom", "RunSpec", "Trainer", "load_policy", "load_spec", "make_spec", "resume", "train"]
