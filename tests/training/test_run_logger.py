"""A run's records as a user reads them: train records aggregate what happened since the last one,
the first evaluation at the threshold marks the run solved (and only the first), and a logger
restored from a checkpoint's state writes what the uninterrupted one would."""

from __future__ import annotations

import json

import pytest
import torch

from thrust_app.algos.base import Iteration
from thrust_app.runs.files import METRICS_FILE
from thrust_app.training.evaluation import EvalResult
from thrust_app.training.run_logger import RunLogger
from thrust_app.training.run_spec import make_spec

SPEC = make_spec("ppo", "cartpole", timesteps=10_000)


def records(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / METRICS_FILE).read_text().splitlines()]


def iteration(returns: list[float], stats: dict[str, float]) -> Iteration:
    return Iteration(torch.zeros(1), 256, returns, [int(r) for r in returns], stats)


def test_a_train_record_holds_the_episodes_and_mean_losses_since_the_last(tmp_path):
    logger = RunLogger(tmp_path, SPEC, threshold=475.0, progress=False)
    logger.add_iteration(iteration([10.0, 20.0], {"value_loss": 1.0}))
    logger.add_iteration(iteration([], {}))  # a warm-up iteration: no episode ended, no loss
    logger.add_iteration(iteration([30.0], {"value_loss": 3.0, "entropy": 0.5}))
    logger.write_train(768)
    (record,) = records(tmp_path)
    assert record["kind"] == "train" and record["step"] == 768 and record["episodes"] == 3
    assert record["return_mean"] == pytest.approx(20.0) and record["episode_returns"] == [10.0, 20.0, 30.0]
    assert record["losses"] == {"value_loss": pytest.approx(2.0), "entropy": pytest.approx(0.5)}
    assert not logger.has_pending()


def test_the_first_evaluation_at_the_threshold_marks_the_run_solved(tmp_path):
    seen: list[dict] = []
    logger = RunLogger(tmp_path, SPEC, threshold=475.0, progress=False, on_record=seen.append)
    for step, mean in ((1000, 300.0), (2000, 480.0), (3000, 500.0)):
        logger.write_eval(EvalResult([mean], [int(mean)]), step)
    assert logger.solved_at_step == 2000
    assert [r["eval_mean"] for r in records(tmp_path)] == [300.0, 480.0, 500.0] == [r["eval_mean"] for r in seen]
    summary = logger.summary("solved", 3000, torch.device("cpu"))
    assert summary["solved_at_step"] == 2000 and summary["eval_mean"] == 500.0 and summary["status"] == "solved"
    assert seen[-1]["kind"] == "summary"


def test_a_restored_logger_writes_the_records_of_one_that_never_stopped(tmp_path):
    whole, first, second = (RunLogger(tmp_path / name, SPEC, 475.0, False) for name in ("whole", "first", "second"))
    for folder in ("whole", "first", "second"):
        (tmp_path / folder).mkdir()
    for logger in (whole, first):
        logger.add_iteration(iteration([12.0], {"value_loss": 4.0}))
        logger.write_eval(EvalResult([480.0], [480]), 256)
    second.load_state_dict(json.loads(json.dumps(first.state_dict())))  # as a checkpoint keeps it
    for logger in (whole, second):
        logger.add_iteration(iteration([14.0], {"value_loss": 2.0}))
        logger.write_train(512)
    assert records(tmp_path / "second")[-1] == records(tmp_path / "whole")[-1]
    assert second.solved_at_step == whole.solved_at_step == 256
