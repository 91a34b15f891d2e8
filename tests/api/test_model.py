"""The model object as an SB3 user drives it: learn in an ordinary run folder, predict what the run's policy
does, save and load (zip or folder), learn on, export, evaluate, plot; env ids, wrapped env objects,
their own env classes and vector envs; bad arguments refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.envs.classic_control import CartPoleEnv

import thrust_app
from thrust_app import DQN, PPO, SAC, load_model
from thrust_app.algos.base import deterministic_action
from thrust_app.api.model_file import ZIP_MEMBERS
from thrust_app.envs.instances import is_instance_id
from thrust_app.runs.curves import run_chart
from thrust_app.runs.files import CheckpointError, read_jsonl
from thrust_app.training.trainer import load_policy

ROOT = Path(__file__).resolve().parents[2]
OBS = np.random.default_rng(0).normal(size=(300, 4)).astype(np.float32)


class MyCartPole(CartPoleEnv):
    """A user's own env class, made without gymnasium.make (no spec): Thrust copies the object."""


def ppo(env, tmp_path, **config):
    return PPO(env, runs_root=tmp_path / "runs", verbose=0, n_envs=4, n_steps=64, **config)


def test_the_version_is_the_packages(tmp_path):
    assert thrust_app.__version__ == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_learn_writes_a_run_folder_and_predict_is_the_runs_policy(tmp_path):
    model = ppo("CartPole-v1", tmp_path).learn(1024)
    assert model.num_timesteps == 1024 and model.run_dir.parent == tmp_path / "runs"
    assert {"config.json", "metrics.jsonl", "last.pt", "summary.json"} <= {p.name for p in model.run_dir.iterdir()}
    _, policy = load_policy(model.run_dir)
    expected = deterministic_action(policy, torch.as_tensor(OBS)).numpy()
    actions, state = model.predict(OBS)
    assert state is None and actions.shape == (300,) and np.array_equal(actions, expected)
    single, _ = model.predict(OBS[0])
    assert single.shape == () and single == expected[0]
    # evaluate() uses the run's evaluation seeds: the closing evaluation again
    assert model.evaluate(10).mean == pytest.approx(json.loads((model.run_dir / "summary.json").read_text())["eval_mean"])


def test_save_load_round_trips_a_zip_and_a_run_folder(tmp_path):
    model = ppo("CartPole-v1", tmp_path).learn(512)
    path = model.save(tmp_path / "cartpole")
    assert path.name == "cartpole.zip" and set(zipfile.ZipFile(path).namelist()) == set(ZIP_MEMBERS)
    for loaded in (PPO.load(path), load_model(path), PPO.load(model.run_dir)):
        assert type(loaded) is PPO and loaded.num_timesteps == 512
        assert np.array_equal(loaded.predict(OBS)[0], model.predict(OBS)[0])
    with pytest.raises(ValueError, match=r"holds a ppo model; load it with thrust_app.PPO.load"):
        DQN.load(path)
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    with pytest.raises(CheckpointError, match="is not a zip file"):
        PPO.load(tmp_path / "bad.zip")


def test_learning_on_continues_the_count_in_the_same_folder_and_a_loaded_model_in_a_new_one(tmp_path):
    model = ppo("CartPole-v1", tmp_path).learn(512)
    first = model.run_dir
    model.learn(512)
    assert model.num_timesteps == 1024 and model.run_dir == first
    assert max(r["step"] for r in read_jsonl(first / "metrics.jsonl")) == 1024
    loaded = PPO.load(model.save(tmp_path / "m.zip"), runs_root=tmp_path / "runs", verbose=0).learn(256)
    assert loaded.num_timesteps == 1280 and loaded.run_dir != first
    assert json.loads((first / "summary.json").read_text())["timesteps"] == 1024  # the loaded run's folder untouched


def test_save_run_false_leaves_no_folder(tmp_path):
    model = ppo("CartPole-v1", tmp_path, save_run=False).learn(256).learn(256)
    assert model.num_timesteps == 512 and model.run_dir is None and not (tmp_path / "runs").exists()
    assert PPO.load(model.save(tmp_path / "m")).num_timesteps == 512
    with pytest.raises(ValueError, match="no run folder to plot"):
        model.plot()


