"""Observation spaces beyond Box: Discrete, MultiDiscrete, MultiBinary, Tuple and Dict of vectors train (flat,
as SB3's preprocessing and CombinedExtractor see them) and export (a Dict's or Tuple's bundle with one input per
part); what cannot is refused in one line."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from thrust_app.algos.base import NumpyPolicy
from thrust_app.envs import env_spaces, make_env
from thrust_app.interop.bundle import OnnxPolicy, load_bundle
from thrust_app.interop.exporter import export_run
from thrust_app.training.evaluation import evaluate
from thrust_app.training.trainer import load_policy, train

LENGTH, LIMIT = 6, 12


class Corridor(gym.Env):
    """Walk from cell 0 to cell 5 (action 1 right, 0 left) within 12 steps for a reward of 1. A random walk
    gets there in about one episode of six; the position is shown in the space named by `kind`."""

    def __init__(self, kind: str = "discrete") -> None:
        self.kind = kind
        self.observation_space = {
            "discrete": gym.spaces.Discrete(LENGTH),
            "multidiscrete": gym.spaces.MultiDiscrete([LENGTH, 2]),
            "multibinary": gym.spaces.MultiBinary(LENGTH),
            "tuple": gym.spaces.Tuple((gym.spaces.Discrete(LENGTH), gym.spaces.Box(0.0, 1.0, (1,), np.float32))),
            "dict": gym.spaces.Dict(
                {"cell": gym.spaces.Discrete(LENGTH), "progress": gym.spaces.Box(0.0, 1.0, (2,), np.float32)}
            ),
        }[kind]
        self.action_space = gym.spaces.Discrete(2)

    def _obs(self):
        cell, progress = self.cell, np.array([self.cell / LENGTH], np.float32)
        return {
            "discrete": cell,
            "multidiscrete": np.array([cell, self.t % 2]),
            "multibinary": (np.arange(LENGTH) == cell).astype(np.int8),
            "tuple": (cell, progress),
            "dict": {"cell": cell, "progress": np.array([cell / LENGTH, self.t / LIMIT], np.float32)},
        }[self.kind]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cell, self.t = 0, 0
        return self._obs(), {}

    def step(self, action):
        self.cell = max(0, self.cell + (1 if action == 1 else -1))
        self.t += 1
        done = self.cell == LENGTH - 1
        return self._obs(), float(done), done, self.t >= LIMIT, {}


KINDS = ["discrete", "multidiscrete", "multibinary", "tuple", "dict"]
for _kind in KINDS:
    gym.register(f"ThrustTest/Corridor-{_kind}-v0", entry_point=Corridor, kwargs={"kind": _kind})


@pytest.mark.parametrize("kind", KINDS)
def test_each_space_trains_where_a_random_policy_fails(kind, tmp_path):
    env_id = f"ThrustTest/Corridor-{kind}-v0"
    obs_space, _ = env_spaces(env_id)
    assert obs_space.dtype == "float32" and len(obs_space.shape) == 1  # one flat vector
    rng = np.random.default_rng(0)
    random_play = evaluate(lambda obs: rng.integers(2, size=len(obs)), env_id, episodes=50).mean
    assert random_play < 0.5
    summary = train("ppo", env_id, timesteps=8_192, run_dir=tmp_path / "run", eval_every=100_000, progress=False)
    assert summary["eval_mean"] == 1.0  # every evaluation episode reaches the end
    if kind in ("dict", "tuple"):
        check_bundle_takes_one_input_per_part(kind, env_id, tmp_path)


def check_bundle_takes_one_input_per_part(kind: str, env_id: str, tmp_path) -> None:
    """The bundle of a Dict (Tuple) env takes each key (item) as the env gives it, an input named after it; fed
    the env's own values it acts as the run's torch policy on the flat vector, and `thrust eval` alike."""
    import onnxruntime as ort

    bundle = export_run(tmp_path / "run", tmp_path / "bundle")
    names = {"dict": ["obs.cell", "obs.progress"], "tuple": ["obs.0", "obs.1"]}[kind]
    assert [i["name"] for i in bundle.manifest["inputs"]] == names
    assert [i["dtype"] for i in bundle.manifest["inputs"]] == ["int64", "float32"]  # a Discrete as its integer
    assert bundle.manifest["parity"]["action_agreement"] == 1.0
    session = ort.InferenceSession(str(bundle.model_path), providers=["CPUExecutionProvider"])
    _, policy = load_policy(tmp_path / "run")
    env = gym.make(env_id)
    space = env.observation_space
    space.seed(0)
    for _ in range(20):
        value = space.sample()
        parts = [value[key] for key in ("cell", "progress")] if kind == "dict" else list(value)
        feed = {name: np.asarray([part]) for name, part in zip(names, parts, strict=True)}
        theirs = session.run(["action"], feed)[0]
        ours = NumpyPolicy(policy)(gym.spaces.flatten(space, value)[None].astype(np.float32))
        assert theirs.tolist() == ours.tolist()
    played = evaluate(OnnxPolicy(load_bundle(bundle.path)), env_id, episodes=5, seed=3)
    assert played.returns == evaluate(NumpyPolicy(policy), env_id, episodes=5, seed=3).returns


class Pictures(Corridor):
    def __init__(self) -> None:
        super().__init__("discrete")
        self.observation_space = gym.spaces.Dict(
            {"cell": gym.spaces.Discrete(LENGTH), "camera": gym.spaces.Box(0, 255, (8, 8), np.uint8)}
        )


class Words(Corridor):
    def __init__(self) -> None:
        super().__init__("discrete")
        self.observation_space = gym.spaces.Text(8)


gym.register("ThrustTest/Pictures-v0", entry_point=Pictures)
gym.register("ThrustTest/Words-v0", entry_point=Words)


def test_spaces_that_do_not_flatten_are_refused_in_one_line():
    with pytest.raises(ValueError, match=r"observation part \['camera'\] has shape \(8, 8\); .*reshape it in a wrapper"):
        make_env("ThrustTest/Pictures-v0")
    with pytest.raises(ValueError, match=r"this env's observation space is Text\(") as refusal:
        env_spaces("ThrustTest/Words-v0")
    assert len(str(refusal.value).splitlines()) == 1


@pytest.mark.parametrize("env_id", ["ThrustTest/Camera-v0", "ThrustTest/CameraLast-v0"])
def test_a_dict_with_an_image_learns_through_a_cnn_per_image_and_exports_bytes(env_id, tmp_path):
    """SB3's MultiInputPolicy semantics: the image key through a CNN of its own (channels last turned first, bytes
    scaled), the vector key as it is; PPO learns from the image alone (random play: 5 of 10). The bundle takes
    the image as uint8 in the env's own layout and the vector as float32, and acts as the torch policy."""
    summary = train("ppo", env_id, timesteps=8_192, seed=0, run_dir=tmp_path / "run", eval_every=100_000, progress=False)
    assert summary["eval_mean"] >= 9.0
    bundle = export_run(tmp_path / "run", tmp_path / "bundle")
    shape = [10, 10, 3] if env_id.endswith("Last-v0") else [3, 10, 10]
    assert [(i["name"], i["dtype"], i["shape"][1:]) for i in bundle.manifest["inputs"]] == [
        ("obs.camera", "uint8", shape),
        ("obs.noise", "float32", [2]),
    ]
    _, policy = load_policy(tmp_path / "run")
    onnx = evaluate(OnnxPolicy(load_bundle(bundle.path)), env_id, episodes=5, seed=9)
    assert onnx.returns == evaluate(NumpyPolicy(policy), env_id, episodes=5, seed=9).returns


@pytest.mark.parametrize("algo", ["dqn", "recurrent_ppo"])
def test_every_discrete_algorithm_trains_on_a_dict_with_an_image(algo, tmp_path):
    overrides = {"learning_starts": 100, "buffer_size": 1000} if algo == "dqn" else {"n_steps": 32, "lstm_hidden_size": 16}
    summary = train(algo, "ThrustTest/Camera-v0", timesteps=600, run_dir=tmp_path / "run", overrides=overrides, progress=False)
    assert np.isfinite(summary["eval_mean"])
    assert export_run(tmp_path / "run", tmp_path / "bundle").manifest["parity"]["action_agreement"] == 1.0
