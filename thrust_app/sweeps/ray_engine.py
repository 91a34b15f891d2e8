"""The Ray Tune engine of `thrust sweep` (`engine: ray` in the sweep file, or `--engine ray`).

The same sweep file, the same run folders (`runs/<sweep>/trial-0003-s0/`, trained by `trial_runs.run_seed`
inside a Ray worker), with what Ray adds: ASHA and PBT schedulers, Optuna's TPE as a Ray searcher,
per-trial CPUs and GPU shares, retries of a failed trial from its last checkpoint, `Tuner.restore` after
the driver was killed, and clusters (`--address HOST:PORT` joins one; without it Thrust starts a
local Ray and stops it at the end).

A trial reports each evaluation of its first seed to Tune with a checkpoint: its settings and step, and
under PBT a copy of its trainer's state (outside PBT the state is the run folder's last.pt, written at
the report; a retry or a restore goes on from there); Tune stopping it (a scheduler's prune, PBT's
pause, the sweep being stopped) ends the run as "stopped", checkpoint and summary written, and the
ledger says why. A restart from another trial's checkpoint (a PBT exploit) continues the trial's own run
folder from that state under the trial's new settings (`trainer.ResumeFrom`), and its trial.json lists
each such exploit. The driver keeps the sweep's ledger, `runs/<sweep>/trials.json` (state, score,
settings, nodes of every trial), which `thrust sweep` and the dashboard read. Tune's own state and the
checkpoints are in `runs/<sweep>/ray/` (the storage path: on a cluster, the sweep folder must be on
storage every node sees).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import statistics
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import ray
from ray import tune

from ..config import ConfigError
from ..runs.files import LAST_CHECKPOINT, atomic_write_json, read_json
from ..training.run_spec import make_spec
from ..training.trainer import ResumeFrom, Trainer
from .ray_loopback import LOOPBACK, loopback_environment, pinned_to_loopback
from .spec import LEDGER_FILE, METRICS, TRIAL_FILE, SweepSpec
from .trial_runs import on_new_evaluation, run_folder, run_seed, score, score_so_far

RAY_FOLDER = "ray"  #: Tune's storage path inside the sweep folder
NAMES_FILE = "trial-names.json"  #: Tune's trial ids -> Thrust's trial numbers
SCRATCH = "scratch"  #: trials' temporary checkpoint folders inside the sweep folder, removed when the sweep ends
RUN_END_WAIT_S = 30  #: how long a stopped trial's worker waits for its run to end (within an iteration)
#: Tune's knobs Thrust sets for the driver (and a local Ray's workers, which inherit them).
TUNE_SETTINGS = {
    # A worker reused for the next trial waits this long for the stopped trial's run to end (it ends
    # within an iteration, see TrialReporter.watch); a worker not reused waits as long (RunEndingTrainable).
    "TUNE_FUNCTION_THREAD_TIMEOUT_S": str(RUN_END_WAIT_S),
    # Tune warns when checkpoints come faster than every 5 s; small runs evaluate (and checkpoint) that often.
    "TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S": "0",
}


@contextmanager
def ray_session(address: str | None, cpus: int) -> Iterator[None]:
    """Ray for the sweep: joined at `address` (left running), or a local one on 127.0.0.1 (stopped after)."""
    # Joining a cluster, the driver is on the cluster's network: only usage stats off there.
    environment = loopback_environment() if address is None else {"RAY_USAGE_STATS_ENABLED": "0"}
    environment.update(TUNE_SETTINGS)
    saved = {key: os.environ.get(key) for key in [*environment, "RAY_ADDRESS"]}
    os.environ.update(environment)
    if address is None:  # a local Ray: ray.init would otherwise join whatever RAY_ADDRESS names
        os.environ.pop("RAY_ADDRESS", None)
    if address is not None:
        use_cluster_token()
    # A local Ray, or a cluster on this machine's loopback: this process's own address is 127.0.0.1 too.
    on_loopback = address is None or address.split(":")[0] in (LOOPBACK, "localhost")
    where = {"address": address} if address else {"num_cpus": cpus, "include_dashboard": False, "_node_ip_address": LOOPBACK}
    try:
        with pinned_to_loopback() if on_loopback else nullcontext():
            ray.init(log_to_driver=False, **where)
        yield
    finally:
        ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def use_cluster_token() -> None:
    """A driver joining a cluster authenticates with the cluster's token (Ray 2.60 turns token auth on by
    default: ~/.ray/auth_token, or RAY_AUTH_TOKEN): Ray's own check, as `ray start` makes it, enables
    token mode when a token is there, unless RAY_AUTH_MODE says otherwise."""
    try:
        from ray._private.authentication.authentication_token_setup import maybe_enable_token_auth_if_token_available
    except ImportError:  # a Ray without token auth
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


class TrialNames:
    """Tune's trial_name_creator: "trial-0003", numbered in the order Tune creates trials. Tune copies
    this object, so the numbers live in the sweep folder (`trial-names.json`, written by the driver only)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / NAMES_FILE

    def __call__(self, trial: Any) -> str:
        numbers = read_json(self.path) if self.path.exists() else {}
        if trial.trial_id not in numbers:
            numbers[trial.trial_id] = max(numbers.values(), default=-1) + 1
            atomic_write_json(self.path, numbers)
        return f"trial-{numbers[trial.trial_id]:04d}"


