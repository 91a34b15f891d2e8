"""A sweep's trials as its engine records them (Optuna's journal, or the Ray engine's trials.json): their
states, scores and settings, and the best one."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..runs.files import read_json
from .optuna_engine import distribution, open_study
from .spec import LEDGER_FILE, METRICS, load_sweep


@dataclasses.dataclass
class TrialRecord:
    """One trial as the sweep's engine holds it (Optuna's study, or the Ray engine's trials.json)."""

    number: int
    state: str  #: complete, pruned, fail, running, waiting, or (Ray) interrupted
    score: float | None
    params: dict[str, Any]


def list_trials(folder: Path) -> list[TrialRecord]:
    """The sweep's trials by number; a trial continued after a kill is listed once, with its last state."""
    spec = load_sweep(folder)
    if spec.engine == "ray":
        ledger = read_json(folder / LEDGER_FILE) if (folder / LEDGER_FILE).exists() else {}
        return [
            TrialRecord(entry["number"], entry["state"], entry["score"], entry["params"])
            for entry in sorted(ledger.values(), key=lambda entry: entry["number"])
        ]
    trials: dict[int, TrialRecord] = {}
    for trial in open_study(folder, spec).get_trials(deepcopy=False):
        number = trial.user_attrs.get("continues", trial.number)
        state = trial.state.name.lower()
        if state == "fail" and trial.user_attrs.get("interrupted"):  # stopped by Ctrl-C or Stop: resume continues it
            state = "interrupted"
        trials[number] = TrialRecord(number, state, trial.value, dict(trial.params))
    return sorted(trials.values(), key=lambda trial: trial.number)


def best_trial(folder: Path) -> dict[str, Any] | None:
    """The best finished trial: its number, score and settings."""
    spec = load_sweep(folder)
    finished = [trial for trial in list_trials(folder) if trial.state == "complete" and trial.score is not None]
    if not finished:
        return None
    sign = 1 if METRICS[spec.metric] == "maximize" else -1
    trial = max(finished, key=lambda trial: sign * trial.score)
    return {"trial": trial.number, "score": trial.score, "params": trial.params}


def trial_states(folder: Path) -> dict[str, int]:
    """How many trials are finished, pruned, failed, running or waiting."""
    counts: dict[str, int] = {}
    for trial in list_trials(folder):
        counts[trial.state] = counts.get(trial.state, 0) + 1
    return counts


def param_importance(folder: Path) -> dict[str, float]:
    """How much each searched setting explains the finished trials' scores: Optuna's `importance` module
    (fANOVA) over the trials of either engine; empty with fewer than two finished trials or nothing searched."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no line per in-memory study
    spec = load_sweep(folder)
    finished = [trial for trial in list_trials(folder) if trial.state == "complete" and trial.score is not None]
    if len(finished) < 2 or not spec.search:
        return {}
    study = optuna.create_study(direction=METRICS[spec.metric])
    distributions = {name: distribution(space) for name, space in spec.search.items()}
    for trial in finished:
        params = {name: value for name, value in trial.params.items() if name in distributions}
        study.add_trial(optuna.trial.create_trial(params=params, distributions={n: distributions[n] for n in params},
                                                  value=trial.score))  # fmt: skip
    evaluator = optuna.importance.FanovaImportanceEvaluator(seed=0)  # the same figures for the same trials
    return dict(optuna.importance.get_param_importances(study, evaluator=evaluator))
