"""A feature extractor of the user's own (SB3's features_extractor_class) sits in front of the MLPs of every
algorithm, trains, is saved with the run, is built again where the run is read, exports, and is refused in
one line when it cannot be used."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

from thrust_app import DQN, PPO, SAC
from thrust_app.algos.base import deterministic_action
from thrust_app.config import ConfigError
from thrust_app.interop.bundle import OnnxPolicy
from thrust_app.nets.extractor import FeatureExtractor, class_path
from thrust_app.training.trainer import load_policy

SB3_FLATTEN = "stable_baselines3.common.torch_layers:FlattenExtractor"


class TinyExtractor(nn.Module):
    """SB3's contract: (observation_space, **kwargs), the output width as features_dim."""

    def __init__(self, observation_space, features_dim: int = 16) -> None:
        super().__init__()
        self.features_dim = features_dim
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(int(np.prod(observation_space.shape)), features_dim), nn.ReLU())

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)


def test_ppo_trains_through_the_extractor_and_its_run_acts_and_exports_the_same(tmp_path):
    kwargs = {"features_extractor_class": TinyExtractor, "features_extractor_kwargs": {"features_dim": 8}}
    model = PPO("CartPole-v1", runs_root=tmp_path, verbose=0, n_envs=4, n_steps=64, policy_kwargs=kwargs)
    assert model.spec.config["features_extractor"] == class_path(TinyExtractor)
    assert json.loads(model.spec.config["features_extractor_kwargs"]) == {"features_dim": 8}
    before = model.algo.net.combined.module.net[1].weight.clone()
    notes: list[str] = []
    model.learn(1024, callback=lambda live: notes.extend(note.split(": reference only")[0] for note in live.algo.notes))
    extractor = model.algo.net.combined.module
    assert isinstance(extractor, TinyExtractor) and extractor.net[1].weight.shape == (8, 4)
    assert not torch.equal(extractor.net[1].weight, before)  # trained with the rest
    assert "update=handwritten falls back to reference: a feature extractor of your own runs as torch runs it" in notes
    obs = np.random.default_rng(0).normal(size=(200, 4)).astype(np.float32)
    _, policy = load_policy(model.run_dir)
    assert np.array_equal(model.predict(obs)[0], deterministic_action(policy, torch.as_tensor(obs)).numpy())
    bundle = model.export(tmp_path / "bundle")
    assert np.array_equal(OnnxPolicy(bundle).act(obs), model.predict(obs)[0])


@pytest.mark.parametrize("cls, env", [(DQN, "CartPole-v1"), (SAC, "Pendulum-v1")])
def test_off_policy_nets_each_get_their_own_extractor(tmp_path, cls, env):
    model = cls(env, runs_root=tmp_path, verbose=0, learning_starts=64, features_extractor=class_path(TinyExtractor))
    model.learn(256)
    extractors = [m for m in model.algo.stateful_parts().values() if isinstance(m, nn.Module) for m in m.modules()]
    extractors = [m for m in extractors if isinstance(m, TinyExtractor)]
    assert len(extractors) == (2 if cls is DQN else 5)  # q-net and target; actor, two critics, their two targets
    assert len({id(m) for m in extractors}) == len(extractors)


def test_a_run_naming_an_importable_extractor_is_read_in_another_process(tmp_path):
    model = PPO("CartPole-v1", runs_root=tmp_path, verbose=0, n_envs=4, n_steps=64, features_extractor=SB3_FLATTEN)
    model.learn(256)
    out = subprocess.run(
        [sys.executable, "-m", "thrust_app", "eval", str(model.run_dir), "--episodes", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0 and "mean return" in out.stdout, out.stderr[-2000:]


@pytest.mark.parametrize(
    "path, kwargs, message",
    [
        ("TinyExtractor", "{}", "give it as 'package.module:Class'"),
        ("no_such_module:Thing", "{}", "cannot be loaded here"),
        ("builtins:object", "{}", "is not a torch nn.Module class"),
        (SB3_FLATTEN, "[1, 2]", "must be a JSON object"),
        (SB3_FLATTEN, "{oops", "is not JSON"),
        ("torch.nn:Identity", "{}", "says no output width: give it features_dim"),
    ],
)
def test_what_cannot_be_used_is_refused_in_one_line(tmp_path, path, kwargs, message):
    with pytest.raises(ConfigError, match=message) as raised:
        if path == "torch.nn:Identity":
            FeatureExtractor(path, kwargs).build((4,))
        else:
            PPO("CartPole-v1", runs_root=tmp_path, verbose=0, features_extractor=path, features_extractor_kwargs=kwargs)
    assert "\n" not in str(raised.value)
