"""`thrust import`: real SB3 models, trained here for a few thousand steps, become bundles that act
exactly as SB3's own `predict(deterministic=True)`; what Thrust cannot import is refused in one line."""

from __future__ import annotations

import json
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from thrust_app.cli import main
from thrust_app.interop.bundle import OnnxPolicy, load_bundle
from thrust_app.interop.importer import observation_samples

sb3 = pytest.importorskip("stable_baselines3", reason="make test installs stable-baselines3 (the test extra)")
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402
from stable_baselines3.common.logger import Logger  # noqa: E402
from stable_baselines3.common.vec_env import VecNormalize  # noqa: E402


def env_observations(env_id: str, n: int = 200, seed: int = 0) -> np.ndarray:
    """Observations from random play, the states a policy really sees."""
    return observation_samples(env_id, np.random.default_rng(seed), n)["env"]


def bundle_actions(bundle_dir: Path, obs: np.ndarray) -> np.ndarray:
    runner = OnnxPolicy(load_bundle(bundle_dir))
    return np.concatenate([runner.run(obs[i : i + 1])["action"] for i in range(len(obs))])


def learned(model, steps: int):
    """`model.learn(steps)` without SB3's default logger, which makes a /tmp/SB3-<time> folder per call."""
    model.set_logger(Logger(None, []))
    return model.learn(steps)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """Small real SB3 models: PPO and DQN on CartPole, SAC (with VecNormalize), TD3 and a ReLU PPO on Pendulum."""
    folder = tmp_path_factory.mktemp("sb3")
    learned(sb3.PPO("MlpPolicy", "CartPole-v1", n_steps=256, batch_size=64, seed=0, verbose=0), 2048).save(folder / "ppo")
    learned(sb3.DQN("MlpPolicy", "CartPole-v1", learning_starts=500, seed=0, verbose=0), 1500).save(folder / "dqn")
    learned(sb3.A2C("MlpPolicy", "CartPole-v1", seed=0, verbose=0), 1000).save(folder / "a2c")
    kwargs = dict(net_arch=dict(pi=[32, 32], vf=[64]), activation_fn=__import__("torch").nn.ReLU)
    ppo_box = sb3.PPO("MlpPolicy", "Pendulum-v1", n_steps=256, seed=0, verbose=0, policy_kwargs=kwargs)
    learned(ppo_box, 512).save(folder / "ppo_box")
    ppo_sde = sb3.PPO("MlpPolicy", "Pendulum-v1", use_sde=True, n_steps=256, seed=0, verbose=0)  # gSDE: log_std (64, 1)
    learned(ppo_sde, 512).save(folder / "ppo_sde")
    learned(sb3.TD3("MlpPolicy", "Pendulum-v1", learning_starts=100, seed=0, verbose=0), 300).save(folder / "td3")
    venv = VecNormalize(make_vec_env("Pendulum-v1", n_envs=1, seed=0), norm_reward=True, clip_obs=5.0)
    model = sb3.SAC("MlpPolicy", venv, learning_starts=100, seed=0, verbose=0, policy_kwargs=dict(net_arch=[64, 64]))
    learned(model, 400)
    model.save(folder / "sac")
    venv.save(folder / "vec_normalize.pkl")
    return {name: folder / f"{name}.zip" for name in ("ppo", "a2c", "dqn", "ppo_box", "ppo_sde", "td3", "sac")} | {
        "vec_normalize": folder / "vec_normalize.pkl"
    }


@pytest.mark.parametrize(
    ("name", "env_id"),
    [
        ("ppo", "CartPole-v1"),
        ("a2c", "CartPole-v1"),
        ("dqn", "CartPole-v1"),
        ("ppo_box", "Pendulum-v1"),
        ("ppo_sde", "Pendulum-v1"),
        ("td3", "Pendulum-v1"),
    ],
)
def test_imported_bundle_acts_like_sb3(models, tmp_path, name, env_id):
    assert main(["import", str(models[name]), "--env", env_id, "--out", str(tmp_path / name)]) == 0
    model = getattr(sb3, name.split("_")[0].upper()).load(models[name], device="cpu")  # the test trusts its own file
    obs = env_observations(env_id)
    theirs = model.predict(obs, deterministic=True)[0]
    ours = bundle_actions(tmp_path / name, obs)
    if model.action_space.__class__.__name__ == "Discrete":
        assert (ours == theirs).all()
    else:
        np.testing.assert_allclose(ours, theirs.reshape(ours.shape), atol=1e-5)
        assert (ours >= -2).all() and (ours <= 2).all()  # clipped / scaled to Pendulum's bounds
    manifest = load_bundle(tmp_path / name).manifest
    assert manifest["source"]["library"] == "stable-baselines3"
    assert (
        "actions equal" in manifest["parity"]["stable_baselines3"] or "max |action" in manifest["parity"]["stable_baselines3"]
    )


