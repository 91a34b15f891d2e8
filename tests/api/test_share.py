"""`thrust share`: a run as a model repository in the Hub layout the zoo uses, whose SB3 zip SB3 loads and
predicts with as Thrust does, whose ONNX bundle `thrust import` reads back, and whose card tells the truth."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import stable_baselines3

from thrust_app import PPO, load_model
from thrust_app.api.share import SHARE_MARKER, ShareError, read_share
from thrust_app.cli import main as thrust_main
from thrust_app.interop.bundle import OnnxPolicy, load_bundle

OBS = np.random.default_rng(0).normal(size=(500, 4)).astype(np.float32)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    root = tmp_path_factory.mktemp("share")
    models = [PPO("CartPole-v1", runs_root=root / "runs", seed=seed, verbose=0).learn(4096) for seed in range(3)]
    assert thrust_main(["share", str(models[0].run_dir), str(root / "repo"), "--episodes", "5"]) == 0
    return models[0], root / "repo"


def test_the_folder_has_the_zoo_layout_and_the_card_tells_the_evaluation(shared):
    model, repo = shared
    assert {p.name for p in repo.iterdir()} == {
        "README.md", "bundle", "config.json", "model.zip", "ppo-CartPole-v1.zip", "replay.mp4", "results.json", SHARE_MARKER,
    }  # fmt: skip
    results = json.loads((repo / "results.json").read_text())
    assert results["n_eval_episodes"] == 5 and results["is_deterministic"] and results["seeds"]["runs"] == 3
    assert results["mean_reward"] == pytest.approx(model.evaluate(5).mean)
    card = (repo / "README.md").read_text()
    assert card.startswith("---\nlibrary_name: thrust\n") and f"value: {results['mean_reward']:.2f} +/- " in card
    assert f"IQM of the final evaluation over 3 seeds [95% bootstrap CI] | {results['seeds']['text']} |" in card
    assert "| learning_rate | 0.001 |" in card and "`thrust train ppo CartPole-v1 --timesteps 4096 --seed 0`" in card
    assert (repo / "replay.mp4").read_bytes()[4:8] == b"ftyp"


def test_sb3_loads_the_zip_and_predicts_what_thrust_predicts(shared):
    model, repo = shared
    sb3_model = stable_baselines3.PPO.load(repo / "ppo-CartPole-v1.zip", device="cpu")
    assert np.array_equal(sb3_model.predict(OBS, deterministic=True)[0], model.predict(OBS)[0])
    assert np.array_equal(load_model(repo / "model.zip").predict(OBS)[0], model.predict(OBS)[0])


def test_thrust_import_reads_the_folder_back(shared, tmp_path, monkeypatch):
    model, repo = shared
    monkeypatch.setenv("THRUST_EXPORT_DIR", str(tmp_path / "export"))
    assert thrust_main(["import", str(repo)]) == 0
    bundle = load_bundle(tmp_path / "export" / "repo")
    assert np.array_equal(OnnxPolicy(bundle).act(OBS), model.predict(OBS)[0])
    assert read_share(repo)["algo"] == "ppo"
    with pytest.raises(ShareError, match="is not a folder written by `thrust share`"):
        read_share(tmp_path)


def test_what_sb3_cannot_hold_is_left_out_and_the_card_says_why(tmp_path):
    model = PPO("thrust/Cards-v0", runs_root=tmp_path / "runs", verbose=0).learn(512)
    repo = model.share(tmp_path / "cards")
    assert not list(repo.glob("ppo-*.zip")) and (repo / "bundle" / "policy.onnx").is_file()
    assert (
        "- no sb3 zip: no SB3 zip for this run: thrust/Cards-v0's observations are a Dict, not a vector"
        in (repo / "README.md").read_text()
    )


def test_a_folder_of_other_files_is_not_overwritten(tmp_path):
    model = PPO("CartPole-v1", runs_root=tmp_path / "runs", verbose=0, n_envs=4, n_steps=64).learn(256)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(ShareError, match="holds other files; choose an empty folder or pass --force"):
        model.share(tmp_path / "mine")
    assert os.listdir(tmp_path / "mine") == ["notes.txt"]
