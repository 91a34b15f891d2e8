"""Image envs end to end, CI-sized: an Atari and a MinAtar run train on their presets' pipelines, checkpoint,
resume, export a policy that takes the frame stack as bytes, and evaluate the same in torch and onnxruntime;
the memory check counts what the buffers really hold."""

from __future__ import annotations

import json

import pytest

from thrust_app import config as config_module
from thrust_app.cli import main
from thrust_app.config import ConfigError
from thrust_app.interop.exporter import export_run
from thrust_app.training.run_spec import load_spec, make_spec
from thrust_app.training.trainer import resume, train


def eval_returns(target, capsys) -> list[str]:
    capsys.readouterr()
    assert main(["eval", str(target), "--episodes", "2", "--seed", "5"]) == 0
    return capsys.readouterr().out.split("returns:")[1].split()


@pytest.mark.parametrize(
    ("algo", "env_id", "settings"),
    [
        ("ppo", "MinAtar/Breakout-v1", {"n_envs": 4, "n_steps": 64, "batch_size": 64}),
        ("dqn", "ALE/Pong-v5", {"buffer_size": 2_000, "learning_starts": 300, "vec_env": "async", "n_envs": 2}),
        ("ppo", "ALE/Pong-v5", {"vec_env": "envpool", "n_envs": 4, "n_steps": 64, "batch_size": 64}),
    ],
)
def test_an_image_run_trains_resumes_exports_and_evaluates_alike(algo, env_id, settings, tmp_path, capsys):
    run_dir = tmp_path / "run"
    summary = train(algo, env_id, timesteps=600, overrides=settings, run_dir=run_dir, eval_every=10_000, eval_episodes=1)
    assert summary["status"] == "finished"
    spec = load_spec(run_dir)
    wrapper = "minatar" if env_id.startswith("MinAtar") else "atari"
    assert spec.config["env_wrapper"] == wrapper  # the family's preset chose the pipeline, recorded in config.json
    summary = resume(run_dir, timesteps=1_000)
    assert summary["status"] == "finished" and summary["timesteps"] >= 1_000
    bundle = export_run(run_dir, tmp_path / "bundle")
    manifest = json.loads((bundle.path / "manifest.json").read_text())
    assert manifest["observation"]["pipeline"]["env_wrapper"] == wrapper
    assert manifest["inputs"][0]["dtype"] == ("uint8" if wrapper == "atari" else "float32")
    assert manifest["parity"]["action_agreement"] == 1.0
    assert eval_returns(bundle.path, capsys) == eval_returns(run_dir, capsys)


def test_the_memory_check_counts_shared_frames(monkeypatch):
    """DQN's Atari preset (100,000 transitions) holds one 84x84 byte frame per transition: about 0.7 GB where
    storing every obs and next obs stack takes 5.6 GB; the check before a run counts what will be held."""
    monkeypatch.setattr(config_module, "available_memory_bytes", lambda: 2 * 2**30)
    make_spec("dqn", "ALE/Pong-v5")  # fits in 0.8 x 2 GiB
    with pytest.raises(ConfigError, match=r"a replay buffer of 100,000 transitions needs about 5\.3 GiB"):
        make_spec("dqn", "ALE/Pong-v5", overrides={"share_frames": False})
