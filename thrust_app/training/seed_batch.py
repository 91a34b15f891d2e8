"""Many seeds of one run in one process: `train_seeds("ppo", "CartPole-v1", seeds=range(32))`, or
`thrust train ppo CartPole-v1 --seeds 0-31`.

Each seed is an ordinary run in a folder of its own (its Trainer: env, logger, evaluations, checkpoints,
summary), so `thrust compare`, the dashboard, export and `--resume` see N single-seed runs. What the seeds
share is the iteration: `speed/stacked_seeds.py` collects every seed's rollout and computes every seed's
update as batched products over their stacked weights, then writes each seed's weights back. The loop
(`SeedBatch.run`) is the Trainer's, batched: one iteration for all, then each seed's records,
evaluations and checkpoints (`Trainer.after_iteration`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import torch

from ..algos import build_algorithm
from ..config import ConfigError
from ..envs.pipeline import Pipeline
from ..runs.lock import RunLock
from ..speed.stacked_seeds import StackedGreedy, StackedOnPolicy, unbatchable_reason
from .device import resolve_device
from .evaluation import EvalResult, evaluate
from .run_spec import RunSpec, make_spec
from .trainer import (
    EVAL_SEED_OFFSET,
    Trainer,
    claim_run_dir,
    learning_progress,
    make_training_env,
    stop_on_signals,
    write_config,
)

#: Most seeds one `--seeds` range may name (each seed keeps its envs, buffers and a run folder).
MAX_SEEDS = 4096


def parse_seeds(text: str) -> list[int]:
    """Seeds from "0-31", "3,5,8" or "0-7,100-103"; one line naming the problem otherwise."""
    seeds: list[int] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match or (match[2] is not None and int(match[2]) < int(match[1])):
            raise ConfigError(f"--seeds {text!r}: write a range such as 0-31, a list such as 3,5,8, or both (0-7,100-103)")
        seeds += range(int(match[1]), int(match[2] or match[1]) + 1)
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"--seeds {text!r} names a seed twice; each seed is one run")
    if len(seeds) > MAX_SEEDS:
        raise ConfigError(f"--seeds {text!r} names {len(seeds):,} seeds; at most {MAX_SEEDS:,} train in one process")
    return seeds


def check_batchable(spec: RunSpec, device: torch.device) -> None:
    """Refuse, in one line, a run whose seeds cannot train as one batch (before any folder is made)."""
    algo = build_algorithm(spec.algo, spec.env, spec.config, device, spec.seed)
    env = make_training_env(spec, algo, device)
    try:
        reason = unbatchable_reason(algo, env)
    finally:
        env.close()
    if reason:
        raise ConfigError(
            f"--seeds trains the seeds as one batch, but {reason}; train them as separate runs instead "
            "(`thrust sweep` with `seeds: N`, or one `thrust train --seed S` each)"
        )


@contextmanager
def as_global_stream(stream: torch.Generator) -> Iterator[None]:
    """While inside, torch's global generator is `stream` (what a seed's checkpoint saves as its random stream);
    `stream` goes on from wherever the global one got to."""
    torch.set_rng_state(stream.get_state())
    try:
        yield
    finally:
        stream.set_state(torch.get_rng_state())


def global_stream() -> torch.Generator:
    """A generator where torch's global one is now: a lone run draws its rollout noise from there."""
    stream = torch.Generator()
    stream.set_state(torch.get_rng_state())
    return stream


class SeedTrainer(Trainer):
    """A seed of a batch: its evaluation may come from the batch's evaluation of all seeds together."""

    #: An evaluation of this seed's policy at this step, made by the batch; None: evaluate alone.
    evaluated: EvalResult | None = None

    def evaluate(self) -> bool:
        if self.evaluated is None:
            return super().evaluate()
        result, self.evaluated = self.evaluated, None
        return self.record_eval(result)