def test_a_model_of_discrete_observations_imports_and_acts_like_sb3(tmp_path):
    """SB3 one-hot encodes FrozenLake's cell number; Thrust's bundle takes the one-hot vector (the env flattened,
    envs/pipeline.py), so the same first layer reads the same numbers."""
    model = learned(sb3.PPO("MlpPolicy", "FrozenLake-v1", n_steps=128, batch_size=64, seed=0, verbose=0), 256)
    model.save(tmp_path / "frozen")
    assert main(["import", str(tmp_path / "frozen.zip"), "--env", "FrozenLake-v1", "--out", str(tmp_path / "bundle")]) == 0
    cells = np.arange(16)
    theirs = model.predict(cells, deterministic=True)[0]
    ours = OnnxPolicy(load_bundle(tmp_path / "bundle")).act(np.eye(16, dtype=np.float32)[cells])
    assert (ours == theirs).all()


def test_vec_normalize_statistics_are_folded_into_the_graph(models, tmp_path):
    out = tmp_path / "sac"
    assert (
        main(
            [
                "import",
                str(models["sac"]),
                "--env",
                "Pendulum-v1",
                "--out",
                str(out),
                "--vec-normalize",
                str(models["vec_normalize"]),
            ]
        )
        == 0
    )
    model = sb3.SAC.load(models["sac"], device="cpu")
    stats = VecNormalize.load(models["vec_normalize"], make_vec_env("Pendulum-v1", n_envs=1))
    obs = env_observations("Pendulum-v1") * 3  # beyond the usual range too: the clip (5.0) must be applied
    theirs = model.predict(stats.normalize_obs(obs), deterministic=True)[0]
    np.testing.assert_allclose(bundle_actions(out, obs), theirs, atol=1e-5)
    # without the statistics the same weights act differently: the folding is what makes them equal
    assert main(["import", str(models["sac"]), "--env", "Pendulum-v1", "--out", str(tmp_path / "raw")]) == 0
    assert np.abs(bundle_actions(tmp_path / "raw", obs) - theirs).max() > 1e-3


def test_imported_bundle_evaluates(models, tmp_path, capsys):
    out = tmp_path / "dqn"
    main(["import", str(models["dqn"]), "--env", "CartPole-v1", "--out", str(out)])
    assert main(["eval", str(out), "--episodes", "2"]) == 0
    assert "mean return" in capsys.readouterr().out


def rewrite_zip(source: Path, target: Path, data_edit=None, weights_edit=None) -> Path:
    """A copy of an SB3 zip with its data JSON or weights changed."""
    import io

    import torch

    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for item in old.namelist():
            content = old.read(item)
            if item == "data" and data_edit:
                data = json.loads(content)
                data_edit(data)
                content = json.dumps(data).encode()
            if item == "policy.pth" and weights_edit:
                weights = torch.load(io.BytesIO(content), weights_only=True)
                weights_edit(weights)
                buffer = io.BytesIO()
                torch.save(weights, buffer)
                content = buffer.getvalue()
            new.writestr(item, content)
    return target


