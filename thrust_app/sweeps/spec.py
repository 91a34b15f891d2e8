"""A sweep file (`thrust sweep SWEEP.yaml`): its keys, the choices each takes, and the checks every
value passes before any trial runs; `load_sweep` reads one back from a sweep folder's sweep.json."""

from __future__ import annotations

import dataclasses
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
        try:
            document = yaml.safe_load(Path(path).read_text())
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
        spec.check()
        return spec

    def check(self) -> None:
        """Every choice checked before any trial runs: the settings through Thrust's own config checks."""
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
        for name, space in self.search.items():
            _check_space(name, space)
        if self.sampler == "grid" and any(space["type"] != "choice" for space in self.search.values()):
            raise ConfigError("the grid sampler needs every search entry to be a choice (type: choice, values: [...])")
        corner = {name: _first_value(space) for name, space in self.search.items()}
        make_spec(self.algo, self.env, self.timesteps, overrides={**self.base, **corner})


def _check_space(name: str, space: Any) -> None:
    kinds = {"choice": ("values",), "int": ("low", "high"), "float": ("low", "high"), "loguniform": ("low", "high")}
    if not isinstance(space, dict) or space.get("type") not in kinds:
        raise ConfigError(f"search.{name}: give a type ({', '.join(kinds)}) and its values or low/high")
    absent = [key for key in kinds[space["type"]] if key not in space]
    if absent:
        raise ConfigError(f"search.{name}: a {space['type']} needs {', '.join(absent)}")


def _first_value(space: dict[str, Any]) -> Any:
    return space["values"][0] if space["type"] == "choice" else space["low"]


def load_sweep(folder: Path) -> SweepSpec:
    """The spec a sweep folder's sweep.json holds."""
    if not (Path(folder) / "sweep.json").is_file():
        raise ConfigError(f"{folder} is not a sweep folder (no sweep.json); start one with `thrust sweep SWEEP.yaml`")
    return SweepSpec(**read_json(Path(folder) / "sweep.json"))