def test_a_wrapped_env_object_trains_and_its_run_reads_back_in_another_process(tmp_path):
    env = gym.wrappers.TimeAwareObservation(gym.make("CartPole-v1"))
    model = ppo(env, tmp_path).learn(512)
    assert model.env_id.startswith("instance/CartPole.TimeAwareObservation-") and model.algo.obs_shape == (5,)
    assert json.loads((model.run_dir / "config.json").read_text())["env_spec"]
    path = model.save(tmp_path / "timeaware.zip")
    code = f"from thrust_app import load_model; m = load_model({str(path)!r}); print(m.env_id, m.evaluate(2).returns)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[0] == model.env_id
    # an unwrapped gymnasium.make env is its id: the presets apply
    assert ppo(gym.make("CartPole-v1", render_mode="rgb_array"), tmp_path).env_id == "CartPole-v1"


def test_an_env_object_of_the_users_own_class_trains_and_must_be_passed_again_to_load(tmp_path):
    model = ppo(gym.wrappers.TimeLimit(MyCartPole(), 200), tmp_path).learn(512)
    assert is_instance_id(model.env_id) and "MyCartPole" in model.env_id
    path = model.save(tmp_path / "mine.zip")
    gym.registry.pop(model.env_id)  # as in a new process: the object lived in the old one only
    with pytest.raises(ValueError, match=r"cannot make again in this process: pass it, Model.load\(path, env=your_env\)"):
        PPO.load(path)
    loaded = PPO.load(path, env=gym.wrappers.TimeLimit(MyCartPole(), 200))
    assert np.array_equal(loaded.predict(OBS)[0], model.predict(OBS)[0])
    assert max(loaded.evaluate(2).lengths) <= 200
    with pytest.raises(ValueError, match="trained on CartPole-v1, but the env passed is"):
        PPO.load(ppo("CartPole-v1", tmp_path).learn(256).save(tmp_path / "c.zip"), env=gym.make("Acrobot-v1"))


def test_a_vector_env_gives_its_env_and_its_count(tmp_path):
    model = PPO(gym.make_vec("CartPole-v1", num_envs=3), runs_root=tmp_path / "runs", verbose=0)
    assert model.env_id == "CartPole-v1" and model.spec.config["n_envs"] == 3
    sync = gym.vector.SyncVectorEnv([lambda: gym.make("Pendulum-v1")] * 2)
    assert SAC(sync, runs_root=tmp_path / "runs", verbose=0).spec.config["n_envs"] == 2


def test_sb3_call_shapes_and_policy_kwargs(tmp_path):
    model = PPO("MlpPolicy", "CartPole-v1", policy_kwargs={"net_arch": [32], "activation_fn": torch.nn.ReLU}, verbose=0)
    assert model.spec.config["hidden"] == (32,) and model.spec.config["activation"] == "relu"
    assert PPO("MlpPolicy", "CartPole-v1", policy_kwargs={"net_arch": {"pi": [8], "vf": [8]}}).spec.config["hidden"] == (8,)
    tanh = DQN(
        "CartPole-v1", policy_kwargs={"activation_fn": torch.nn.Tanh}, learning_starts=64, runs_root=tmp_path, verbose=0
    )
    assert tanh.spec.config["activation"] == "tanh" and any(isinstance(m, torch.nn.Tanh) for m in tanh.algo.q_net.modules())
    notes: list[str] = []
    tanh.learn(128, callback=lambda live: notes.extend(live.algo.notes))
    assert (
        "update=handwritten falls back to reference: activation=tanh: the off-policy nets' fast forms are written for ReLU"
        in notes
    )
    split = PPO("CartPole-v1", policy_kwargs={"net_arch": {"pi": [8], "vf": [16, 16]}}).spec.config
    assert (split["hidden"], split["vf_hidden"]) == ((8,), (16, 16))
    with pytest.raises(TypeError, match=r"PPO takes the env .*PPO\(env\) or PPO\('MlpPolicy', env\)"):
        PPO("MlpPolicy")
    with pytest.raises(ValueError, match=r"features_extractor 'builtins:object' is not a torch nn\.Module class"):
        PPO("CartPole-v1", policy_kwargs={"features_extractor_class": object})
    with pytest.raises(ValueError, match="Thrust has no setting for share_features_extractor"):
        PPO("CartPole-v1", policy_kwargs={"share_features_extractor": False})
    with pytest.raises(ValueError, match="learning_rate"):
        PPO("CartPole-v1", learning_rate=-1.0)
    with pytest.raises(TypeError, match=r"env must be an id string, a gymnasium\.Env or a vector env, got int"):
        PPO(3)