def test_unsupported_models_are_refused_in_one_line(models, tmp_path, capsys):
    def sequence_obs(data):
        data["observation_space"][":type:"] = "<class 'gymnasium.spaces.sequence.Sequence'>"

    def discrete_obs(data):
        data["observation_space"][":type:"] = "<class 'gymnasium.spaces.discrete.Discrete'>"

    def image_in_dict(weights):
        weights["features_extractor.extractors.camera.cnn.0.weight"] = weights["action_net.weight"]

    def recurrent(weights):
        weights["lstm_actor.weight_ih_l0"] = weights["action_net.weight"]

    cases = {
        "sequence observations": (
            rewrite_zip(models["ppo"], tmp_path / "seq.zip", data_edit=sequence_obs),
            "CartPole-v1",
            "observes a Sequence",
        ),
        "an image in a Dict": (
            rewrite_zip(models["ppo"], tmp_path / "img.zip", weights_edit=image_in_dict),
            "CartPole-v1",
            "Dict with an image",
        ),
        "discrete observations of another env": (
            rewrite_zip(models["ppo"], tmp_path / "discrete.zip", data_edit=discrete_obs),
            "FrozenLake-v1",
            "takes 4 inputs",
        ),
        "damaged recurrent": (
            rewrite_zip(models["ppo"], tmp_path / "lstm.zip", weights_edit=recurrent),
            "CartPole-v1",
            "recurrent",
        ),
        "frame stack / other env": (models["ppo"], "Acrobot-v1", "frame stack"),
        "not a model": (models["vec_normalize"], "Pendulum-v1", "not an SB3 model file"),
    }
    for source, env_id, words in cases.values():
        assert main(["import", str(source), "--env", env_id, "--out", str(tmp_path / "never")]) == 2
        err = capsys.readouterr().err.strip()
        assert words in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "never").exists()