def trial_number(name: str) -> int:
    """The number in a trial's name ("trial-0003": 3), which names its run folders."""
    return int(name.split("-")[1])


# -- what runs in a Ray worker ---------------------------------------------------------------------------
def train_trial(params: dict[str, Any], folder: str, sweep: dict[str, Any]) -> None:
    """Tune's function trainable: the trial's seeds one after another (as the embedded engine does),
    each evaluation of the first one reported with a checkpoint; the last report is the trial's score."""
    spec = SweepSpec(**sweep)
    root = Path(folder)
    number = trial_number(tune.get_context().get_trial_name())
    node = ray.get_runtime_context().get_node_id()
    scratch_root = root / SCRATCH
    scratch_root.mkdir(exist_ok=True)
    reporter = TrialReporter(spec, number, params, node, scratch_root)
    with tempfile.TemporaryDirectory(prefix="restart-", dir=scratch_root) as scratch:
        start = restart_point(tune.get_checkpoint(), Path(scratch), root, spec, number, params)
        scores = []
        for index in range(spec.seeds):
            first = index == 0
            summary = run_seed(root, spec, number, index, params, reporter.hook if first else None, start if first else None)
            if reporter.stopped:  # the scheduler stopped (ASHA) or paused (PBT) it: the run has checkpointed
                raise SystemExit(0)  # how Tune's runner thread expects a stopped trial to end
            if summary["status"] not in ("finished", "solved"):  # Tune restarts it from its last checkpoint
                raise RuntimeError(f"{summary['run_dir']} ended {summary['status']}")
            scores.append(score(summary, spec))
    tune.report({"score": statistics.fmean(scores), "step": spec.timesteps, "final": True, "node": node})


class TrialReporter:
    """Reports each new evaluation of a trial's first seed to Tune, with a checkpoint; when Tune stops the
    trial during a report (its scheduler's decision) the run is asked to stop, checkpoint kept."""

    def __init__(self, spec: SweepSpec, number: int, params: dict[str, Any], node: str, scratch_root: Path) -> None:
        self.spec = spec
        self.scratch_root = scratch_root
        self.meta = {"trial": number, "params": params}
        self.node = node
        self.stopped = False
        self.on_evaluation = on_new_evaluation(self.report)

    def hook(self, trainer: Trainer) -> None:
        self.watch(trainer)
        self.on_evaluation(trainer)

    def watch(self, trainer: Trainer) -> None:
        """Stop the run at the iteration Tune asks the trial to stop. Tune's public API says so only at the
        trial's next report (a whole evaluation interval later), so this reads the session's stop event
        (Ray's internal `ray.train._internal.session`; without it the run stops at its next report)."""
        try:
            from ray.train._internal.session import get_session

            stopping = get_session().stop_event.is_set()
        except (ImportError, AttributeError):
            return
        if stopping and not self.stopped:
            self.stopped = True
            trainer.request_stop("stopped")

    def report(self, trainer: Trainer) -> None:
        if self.stopped:
            return
        metrics = {
            "score": score_so_far(trainer, self.spec),
            "step": trainer.step,
            "eval_mean": trainer.logger.last_eval.mean,
            "node": self.node,
        }
        with tempfile.TemporaryDirectory(prefix="report-", dir=self.scratch_root) as folder:
            if self.spec.pruner == "pbt":  # other trials restart from this state, later too: Tune keeps a copy
                trainer.checkpoint(Path(folder) / LAST_CHECKPOINT)
            else:  # the run folder's own last.pt holds the state; Tune's checkpoint marks the trial and step
                trainer.save_finite_checkpoint()  # (weights no longer finite: the last finite last.pt stays)
            atomic_write_json(Path(folder) / TRIAL_FILE, {**self.meta, "step": trainer.step})
            try:
                tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(folder))  # copied to storage here
            except SystemExit:  # Tune ends a stopped trial's thread this way
                self.stopped = True
                trainer.request_stop("stopped")


