"""Callbacks of `Model.learn` fire on the loop's hook and steer it: the best evaluated policy is kept and
loads back scoring what it scored, checkpoints land every N steps, a threshold or a function stops the run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from thrust_app import DQN, PPO, CheckpointEvery, KeepBest, StopAtReturn
from thrust_app.api.callbacks import Callback, as_callbacks
from thrust_app.runs.files import read_jsonl


def test_keep_best_keeps_the_best_evaluation_and_it_loads_back_scoring_the_same(tmp_path):
    model = DQN("CartPole-v1", runs_root=tmp_path, verbose=0, eval_every=1000, learning_starts=500)
    keep = KeepBest()
    model.learn(6000, callback=keep)
    evals = [r for r in read_jsonl(model.run_dir / "metrics.jsonl") if r["kind"] == "eval"]
    best = max(evals, key=lambda r: r["eval_mean"])
    assert keep.best_mean == best["eval_mean"] and keep.best_step == min(
        r["step"] for r in evals if r["eval_mean"] == best["eval_mean"]
    )
    loaded = DQN.load(model.run_dir, checkpoint="best")
    assert loaded.num_timesteps == keep.best_step
    assert loaded.evaluate(model.spec.eval_episodes).mean == pytest.approx(keep.best_mean)  # the run's evaluation seeds


def test_checkpoint_every_writes_loadable_checkpoints_at_each_multiple(tmp_path):
    model = PPO("CartPole-v1", runs_root=tmp_path, verbose=0, n_envs=4, n_steps=64)  # 256 steps per iteration
    every = CheckpointEvery(500)
    model.learn(2048, callback=every)
    assert [path.name for path in every.saved] == [
        "model_512_steps.pt",
        "model_1024_steps.pt",
        "model_1536_steps.pt",
        "model_2048_steps.pt",
    ]
    early = PPO.load(model.run_dir, checkpoint=every.saved[0])
    assert early.num_timesteps == 512
    with pytest.raises(ValueError, match="steps >= 1"):
        CheckpointEvery(0)


def test_stop_at_return_stops_at_the_first_evaluation_reaching_it(tmp_path):
    model = PPO("CartPole-v1", runs_root=tmp_path, verbose=0, eval_every=1024, n_envs=4, n_steps=64)
    model.learn(100_000, callback=StopAtReturn(60))
    summary = json.loads((model.run_dir / "summary.json").read_text())
    assert summary["status"] == "stopped" and model.num_timesteps < 100_000
    evals = [r["eval_mean"] for r in read_jsonl(model.run_dir / "metrics.jsonl") if r["kind"] == "eval"]
    assert evals[-1] >= 60 and all(mean < 60 for mean in evals[:-1])


def test_a_function_sees_the_live_model_and_false_stops(tmp_path):
    seen: list[tuple[int, int]] = []
    obs = np.zeros((5, 4), np.float32)

    def watch(model) -> bool:
        seen.append((model.num_timesteps, len(model.predict(obs)[0])))  # the live policy acts mid-training
        return model.num_timesteps < 768

    model = PPO("CartPole-v1", runs_root=tmp_path, verbose=0, n_envs=4, n_steps=64).learn(10_000, callback=[watch])
    assert seen == [(256, 5), (512, 5), (768, 5)] and model.num_timesteps == 768


def test_every_callback_hook_fires_in_order(tmp_path):
    calls: list[str] = []

    class Recorder(Callback):
        def on_training_start(self, model):
            calls.append(f"start {model.num_timesteps}")

        def on_iteration(self, model):
            calls.append("iteration")

        def on_training_end(self, model):
            calls.append(f"end {model.num_timesteps}")

    PPO("CartPole-v1", runs_root=tmp_path, verbose=0, n_envs=4, n_steps=64).learn(512, callback=Recorder())
    assert calls == ["start 0", "iteration", "iteration", "end 512"]
    with pytest.raises(TypeError, match="callback must be a Callback, a function of the model or a list of them, got int"):
        as_callbacks(3)


def test_callbacks_that_would_write_into_a_removed_folder_are_refused_before_training(tmp_path):
    model = PPO("CartPole-v1", verbose=0, save_run=False, n_envs=1, n_steps=64)
    for callback, example in ((KeepBest(), r"KeepBest\('best.pt'\)"), (CheckpointEvery(100), r"CheckpointEvery\(100, ")):
        with pytest.raises(ValueError, match=rf"without a path would write into the temporary run folder.*{example}"):
            model.learn(128, callback=callback)
    assert model.num_timesteps == 0  # nothing trained
    keep = KeepBest(tmp_path / "best.pt")  # with a path of its own it serves
    model.learn(256, callback=[keep, CheckpointEvery(128, tmp_path / "every")])
    assert (tmp_path / "best.pt").is_file() and len(list((tmp_path / "every").iterdir())) == 2