def test_pickle_code_is_never_run_without_trust_pickle(models, tmp_path, capsys):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (__import__("os").system, (f"touch {marker}",))

    evil = tmp_path / "evil.pkl"
    evil.write_bytes(pickle.dumps(Evil()))
    args = ["import", str(models["sac"]), "--env", "Pendulum-v1", "--out", str(tmp_path / "b"), "--vec-normalize", str(evil)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "system" in err and "--trust-pickle" in err
    assert not marker.exists()


def test_vec_normalize_must_fit_the_env(models, tmp_path, capsys):
    cartpole_stats = tmp_path / "cartpole_stats.pkl"
    VecNormalize(make_vec_env("CartPole-v1", n_envs=1)).save(cartpole_stats)
    for stats, words in ((cartpole_stats, "statistics from another env"), (models["ppo"], "not the pickle")):
        args = [
            "import",
            str(models["sac"]),
            "--env",
            "Pendulum-v1",
            "--out",
            str(tmp_path / "b"),
            "--vec-normalize",
            str(stats),
        ]
        assert main(args) == 2
        assert words in capsys.readouterr().err


def sb3_recipe_onnx(module, obs_size: int, path: Path) -> Path:
    """An ONNX file made the way SB3's export guide does it: batch fixed at 1, outputs unnamed."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, torch.zeros(1, obs_size), str(path), opset_version=17, input_names=["input"], dynamo=False)
    return path


def test_onnx_from_sb3s_export_recipe_imports_and_evaluates(models, tmp_path, capsys):
    import torch

    class OnnxablePolicy(torch.nn.Module):  # SB3's export guide: action, value, log_prob (int64 action)
        def __init__(self, policy):
            super().__init__()
            self.policy = policy

        def forward(self, observation):
            return self.policy(observation, deterministic=True)

    model = sb3.PPO.load(models["ppo"], device="cpu")
    source = sb3_recipe_onnx(OnnxablePolicy(model.policy), 4, tmp_path / "ppo.onnx")
    out = tmp_path / "bundle"
    assert main(["import", str(source), "--env", "CartPole-v1", "--action-output", "0", "--out", str(out)]) == 0
    assert "actions equal the source model's" in capsys.readouterr().out
    obs = env_observations("CartPole-v1")
    runner = OnnxPolicy(load_bundle(out))
    assert runner.one_at_a_time  # the source's fixed batch of 1 is kept, and run step by step
    assert (runner.act(obs) == model.predict(obs, deterministic=True)[0]).all()
    assert runner.act(obs).dtype == np.int32
    assert main(["eval", str(out), "--episodes", "2"]) == 0  # the batch-1 graph no longer stops thrust eval


def test_onnx_actor_in_minus_one_one_is_rescaled_to_the_bounds(models, tmp_path):
    import torch

    class OnnxableActor(torch.nn.Module):  # SB3's guide for TD3: the actor's tanh output, in [-1, 1]
        def __init__(self, actor):
            super().__init__()
            self.actor = actor

        def forward(self, observation):
            return self.actor(observation)

    model = sb3.TD3.load(models["td3"], device="cpu")
    source = sb3_recipe_onnx(OnnxableActor(model.policy.actor), 3, tmp_path / "td3.onnx")
    out = tmp_path / "bundle"
    assert (
        main(["import", str(source), "--env", "Pendulum-v1", "--action-output", "0", "--post", "rescale", "--out", str(out)])
        == 0
    )
    obs = env_observations("Pendulum-v1")
    np.testing.assert_allclose(OnnxPolicy(load_bundle(out)).act(obs), model.predict(obs, deterministic=True)[0], atol=1e-5)


def test_onnx_import_refuses_what_does_not_fit(models, tmp_path, capsys):
    import torch

    source = sb3_recipe_onnx(torch.nn.Linear(3, 1), 3, tmp_path / "linear.onnx")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_text("not onnx")
    cases = [
        ([str(source), "--env", "Pendulum-v1"], "has no output 'action'"),
        ([str(source), "--env", "Pendulum-v1", "--action-output", "0", "--post", "argmax"], "does not fit a continuous"),
        ([str(source), "--env", "CartPole-v1", "--action-output", "0"], "takes observations of shape [3]"),
        ([str(garbage), "--env", "Pendulum-v1"], "is not an ONNX model"),
    ]
    for args, words in cases:
        assert main(["import", *args, "--out", str(tmp_path / "never")]) == 2
        err = capsys.readouterr().err.strip()
        assert words in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "never").exists()


@pytest.mark.skipif(
    not os.environ.get("THRUST_REQUIRE_BROWSER") and not Path("/usr/bin/chromium").exists(),
    reason="needs Debian chromium (/usr/bin/chromium); .ci/run installs it",
)
def test_imported_sb3_model_plays_in_the_browser_player(models, tmp_path):
    from thrust_app.interop.playback import onnx_episode
    from thrust_app.web.browser import player_page
    from thrust_app.web.server import PlayerServer

    export = tmp_path / "export"
    assert main(["import", str(models["ppo"]), "--env", "CartPole-v1", "--out", str(export / "sb3-ppo")]) == 0
    manifest = load_bundle(export / "sb3-ppo").manifest
    assert manifest["env_id"] == "thrust/CartPole-v0" and manifest["source"]["trained_on"] == "CartPole-v1"
    with PlayerServer(port=0, export_dir=export) as server, player_page(server.url) as page:
        got = page.evaluate("(a) => window.thrustPlayer.runEpisode(a)", {"bundle": "sb3-ppo", "seed": 5, "ep": "wasm"})
    want = onnx_episode(export / "sb3-ppo", 5)
    assert got["actions"] == want.actions and got["steps"] == want.steps


@pytest.fixture(scope="module")
def atari_models(tmp_path_factory) -> dict[str, Path]:
    """SB3 CnnPolicy models (PPO, DQN) trained briefly on Breakout through Thrust's Atari pipeline, which does
    what SB3's AtariWrapper and VecFrameStack(4) do (84x84 grey, frame skip 4, 4 frames, channels first)."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from thrust_app.envs import make_env
    from thrust_app.envs.pipeline import Pipeline

    folder = tmp_path_factory.mktemp("sb3_atari")
    venv = DummyVecEnv([lambda: make_env("ALE/Breakout-v5", Pipeline("atari", 4), training=True)])
    learned(sb3.PPO("CnnPolicy", venv, n_steps=64, batch_size=32, n_epochs=1, seed=0, verbose=0), 64).save(folder / "ppo")
    learned(sb3.DQN("CnnPolicy", venv, buffer_size=500, learning_starts=50, seed=0, verbose=0), 100).save(folder / "dqn")
    return {name: folder / f"{name}.zip" for name in ("ppo", "dqn")}


@pytest.mark.parametrize("name", ["ppo", "dqn"])
def test_sb3_cnn_policy_imports_and_acts_like_sb3_on_real_frames(atari_models, tmp_path, name):
    from thrust_app.envs import make_env
    from thrust_app.envs.pipeline import Pipeline

    assert main(["import", str(atari_models[name]), "--env", "ALE/Breakout-v5", "--out", str(tmp_path / name)]) == 0
    manifest = load_bundle(tmp_path / name).manifest
    assert manifest["inputs"][0]["dtype"] == "uint8" and manifest["observation"]["pipeline"]["frame_stack"] == 4
    env, rng, frames = make_env("ALE/Breakout-v5", Pipeline("atari", 4)), np.random.default_rng(0), []
    obs, _ = env.reset(seed=1)
    for _ in range(64):  # real preprocessed frame stacks, as the policy meets them
        frames.append(obs)
        obs, *_ = env.step(int(rng.integers(4)))
    obs = np.stack(frames)
    model = getattr(sb3, name.upper()).load(atari_models[name], device="cpu")
    assert (bundle_actions(tmp_path / name, obs) == model.predict(obs, deterministic=True)[0]).all()


def test_maskable_ppo_imports_with_the_mask_as_an_input_and_acts_like_sb3_contrib(tmp_path):
    """sb3-contrib's MaskablePPO (PPO's network, logits masked by the env's `action_masks()`) becomes a bundle
    that takes the mask as its second input and picks MaskablePPO's actions under the same masks."""
    sb3_contrib = pytest.importorskip("sb3_contrib", reason="make test installs sb3-contrib (the test extra)")
    import gymnasium as gym

    env_id = "ThrustTest/MaskedChoice-v0"  # tests/conftest.py
    model = sb3_contrib.MaskablePPO("MlpPolicy", env_id, n_steps=128, batch_size=64, seed=0, verbose=0)
    learned(model, 512).save(tmp_path / "maskable")
    assert main(["import", str(tmp_path / "maskable.zip"), "--env", env_id, "--out", str(tmp_path / "bundle")]) == 0
    manifest = load_bundle(tmp_path / "bundle").manifest
    assert [i["name"] for i in manifest["inputs"]] == ["obs", "action_mask"]
    assert "actions equal SB3's predict" in manifest["parity"]["stable_baselines3"]
    env, obs, masks = gym.make(env_id), [], []
    observation, _ = env.reset(seed=3)
    for _ in range(100):
        obs.append(observation)
        masks.append(env.unwrapped.action_masks())
        observation, *_ = env.step(int(np.flatnonzero(masks[-1])[0]))
    obs, masks = np.stack(obs), np.stack(masks)
    runner = OnnxPolicy(load_bundle(tmp_path / "bundle"))
    theirs = model.predict(obs, deterministic=True, action_masks=masks)[0]
    assert (runner.act(obs, masks) == theirs).all() and masks[np.arange(100), theirs].all()


@pytest.mark.parametrize(
    "env_id, kwargs",
    [
        ("CartPoleNoVel-v1", {"lstm_hidden_size": 32, "net_arch": [32]}),
        ("PendulumNoVel-v1", {"lstm_hidden_size": 16, "n_lstm_layers": 2, "shared_lstm": True, "enable_critic_lstm": False}),
    ],
    ids=["discrete", "box-2-layers-shared"],
)
def test_recurrent_ppo_imports_and_acts_like_sb3_contrib_over_whole_episodes(env_id, kwargs, tmp_path):
    """sb3-contrib's RecurrentPPO becomes a bundle that takes and gives the LSTM's memory; carried step by step
    from zeros, its actions are RecurrentPPO.predict's (with its own lstm states) over whole episodes."""
    sb3_contrib = pytest.importorskip("sb3_contrib", reason="make test installs sb3-contrib (the test extra)")
    from thrust_app.envs import make_env

    model = sb3_contrib.RecurrentPPO("MlpLstmPolicy", env_id, n_steps=64, batch_size=64, seed=0, policy_kwargs=kwargs)
    learned(model, 256).save(tmp_path / "recurrent")
    assert main(["import", str(tmp_path / "recurrent.zip"), "--env", env_id, "--out", str(tmp_path / "bundle")]) == 0
    bundle = load_bundle(tmp_path / "bundle")
    assert bundle.env_id.startswith("thrust/")  # the player's core twin
    assert [i["name"] for i in bundle.manifest["inputs"]] == ["obs", "state"]
    assert "actions equal SB3's predict" in bundle.manifest["parity"]["stable_baselines3"] or bundle.manifest["parity"][
        "stable_baselines3"
    ].startswith("max |action - SB3 predict|")
    runner, env = OnnxPolicy(bundle), make_env(env_id)
    for seed in range(2):
        obs, _ = env.reset(seed=seed)
        theirs_state, start, ours_state, steps = None, np.ones(1), np.zeros((1, runner.state_size), np.float32), 0
        while steps < 120:
            theirs, theirs_state = model.predict(obs[None], state=theirs_state, episode_start=start, deterministic=True)
            ours, ours_state = runner.act(obs[None], None, ours_state)
            np.testing.assert_allclose(ours, theirs, atol=1e-4)
            obs, _, terminated, truncated, _ = env.step(theirs[0])
            start, steps = np.zeros(1), steps + 1
            if terminated or truncated:
                break


@pytest.mark.parametrize(
    "env_id, algo", [("ThrustTest/Camera36-v0", "PPO"), ("ThrustTest/Camera36Last-v0", "DQN")], ids=["ppo-chw", "dqn-hwc"]
)
def test_a_multi_input_policy_with_an_image_imports_and_acts_like_sb3(env_id, algo, tmp_path):
    """SB3's MultiInputPolicy (a NatureCNN per image key in its CombinedExtractor; a channels-last image turned
    first by its VecTransposeImage) as Thrust's CombinedEncoder: the bundle takes the image as the env gives it,
    uint8, and picks SB3's actions along a played episode."""
    import gymnasium as gym

    kwargs = dict(n_steps=64, batch_size=64) if algo == "PPO" else dict(learning_starts=32, buffer_size=500)
    model = learned(getattr(sb3, algo)("MultiInputPolicy", env_id, seed=0, **kwargs), 128)
    model.save(tmp_path / "multi")
    assert main(["import", str(tmp_path / "multi.zip"), "--env", env_id, "--out", str(tmp_path / "bundle")]) == 0
    bundle = load_bundle(tmp_path / "bundle")
    assert [i["dtype"] for i in bundle.manifest["inputs"]] == ["uint8", "float32"]
    assert "actions equal SB3's predict" in bundle.manifest["parity"]["stable_baselines3"]
    env, runner = gym.make(env_id), OnnxPolicy(bundle)
    obs, _ = env.reset(seed=1)
    for _ in range(30):
        theirs = model.predict(obs, deterministic=True)[0]
        assert runner.act(gym.spaces.flatten(env.observation_space, obs)[None].astype(np.float32))[0] == theirs
        obs, *_ = env.step(int(theirs))


def test_a_multidiscrete_action_model_imports_and_acts_like_sb3(tmp_path, capsys):
    """SB3's MultiCategorical (one argmax per component of the action net's logits) as the bundle's int32 actions;
    a MultiBinary model (SB3's Bernoulli) is refused in one line."""
    import gymnasium as gym

    env_id = "ThrustTest/Dials-v0"  # tests/conftest.py: MultiDiscrete([3, 4, 2]) observations and actions
    model = learned(sb3.PPO("MlpPolicy", env_id, n_steps=128, batch_size=64, seed=0, verbose=0), 256)
    model.save(tmp_path / "dials")
    assert main(["import", str(tmp_path / "dials.zip"), "--env", env_id, "--out", str(tmp_path / "bundle")]) == 0
    env, targets = gym.make(env_id), []
    for seed in range(64):
        targets.append(env.reset(seed=seed)[0])
    targets = np.stack(targets)
    flat = np.concatenate([np.eye(n, dtype=np.float32)[targets[:, i]] for i, n in enumerate((3, 4, 2))], axis=1)
    ours = OnnxPolicy(load_bundle(tmp_path / "bundle")).act(flat)
    assert ours.shape == (64, 3) and (ours == model.predict(targets, deterministic=True)[0]).all()
    binary = learned(sb3.PPO("MlpPolicy", "ThrustTest/BinaryDials-v0", n_steps=64, batch_size=64, seed=0, verbose=0), 64)
    binary.save(tmp_path / "binary")
    assert (
        main(["import", str(tmp_path / "binary.zip"), "--env", "ThrustTest/BinaryDials-v0", "--out", str(tmp_path / "b")]) == 2
    )
    assert "MultiBinary space (SB3's Bernoulli per bit): not supported" in capsys.readouterr().err