def run_ending(function: Callable[[dict[str, Any]], None]) -> type:
    """Tune's trainable for `function`, whose worker lets a stopped trial's run end before it exits.

    Tune stops a trial's worker without waiting for the trial's thread (`FunctionTrainable.cleanup`
    joins it with timeout 0) when the worker is not kept for another trial, as with the last trials of a
    sweep; the worker process then exits and takes the thread with it, mid-iteration, leaving the run
    folder with its "incomplete" summary instead of the "stopped" one. Here the worker first waits up to
    RUN_END_WAIT_S for the run to end (it stops within an iteration, TrialReporter.watch). At the
    sweep's very end Tune kills a worker still stopping after 10 s."""
    from ray.train._internal.session import get_session  # Ray's internal session, as TrialReporter.watch reads
    from ray.tune.trainable.function_trainable import wrap_function

    class RunEndingTrainable(wrap_function(function)):
        def cleanup(self) -> None:
            try:
                get_session().finish(timeout=RUN_END_WAIT_S)  # stop event set, the thread joined
            finally:
                super().cleanup()

    return RunEndingTrainable


def restart_point(
    checkpoint: tune.Checkpoint | None, scratch: Path, root: Path, spec: SweepSpec, number: int, params: dict[str, Any]
) -> ResumeFrom | None:
    """Where a trial that Tune starts with a checkpoint goes on from (None: its run folder, as `run_seed`
    finds it): its own state (a retry after a failure, or Tuner.restore; outside PBT the checkpoint only
    marks the step, the state being the run folder's last.pt), or another trial's under this trial's
    settings (a PBT exploit, recorded in the run folder's trial.json)."""
    if checkpoint is None:
        return None
    checkpoint.to_directory(str(scratch))
    source = read_json(scratch / TRIAL_FILE)
    run_dir = run_folder(root, spec, number, 0)
    if source["trial"] == number and source["params"] == params:
        return ResumeFrom(checkpoint=scratch / LAST_CHECKPOINT) if (scratch / LAST_CHECKPOINT).exists() else None
    record = read_json(run_dir / TRIAL_FILE) if (run_dir / TRIAL_FILE).exists() else {}
    exploit = {"step": source["step"], "from_trial": source["trial"], "from_params": source["params"], "params": params}
    if record.get("exploits", [None])[-1] != exploit:  # Tune may restart a trial from the same one twice
        record["exploits"] = [*record.get("exploits", []), exploit]
        atomic_write_json(run_dir / TRIAL_FILE, record)
    return ResumeFrom(checkpoint=scratch / LAST_CHECKPOINT, overrides=params)


# -- the driver -------------------------------------------------------------------------------------------
def search_space(spec: SweepSpec) -> dict[str, Any]:
    """The sweep's search entries as Tune domains (grid: every choice a grid axis)."""
    space = {}
    for name, entry in spec.search.items():
        kind, log = entry["type"], entry["type"] == "loguniform" or bool(entry.get("log", False))
        if kind == "choice":
            space[name] = tune.grid_search(entry["values"]) if spec.sampler == "grid" else tune.choice(entry["values"])
        elif kind == "int":
            space[name] = (tune.lograndint if log else tune.randint)(int(entry["low"]), int(entry["high"]) + 1)
        else:
            space[name] = (tune.loguniform if log else tune.uniform)(float(entry["low"]), float(entry["high"]))
    return space


