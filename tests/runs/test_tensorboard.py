"""TensorBoard: a run's records as scalars TensorBoard reads, written live or exported afterwards."""

from __future__ import annotations

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from thrust_app.cli import main as thrust_main
from thrust_app.runs.files import read_jsonl
from thrust_app.training.trainer import train


def scalars(run_dir) -> dict[str, list[tuple[int, float]]]:
    events = EventAccumulator(str(run_dir / "tb"))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("runs") / "ppo"
    train(
        "ppo",
        "cartpole",
        timesteps=2048,
        seed=0,
        device="cpu",
        run_dir=run_dir,
        eval_every=512,
        eval_episodes=2,
        overrides={"n_steps": 16},
        tensorboard=True,
        progress=False,
        log=lambda _: None,
    )
    return run_dir


def test_a_run_with_tensorboard_on_writes_its_records_as_scalars(run):
    tags = scalars(run)
    evals = [r for r in read_jsonl(run / "metrics.jsonl") if r["kind"] == "eval"]
    assert tags["eval/mean_return"] == [(r["step"], pytest.approx(r["eval_mean"])) for r in evals]
    assert {"train/episode_return", "train/steps_per_second", "train/policy_loss", "train/value_loss"} <= set(tags)
    assert "--tensorboard" in (run / "config.json").read_text()


def test_tb_export_writes_the_same_scalars_again_without_duplicates(run, capsys):
    live = scalars(run)
    assert thrust_main(["tb-export", str(run.parent)]) == 0
    assert "tensorboard --logdir" in capsys.readouterr().out
    assert thrust_main(["tb-export", str(run)]) == 0  # twice: replaced, not appended
    exported = scalars(run)
    assert exported.keys() == live.keys()
    for tag in live:
        assert [step for step, _ in exported[tag]] == [step for step, _ in live[tag]]
