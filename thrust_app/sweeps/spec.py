"""A sweep file (`thrust sweep SWEEP.yaml`): its keys, the choices each takes, and the checks every
value passes before any trial runs; `load_sweep` reads one back from a sweep folder's sweep.json."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path
from typing import Any

import yaml

from ..config import ConfigError
from ..runs.files import read_json
from ..training.run_spec import make_spec

SWEEP_FILE = "sweep.yaml"


JOURNAL_FILE = "study.journal"


#: What a trial optimises: the final evaluation's mean return (maximised), or how soon an evaluation
#: first reached the env's threshold (minimised): in env steps (a run that never solves counts as 2x the
#: budget) or in training seconds, evaluations excluded (never solved: 2x the run's whole training time).
METRICS = {"eval_mean": "maximize", "solved_at_step": "minimize", "solved_at_train_s": "minimize"}


SAMPLERS = ("tpe", "random", "grid")


#: How trials are stopped early (or, with PBT, continued from better ones). Optuna's successive-halving
#: pruner is asynchronous, so "asha" is the same pruner there; PBT needs Ray.
PRUNERS = ("none", "median", "successive_halving", "asha", "pbt")


ENGINES = ("optuna", "ray")


TRIAL_FILE = "trial.json"


#: The Ray engine's record of its trials (ray_engine.Ledger writes it).
LEDGER_FILE = "trials.json"


@dataclasses.dataclass
class SweepSpec:
    """A sweep file's contents (YAML keys of the same names)."""

    name: str
    algo: str
    env: str
    timesteps: int
    search: dict[str, dict[str, Any]]
    base: dict[str, Any] = dataclasses.field(default_factory=dict)
    seeds: int = 1
    seed: int = 0
    #: Train each trial's seeds in its worker as one batch, their nets stacked (`thrust train --seeds`; PPO and
    #: A2C, Optuna engine, no pruner).
    batch_seeds: bool = False
    trials: int = 8
    metric: str = "eval_mean"
    sampler: str = "tpe"
    pruner: str = "none"
    #: Trials the pruner lets finish before it compares (Optuna's default 5; the zoo's too).
    pruner_startup_trials: int = 5
    workers: int = 0  #: 0: as many as the machine has cores (Optuna) / as Ray's resources allow
    eval_every: int | None = None
    eval_episodes: int = 10
    #: "optuna" (embedded, worker processes on this machine) or "ray" (Ray Tune: ASHA, PBT, clusters).
    engine: str = "optuna"
    #: CPU cores per trial: its torch threads, and what Ray reserves for it.
    cpus_per_trial: int = 1
    #: GPU share per trial (0.25: four trials per GPU); above 0 trials train on CUDA.
    gpus_per_trial: float = 0.0
    #: PBT: env steps between exploit/explore rounds (default: eval_every; a round needs an evaluation).
    pbt_interval: int | None = None
    #: Ray: times a failed trial is restarted from its last checkpoint before it counts as failed.
    max_failures: int = 2

    @classmethod
    def from_yaml(cls, path: str | Path) -> SweepSpec:
        """The sweep file at `path`, every value checked (`check`) before anything is written."""
        try:
            document = yaml.safe_load(Path(path).read_bytes().decode("utf-8"))
        except UnicodeDecodeError as err:
            raise ConfigError(f"{path}: not UTF-8 text (byte {err.start}); save the sweep file as UTF-8") from None
        except (OSError, yaml.YAMLError) as err:
            raise ConfigError(f"{path}: cannot read the sweep file: {str(err).splitlines()[0]}") from None
        if not isinstance(document, dict):
            raise ConfigError(f"{path}: a sweep file is a mapping of name, algo, env, timesteps, search, ...")
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(document) - known)
        missing = sorted(
            f.name
            for f in dataclasses.fields(cls)
            if f.name not in document and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        )
        if unknown:
            raise ConfigError(f"{path}: unknown keys {', '.join(unknown)}; the keys are {', '.join(sorted(known))}")
        if missing:
            raise ConfigError(f"{path}: missing {', '.join(missing)}")
        spec = cls(**document)
        try:
            spec.check()
        except ConfigError as err:
            raise ConfigError(f"{path}: {err}") from None
        return spec

    def check(self) -> None:
        """Every choice checked before any trial runs: each key's type, the name as one folder, the search
        space's bounds, and the settings at both ends of the space through the checks a run makes."""
        check_types(self)
        if not SAFE_NAME.fullmatch(self.name) or self.name in (".", ".."):
            raise ConfigError(
                f"name must be one folder name (letters, digits, '.', '_', '-'; the sweep's folder under --runs-root), "
                f"got {self.name!r}"
            )
        if self.metric not in METRICS or self.sampler not in SAMPLERS or self.pruner not in PRUNERS:
            raise ConfigError(
                f"metric must be one of {', '.join(METRICS)}, sampler one of {', '.join(SAMPLERS)}, "
                f"pruner one of {', '.join(PRUNERS)}"
            )
        if self.engine not in ENGINES:
            raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if min(self.seeds, self.trials, self.timesteps, self.cpus_per_trial) < 1 or self.workers < 0:
            raise ConfigError("seeds, trials, timesteps and cpus_per_trial must be >= 1, workers >= 0")
        if self.gpus_per_trial < 0 or self.max_failures < 0:
            raise ConfigError("gpus_per_trial and max_failures must be >= 0")
        if self.pruner == "pbt" and self.engine != "ray":
            raise ConfigError("pruner: pbt needs the Ray engine: add `engine: ray` or run `thrust sweep --engine ray`")
        if self.pruner == "pbt" and (self.seeds != 1 or self.sampler == "grid"):
            raise ConfigError("PBT copies weights between trials, so each trial is one seed (seeds: 1), sampled (not grid)")
        if self.batch_seeds and (self.engine != "optuna" or self.pruner != "none" or self.algo not in ("ppo", "a2c")):
            raise ConfigError(
                "batch_seeds trains a trial's seeds together in one worker: ppo or a2c, the optuna engine, pruner none "
                "(a pruner decides on a trial's first seed alone)"
            )
        for name, space in self.search.items():
            _check_space(name, space)
        if self.sampler == "grid" and any(space["type"] != "choice" for space in self.search.values()):
            raise ConfigError("the grid sampler needs every search entry to be a choice (type: choice, values: [...])")
        for end in (0, -1):  # the settings at both ends of the space, as a run would build them
            corner = {name: _value_at(space, end) for name, space in self.search.items()}
            make_spec(
                self.algo,
                self.env,
                self.timesteps,
                eval_every=self.eval_every,
                eval_episodes=self.eval_episodes,
                overrides={**self.base, **corner},
            )