def searcher(spec: SweepSpec) -> Any:
    """TPE: Optuna's sampler inside Ray (OptunaSearch); random: Tune's own; grid: none (grid_search)."""
    import optuna
    from ray.tune.search.basic_variant import BasicVariantGenerator
    from ray.tune.search.optuna import OptunaSearch

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    if spec.sampler == "tpe" and spec.pruner != "pbt":  # PBT draws its population itself
        return OptunaSearch(sampler=optuna.samplers.TPESampler(seed=spec.seed))
    if spec.sampler == "grid":
        return None
    return BasicVariantGenerator(random_state=spec.seed)


def scheduler(spec: SweepSpec, eval_every: int) -> Any:
    """The sweep's pruner as a Tune scheduler, on env steps (each report is one evaluation)."""
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, MedianStoppingRule, PopulationBasedTraining

    if spec.pruner in ("asha", "successive_halving"):
        # max_t past the budget: ASHA stops a trial that reaches max_t, which would pre-empt its final report
        return ASHAScheduler(time_attr="step", max_t=spec.timesteps + 1, grace_period=eval_every, reduction_factor=3)
    if spec.pruner == "median":
        return MedianStoppingRule(time_attr="step", grace_period=eval_every, min_samples_required=spec.pruner_startup_trials)
    if spec.pruner == "pbt":
        return PopulationBasedTraining(
            time_attr="step",
            perturbation_interval=spec.pbt_interval or eval_every,
            hyperparam_mutations=search_space(spec),
            quantile_fraction=0.25,
            resample_probability=0.25,
            # Generations in step: with fewer slots than trials, asynchronous PBT keeps cloning the trials
            # that run from the paused ones (which do not advance), throwing their training away.
            synch=True,
        )
    return FIFOScheduler()


def run_ray_sweep(
    folder: Path,
    spec: SweepSpec,
    *,
    resume: bool = False,
    address: str | None = None,
    workers: int | None = None,
    log: Callable[[str], None] = print,
) -> None:
    """Run (or, after a killed driver, continue with Tuner.restore) the sweep on Ray Tune."""
    folder = folder.resolve()
    storage = folder / RAY_FOLDER
    eval_every = make_spec(spec.algo, spec.env, spec.timesteps, eval_every=spec.eval_every).eval_every
    concurrent = workers or spec.workers or None
    where = f"the Ray cluster at {address}" if address else f"a local Ray on {LOOPBACK}"
    if address is None and os.environ.get("RAY_ADDRESS"):
        ignored = os.environ["RAY_ADDRESS"]
        log(f"thrust: RAY_ADDRESS={ignored} is ignored: this sweep starts {where}; --address joins a cluster")
    with ray_session(address, os.cpu_count() or 1):
        if spec.gpus_per_trial > 0 and not ray.cluster_resources().get("GPU"):  # trials would wait forever
            where_now = f"the cluster at {address}" if address else "this machine"
            raise ConfigError(f"gpus_per_trial is {spec.gpus_per_trial}, but {where_now} has no GPU; set gpus_per_trial: 0")
        trainable = tune.with_resources(  # with_parameters puts its values in Ray's object store: inside the session
            run_ending(tune.with_parameters(train_trial, folder=str(folder), sweep=dataclasses.asdict(spec))),
            {"cpu": spec.cpus_per_trial, "gpu": spec.gpus_per_trial},
        )
        experiment = storage / spec.name
        if resume and tune.Tuner.can_restore(str(experiment)):
            log(f"thrust: continuing sweep {spec.name} on {where} (Tuner.restore: unfinished and failed trials resume)")
            tuner = tune.Tuner.restore(str(experiment), trainable, resume_unfinished=True, resume_errored=True)
        else:
            log(
                f"thrust: sweep {spec.name}: {spec.trials} trials x {spec.seeds} seed(s) of {spec.algo} on {spec.env}, "
                f"Ray Tune on {where}, pruner {spec.pruner}, folder {folder}"
            )
            tuner = new_tuner(trainable, folder, spec, eval_every, concurrent, log)
        tuner.fit()
    # what trials killed mid-checkpoint left behind (a stopped process runs no cleanup)
    shutil.rmtree(folder / SCRATCH, ignore_errors=True)
    interrupted = Ledger(folder, log).close_interrupted()
    if interrupted:
        log(f"thrust: {interrupted} trial(s) interrupted; continue with `thrust sweep --resume {folder}`")


