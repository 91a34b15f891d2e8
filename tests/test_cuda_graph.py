"""The `cuda_graphs` switch: refused in one line off CUDA (the run goes on eagerly, unchanged), and on a
CUDA device the captured update takes the eager update's steps."""

from __future__ import annotations

import pytest
import torch

from thrust_app.algos import DQN, SAC
from thrust_app.cuda_graph import unavailable_reason

SETTINGS = {"hidden": (32, 32), "learning_starts": 40, "batch_size": 16}


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the refusal is for machines without one")
def test_on_the_cpu_the_switch_is_refused_in_one_line_and_the_run_is_unchanged(run_iterations):
    captured, _ = run_iterations(DQN, "cartpole", 60, cuda_graphs=True, **SETTINGS)
    notes = [note for note in captured.notes if "cuda_graphs" in note]
    assert len(notes) == 1 and "\n" not in notes[0] and "CUDA device" in notes[0], captured.notes
    assert captured.captured_update is None
    eager, _ = run_iterations(DQN, "cartpole", 60, **SETTINGS)
    assert torch.equal(captured.q_net.flat, eager.q_net.flat)


def test_each_unmet_condition_has_its_reason():
    cuda = torch.device("cuda")
    assert "CUDA device" in unavailable_reason(torch.device("cpu"), True, "constant")
    assert "backward=fast" in unavailable_reason(cuda, False, "constant")
    assert "lr_schedule=constant" in unavailable_reason(cuda, True, "linear")
    assert unavailable_reason(cuda, True, "constant") is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (run by benches/gpu_check.sh)")
def test_the_captured_dqn_update_takes_the_eager_updates_steps(run_iterations):
    captured, _ = run_iterations(DQN, "cartpole", 80, device="cuda", cuda_graphs=True, **SETTINGS)
    assert captured.captured_update is not None
    eager, _ = run_iterations(DQN, "cartpole", 80, device="cuda", **SETTINGS)
    torch.testing.assert_close(captured.q_net.flat, eager.q_net.flat, atol=1e-5, rtol=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (run by benches/gpu_check.sh)")
def test_the_captured_sac_update_learns_like_the_eager_one(run_iterations):
    captured, _ = run_iterations(SAC, "pendulum", 80, device="cuda", cuda_graphs=True, **SETTINGS)
    assert captured.captured_update is not None
    eager, _ = run_iterations(SAC, "pendulum", 80, device="cuda", **SETTINGS)
    assert captured.parameters_finite()
    # same batches, same steps; the sampling noise inside the graph comes from the generator's graph-safe
    # stream, so the two runs agree closely rather than exactly
    torch.testing.assert_close(captured.critic.flat, eager.critic.flat, atol=1e-2, rtol=1e-2)