def test_export_gives_the_bundle_of_the_models_policy(tmp_path):
    import onnxruntime as ort

    model = ppo("CartPole-v1", tmp_path, save_run=False).learn(512)
    bundle = model.export(tmp_path / "bundle")
    session = ort.InferenceSession(str(bundle.model_path))
    onnx_actions = session.run(["action"], {"obs": OBS})[0]
    assert np.array_equal(onnx_actions, model.predict(OBS)[0])


def test_plot_draws_the_learning_curves(tmp_path):
    model = ppo("CartPole-v1", tmp_path, eval_every=256).learn(1024)
    spec = model.plot().to_dict()  # training returns, and evaluations with their spread, as the dashboard draws them
    assert spec["title"] == "ppo on CartPole-v1" and len(spec["layer"]) == 3
    evals = [row for rows in spec["datasets"].values() for row in rows if "eval_mean" in row]
    assert [row["step"] for row in evals] == [256, 512, 768, 1024]
    assert run_chart(model.run_dir).to_dict()["title"] == model.run_dir.name
    with pytest.raises(ValueError, match="has no records yet: train first"):
        run_chart(tmp_path)


def test_normalised_runs_predict_on_raw_observations(tmp_path):
    model = ppo("CartPole-v1", tmp_path, normalize=True).learn(512)
    _, policy = load_policy(model.run_dir)  # the statistics folded in front
    assert np.array_equal(model.predict(OBS * 5)[0], deterministic_action(policy, torch.as_tensor(OBS * 5)).numpy())


def test_thrust_train_is_a_thin_user_of_the_model(tmp_path, monkeypatch):
    """`thrust train` builds the model object and calls its learn (and --resume its resume_run): one path."""
    from thrust_app.api.model import Model
    from thrust_app.cli import main

    calls: list[tuple[str, object]] = []
    learn, resume_run = Model.learn, Model.resume_run.__func__
    monkeypatch.setattr(Model, "learn", lambda self, *a, **k: calls.append(("learn", a[0])) or learn(self, *a, **k))
    monkeypatch.setattr(
        Model, "resume_run", classmethod(lambda cls, *a, **k: calls.append(("resume", a[0])) or resume_run(cls, *a, **k))
    )
    run = tmp_path / "cli-run"
    assert (
        main(["train", "ppo", "CartPole-v1", "--timesteps", "512", "--run-dir", str(run), "--set", "n_envs=4", "--quiet"]) == 0
    )
    assert main(["train", "--resume", str(run), "--timesteps", "1024", "--quiet"]) == 0
    assert calls == [("learn", 512), ("resume", str(run))]
    model = PPO.load(run)
    assert model.num_timesteps == 1024 and model.spec.config["n_envs"] == 4


def test_overrides_as_text_a_chosen_run_folder_and_the_presets_budget(tmp_path):
    model = PPO("cartpole", overrides=["n_envs=4", "n_steps=64"], n_steps=32, run_dir=tmp_path / "mine", verbose=0)
    assert (model.spec.config["n_envs"], model.spec.config["n_steps"]) == (4, 32)  # keywords win over texts
    model.learn(256)
    assert model.run_dir == tmp_path / "mine" and model.summary["timesteps"] == 256
    with pytest.raises(ValueError, match=r"say how many more steps, learn\(total_timesteps\)"):
        model.learn()
    fast = PPO("cartpole", preset="fast", stop_at_return=10, runs_root=tmp_path, verbose=0).learn()
    assert fast.summary["status"] == "solved"  # the preset's budget, stopped at the return