def new_tuner(
    trainable: Any, folder: Path, spec: SweepSpec, eval_every: int, concurrent: int | None, log: Callable[[str], None]
) -> tune.Tuner:
    """A Tuner for a new sweep: the search space, searcher and scheduler of `spec`, Tune's state in the sweep
    folder, every checkpoint kept, the ledger as a callback."""
    names = TrialNames(folder)
    return tune.Tuner(
        trainable,
        param_space=search_space(spec),
        tune_config=tune.TuneConfig(
            metric="score",
            mode="max" if METRICS[spec.metric] == "maximize" else "min",
            search_alg=searcher(spec),
            scheduler=scheduler(spec, eval_every),
            num_samples=1 if spec.sampler == "grid" else spec.trials,
            max_concurrent_trials=concurrent,
            reuse_actors=True,  # one worker process (and torch import) serves many trials
            trial_name_creator=names,
            trial_dirname_creator=names,
        ),
        run_config=tune.RunConfig(
            name=spec.name,
            storage_path=str(folder / RAY_FOLDER),
            failure_config=tune.FailureConfig(max_failures=spec.max_failures),
            # Every checkpoint is kept: PBT restarts trials from other trials' older ones, and Tune's
            # experiment state, written in the background, can name one that a newer checkpoint has
            # already replaced, which Tuner.restore after a killed driver cannot load. Outside PBT a
            # checkpoint is a few bytes (TrialReporter.report).
            checkpoint_config=tune.CheckpointConfig(num_to_keep=None),
            callbacks=[Ledger(folder, log)],
            verbose=0,
        ),
    )


class Ledger(tune.Callback):
    """A Tune callback in the driver that keeps `trials.json`: every trial's state, score, settings and
    the nodes it ran on, written atomically after each change (the sweep's one writer of it)."""

    def __init__(self, folder: Path, log: Callable[[str], None]) -> None:
        self.path = folder / LEDGER_FILE
        self.log = log

    def __reduce__(self) -> tuple[Any, ...]:  # Tune pickles its callbacks with the experiment state
        return (Ledger, (self.path.parent, print))

    def _update(self, trial: Any, **fields: Any) -> dict[str, Any]:
        trials = read_json(self.path) if self.path.exists() else {}
        key = str(trial_number(trial.custom_trial_name))
        entry = trials.get(key, {"number": int(key), "state": "waiting", "score": None, "nodes": [], "failures": 0})
        entry.update(fields, params=dict(trial.config), trial_id=trial.trial_id)
        trials[key] = entry
        atomic_write_json(self.path, trials)
        return entry

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._update(trial, state="running")

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        entry = self._update(trial, state="running", step=result.get("step"), last=result.get("score"))
        if result.get("node") and result["node"] not in entry["nodes"]:
            self._update(trial, nodes=[*entry["nodes"], result["node"]])
        if result.get("final"):
            self._update(trial, score=result["score"])

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        final = bool(trial.last_result.get("final"))
        entry = self._update(trial, state="complete" if final else "pruned")
        number, step = entry["number"], entry.get("step")
        if final:
            self.log(f"thrust: trial {number} complete: score {entry['score']:.4g} with {entry['params']}")
        else:
            self.log(f"thrust: trial {number} pruned at step {step:,}" if step else f"thrust: trial {number} pruned")

    def on_trial_recover(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        entry = self._update(trial, state="running")
        self._update(trial, failures=entry["failures"] + 1)
        self.log(f"thrust: trial {entry['number']} failed; Tune restarts it from its last checkpoint")

    def close_interrupted(self) -> int:
        """After Tune returned: trials still running were interrupted (the sweep was stopped); how many."""
        trials = read_json(self.path) if self.path.exists() else {}
        running = [entry for entry in trials.values() if entry["state"] == "running"]
        for entry in running:
            entry["state"] = "interrupted"
        if running:
            atomic_write_json(self.path, trials)
        return len(running)

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        entry = self._update(trial, state="fail")
        self.log(f"thrust: trial {entry['number']} failed {entry['failures'] + 1} time(s); it counts as failed")


__all__ = ["Ledger", "run_ray_sweep", "train_trial"]
