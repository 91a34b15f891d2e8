"""The compiled DQN update (`update="numba"`) gives the reference's clipped gradients and trains the
same Q-net; where it cannot run, the written-out torch update does, with a note."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from thrust_app.algos import DQN
from thrust_app.algos.dqn import DQNConfig, dqn_loss
from thrust_app.envs.core import Discrete
from thrust_app.nets.flat_params import clip_grad_norm_
from thrust_app.speed.numba_dqn import compiled_dqn_gradient
from thrust_app.speed.switches import choose_update


@pytest.mark.parametrize("loss", ["huber", "mse"])
@pytest.mark.parametrize("double", [True, False])
@pytest.mark.parametrize("hidden", [(64, 64), (32,), (16, 24, 8)])
def test_compiled_gradients_equal_autograds(loss, double, hidden, dqn_batch, dqn_nets):
    q_net, target_net = dqn_nets(hidden)
    q_net.zero_grad()
    want_loss = dqn_loss(q_net, target_net, dqn_batch, 0.9, double, loss)
    want_loss.backward()
    clip_grad_norm_(q_net.flat, 0.5)  # small enough to scale these gradients
    want = {name: p.grad.clone() for name, p in q_net.named_parameters()}
    for p in q_net.parameters():
        p.grad.fill_(float("nan"))  # the compiled update must write every gradient, not add to them
    got_loss = compiled_dqn_gradient(q_net, target_net, dqn_batch, 0.9, double, loss, 0.5)
    assert got_loss == pytest.approx(want_loss.item(), rel=1e-6)
    for name, p in q_net.named_parameters():
        assert p.grad.abs().sum() > 0, name
        torch.testing.assert_close(p.grad, want[name], atol=1e-6, rtol=1e-5, msg=name)


def test_the_switch_trains_the_same_q_net_as_autograd(run_iterations):
    """Whole iterations (acting, sampling, updates, clips, target copies, Adam) compiled and by autograd."""
    settings = {"learning_starts": 64, "batch_size": 32, "train_freq": 4, "target_update_interval": 128}
    (compiled, stats), (reference, _) = (
        run_iterations(DQN, "cartpole", 64, n_envs=2, update=way, **settings) for way in ("numba", "reference")
    )
    assert compiled.speed.update == "numba" and reference.speed.update == "reference"
    torch.testing.assert_close(compiled.q_net.flat, reference.q_net.flat, atol=1e-5, rtol=1e-4)
    assert stats["q_loss"] > 0


def test_image_observations_fall_back_to_the_reference_with_a_note():
    algo = DQN((3, 5, 5), Discrete(4), DQNConfig(buffer_size=16, update="numba"), torch.device("cpu"), seed=0)
    assert choose_update(algo) == "reference"
    assert any("update=numba falls back to reference" in note and "CNN" in note for note in algo.notes)


NO_CACHE_RUN = """
import json, sys
import numba.core.caching as caching
caching.CacheImpl._locator_classes = []  # as where no cache location is writable (read-only home and install)
from thrust_app.training.trainer import train
lines = []
summary = train("dqn", "cartpole", timesteps=400, run_dir=sys.argv[1], eval_episodes=1, progress=False, log=lines.append,
                overrides={"update": "numba", "learning_starts": 100, "batch_size": 16, "train_freq": 4})
print(json.dumps({"status": summary["status"], "lines": lines}))
"""


def test_without_a_writable_cache_the_kernels_compile_in_memory_with_a_note(tmp_path):
    done = subprocess.run([sys.executable, "-c", NO_CACHE_RUN, str(tmp_path / "run")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == "finished"
    assert any("update=numba falls back to kernels compiled in memory" in line for line in result["lines"]), result