class SeedBatch:
    """The Trainers of one run's seeds, iterated together (`run`)."""

    def __init__(self, trainers: list[SeedTrainer], streams: list[torch.Generator], progress: bool = True) -> None:
        self.trainers, self.streams = trainers, dict(zip(map(id, trainers), streams, strict=True))
        self.active = list(trainers)
        self.summaries: dict[int, dict[str, Any]] = {}
        self.progress = progress
        self.batch = self.stack()

    def stack(self) -> StackedOnPolicy:
        """The batch of the seeds still training."""
        return StackedOnPolicy([t.algo for t in self.active], [self.streams[id(t)] for t in self.active])

    def run(self) -> list[dict[str, Any]]:
        """Train every seed until it is done (its budget spent, solved, diverged or stopped); their summaries."""
        for trainer in self.trainers:
            trainer.start_schedule()
        with stop_on_signals(self.request_stop), self.progress_bar() as advance:
            try:
                while self.active:
                    advance(self.train_one_iteration())
            except KeyboardInterrupt:
                for trainer in list(self.active):
                    self.finish(trainer, "interrupted")
        return [self.summaries[id(t)] for t in self.trainers]

    def train_one_iteration(self) -> int:
        """One iteration of every active seed, then each seed's records, evaluations and checkpoints; a seed
        that is done here finishes and leaves the batch. Returns the env steps taken."""
        for trainer in self.active:
            trainer.algo.apply_schedules(learning_progress(trainer.algo, trainer.env.num_envs, trainer.spec.timesteps))
        with ExitStack() as timing:  # the batch's time is each seed's training time: they trained together
            for trainer in self.active:
                timing.enter_context(trainer.logger.clock.timing(training=True))
            iterations = self.batch.iteration([t.env for t in self.active], [t.obs for t in self.active])
        self.evaluate_together([t for t in self.active if t.step >= t.eval_due.next_step])  # due after this iteration
        done = []
        for trainer, iteration in zip(list(self.active), iterations, strict=True):
            with as_global_stream(self.streams[id(trainer)]):
                status = trainer.after_iteration(iteration)
            if status is None and trainer.step >= trainer.spec.timesteps:
                status = "finished"
            if status is not None:
                done.append((trainer, status))
        closing = [t for t, status in done if status in ("finished", "solved") and t.logger.last_eval_step != t.step]
        self.evaluate_together(closing)  # the closing evaluation `finish` makes
        for trainer, status in done:
            self.finish(trainer, status)
        if done and self.active:
            self.batch = self.stack()
        return sum(iteration.steps for iteration in iterations)

    def evaluate_together(self, trainers: list[SeedTrainer]) -> None:
        """Evaluate these seeds at once: each seed's episodes (on its own evaluation seeds) side by side, one stacked
        forward per step for all (StackedGreedy); each seed records its share when it next evaluates. A normalised
        run's seeds evaluate alone (each behind its own statistics), as does a seed alone."""
        if len(trainers) < 2 or trainers[0].algo.config.normalize:
            return
        spec = trainers[0].spec
        seeds = [t.spec.seed + EVAL_SEED_OFFSET + i for t in trainers for i in range(spec.eval_episodes)]
        with ExitStack() as timing:
            for trainer in trainers:
                timing.enter_context(trainer.logger.clock.timing(training=False))
            policy = StackedGreedy(self.batch, spec.eval_episodes, [self.active.index(t) for t in trainers])
            result = evaluate(policy, spec.env, len(seeds), seeds, None, Pipeline.of(spec.config))
        for k, trainer in enumerate(trainers):
            share = slice(k * spec.eval_episodes, (k + 1) * spec.eval_episodes)
            successes = None if result.successes is None else result.successes[share]
            trainer.evaluated = EvalResult(result.returns[share], result.lengths[share], successes)

    def finish(self, trainer: Trainer, status: str) -> None:
        with as_global_stream(self.streams[id(trainer)]):
            self.summaries[id(trainer)] = trainer.finish(status)
        self.active.remove(trainer)

    def request_stop(self, status: str = "stopped") -> None:
        for trainer in self.active:
            trainer.request_stop(status)

    @contextmanager
    def progress_bar(self) -> Iterator[Callable[[int], None]]:
        """A tqdm bar of all seeds' env steps (with `progress`); yields what advances it."""
        if not self.progress:
            yield lambda steps: None
            return
        from tqdm.auto import tqdm

        total = sum(t.spec.timesteps - t.step for t in self.trainers)
        with tqdm(total=total, unit="steps", unit_scale=True, desc=f"{len(self.trainers)} seeds") as bar:
            yield lambda steps: bar.update(min(steps, bar.total - bar.n))


def train_seeds(
    algo: str,
    env: str,
    seeds: Iterable[int],
    *,
    device: str = "cpu",
    torch_threads: int = 1,
    runs_root: str | Path = "runs",
    run_dirs: Sequence[str | Path] | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
    **settings: Any,
) -> list[dict[str, Any]]:
    """Train `algo` on `env` once per seed, all seeds in this process as one batch, each in a new run folder under
    `runs_root` (or in `run_dirs`, one per seed); the summaries, in the seeds' order. `settings`: the run's other
    choices as `train` and `make_spec` name them (timesteps, eval_every, eval_episodes, stop_at_return,
    overrides, checkpoint_every, env_backend, tensorboard, preset)."""
    seeds = list(seeds)
    if not seeds:
        raise ConfigError("no seeds to train; give at least one (--seeds 0-7)")
    choices = {"device": device, "torch_threads": torch_threads, **settings}
    specs = [make_spec(algo, env, seed=seed, **choices) for seed in seeds]
    torch_device = resolve_device(device, torch_threads)
    check_batchable(specs[0], torch_device)
    with ExitStack() as locks:
        trainers, streams = [], []
        for spec, asked in zip(specs, run_dirs or [None] * len(specs), strict=True):
            run_dir = claim_run_dir(spec, asked, runs_root)
            locks.enter_context(RunLock(run_dir))
            trainers.append(SeedTrainer(spec, run_dir, torch_device, progress=False))
            streams.append(global_stream())  # right after the seed's Trainer seeded torch: the lone run's stream
            write_config(run_dir, spec)
        first = specs[0]
        log(
            f"thrust: training {first.algo} on {first.env} for {first.timesteps:,} steps per seed, {len(seeds)} seeds "
            f"as one batch ({seeds[0]}..{seeds[-1]}), device {torch_device}, run folders under {runs_root}"
        )
        return SeedBatch(trainers, streams, progress).run()