def _check_space(name: str, space: Any) -> None:
    kinds = {"choice": ("values",), "int": ("low", "high"), "float": ("low", "high"), "loguniform": ("low", "high")}
    if not isinstance(space, dict) or space.get("type") not in kinds:
        raise ConfigError(f"search.{name}: give a type ({', '.join(kinds)}) and its values or low/high")
    absent = [key for key in kinds[space["type"]] if key not in space]
    if absent:
        raise ConfigError(f"search.{name}: a {space['type']} needs {', '.join(absent)}")
    if space["type"] == "choice":
        if not isinstance(space["values"], list) or not space["values"]:
            raise ConfigError(f"search.{name}: values must be a non-empty list, got {space['values']!r}")
        return
    low, high = space["low"], space["high"]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)):
        raise ConfigError(f"search.{name}: low and high must be numbers, got {low!r} and {high!r}")
    if low > high:
        raise ConfigError(f"search.{name}: low ({low}) is above high ({high}); swap them")
    if (space["type"] == "loguniform" or space.get("log")) and low <= 0:
        raise ConfigError(f"search.{name}: a log scale needs low > 0, got {low}")


def _value_at(space: dict[str, Any], end: int) -> Any:
    """The first (end 0) or last (end -1) value of a search entry."""
    if space["type"] == "choice":
        return space["values"][end]
    return space["low"] if end == 0 else space["high"]


#: A sweep's name: one folder under the runs root.
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_types(spec: SweepSpec) -> None:
    """Each key of the sweep file holds the kind of value its field declares, or one ConfigError naming it."""
    names = {int: "a whole number", float: "a number", str: "text", dict: "a mapping", bool: "true or false"}
    hints = typing.get_type_hints(SweepSpec)
    for field in dataclasses.fields(spec):
        value, hint = getattr(spec, field.name), hints[field.name]
        optional = type(None) in typing.get_args(hint)
        kind = next((t for t in typing.get_args(hint) if t is not type(None)), None) if optional else hint
        kind = typing.get_origin(kind) or kind
        if value is None and optional:
            continue
        accepted = (int, float) if kind is float else (kind,)
        if isinstance(value, bool) is not (kind is bool) or not isinstance(value, accepted):
            raise ConfigError(f"{field.name} must be {names[kind]}, got {value!r}")


def load_sweep(folder: Path) -> SweepSpec:
    """The spec a sweep folder's sweep.json holds."""
    if not (Path(folder) / "sweep.json").is_file():
        raise ConfigError(f"{folder} is not a sweep folder (no sweep.json); start one with `thrust sweep SWEEP.yaml`")
    return SweepSpec(**read_json(Path(folder) / "sweep.json"))
