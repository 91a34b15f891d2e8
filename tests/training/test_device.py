"""Devices: `auto` picks what the machine has; asking for CUDA without a GPU is one clear error."""

from __future__ import annotations

import pytest
import torch

from thrust_app.algos import PPO
from thrust_app.algos.base import deterministic_action
from thrust_app.envs.core import Discrete
from thrust_app.training.device import DeviceError, resolve_device
from thrust_app.training.evaluation import evaluate
from thrust_app.training.trainer import EVAL_SEED_OFFSET, env_device, load_policy, resume, train

QUIET = {"progress": False, "log": lambda _: None}


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA, so asking for it is no error")
def test_cuda_without_a_gpu_is_a_clear_error():
    with pytest.raises(DeviceError, match=r"no CUDA device.*--device cpu"):
        resolve_device("cuda")
    assert resolve_device("auto").type == "cpu"
    with pytest.raises(DeviceError, match="unknown device 'tpu'"):
        resolve_device("tpu")


def test_the_cpu_thread_that_trains_flushes_denormals():
    """A dead unit's Adam moments decay into denormal floats, where every op costs many times a normal one:
    resolve_device("cpu") has the calling thread flush them to zero."""
    torch.set_flush_denormal(False)
    assert (torch.tensor([1e-30]) * 1e-10).item() > 0  # 1e-40: a denormal float32
    resolve_device("cpu")
    assert (torch.tensor([1e-30]) * 1e-10).item() == 0.0


def test_a_numpy_env_stays_on_the_host_when_the_learner_is_on_a_gpu():
    assert env_device("numpy", torch.device("cuda")) == "cpu"  # EnvIO copies its arrays to the learner
    assert env_device("torch", torch.device("cuda")) == "cuda"  # no host copy per step
    assert env_device("torch", torch.device("cpu")) == "cpu"


def test_a_checkpoint_from_a_gpu_run_loads_on_the_cpu_with_a_note():
    """A CUDA generator's state (seed and offset, 16 bytes) in a checkpoint loaded by a CPU algorithm."""
    trained = PPO((4,), Discrete(2), PPO.Config(), torch.device("cpu"), seed=0)
    with torch.no_grad():
        trained.net.flat.add_(1.0)
    state = trained.state_dict() | {"generator": torch.zeros(16, dtype=torch.uint8)}
    loaded = PPO((4,), Discrete(2), PPO.Config(), torch.device("cpu"), seed=0)
    loaded.load_state_dict(state)
    pairs = zip(loaded.net.parameters(), trained.net.parameters(), strict=True)
    assert all(torch.equal(mine, theirs) for mine, theirs in pairs)
    assert any("random stream was saved on another kind of device" in note for note in loaded.notes)


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here: the CUDA training path runs in benches/gpu_check.sh"
)
@pytest.mark.parametrize(
    ("algo", "env", "env_backend"),
    [("ppo", "cartpole", "numpy"), ("ppo", "cartpole", "torch"), ("dqn", "cartpole", "numpy"), ("sac", "pendulum", "torch")],
)
def test_training_runs_on_cuda_and_the_policy_loads_on_the_cpu(tmp_path, algo, env, env_backend):
    summary = train(algo, env, timesteps=1024, device="cuda", env_backend=env_backend, run_dir=tmp_path, **QUIET)
    assert summary["device"].startswith("cuda") and summary["timesteps"] >= 1024
    for device in ("cpu", "cuda"):  # to export or watch it on the CPU, to play it on the GPU
        _, policy = load_policy(tmp_path, device)
        assert all(p.device.type == device for p in policy.parameters())
    resumed = resume(tmp_path, timesteps=2048, **QUIET)  # on the run's own device, from its checkpoint
    assert resumed["device"].startswith("cuda") and resumed["timesteps"] >= 2048


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here: the CUDA training path runs in benches/gpu_check.sh"
)
def test_a_captured_ppo_run_with_its_envs_on_cuda_trains_and_resumes(tmp_path):
    """cuda_graphs=True with env, policy and update on the GPU: the collection and the update both captured,
    through the trainer's checkpoints and a resume (which loads the env's arrays anew)."""
    settings = {"cuda_graphs": True, "n_envs": 64, "n_steps": 16, "batch_size": 256}
    settings |= {"lr_schedule": "constant", "clip_schedule": "constant"}
    lines: list[str] = []
    quiet_with_notes = {"progress": False, "log": lines.append}
    summary = train(
        "ppo",
        "cartpole",
        timesteps=4096,
        device="cuda",
        env_backend="torch",
        run_dir=tmp_path,
        overrides=settings,
        **quiet_with_notes,
    )
    assert summary["timesteps"] >= 4096
    resumed = resume(tmp_path, timesteps=8192, **quiet_with_notes)
    assert resumed["timesteps"] >= 8192
    assert not [line for line in lines if "cuda_graphs" in line], lines  # nothing refused: both parts captured


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here: the CUDA training path runs in benches/gpu_check.sh"
)
@pytest.mark.parametrize(("algo", "env"), [("dqn", "cartpole"), ("sac", "pendulum")])
def test_the_compiled_update_on_cuda_takes_the_torch_update_with_a_note(tmp_path, algo, env):
    lines: list[str] = []
    summary = train(
        algo, env, timesteps=1024, device="cuda", run_dir=tmp_path, overrides={"update": "numba"},
        progress=False, log=lines.append,
    )  # fmt: skip
    assert summary["timesteps"] >= 1024
    assert any("update=numba falls back to handwritten" in line and "CPU" in line for line in lines), lines


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here: the CUDA training path runs in benches/gpu_check.sh"
)
def test_a_gpu_runs_evaluation_acts_with_its_final_policy(tmp_path):
    """Evaluations of a run on the GPU act on a CPU copy of the policy: the copy is the policy as it is then."""
    summary = train("ppo", "cartpole", timesteps=2048, seed=0, device="cuda", run_dir=tmp_path, eval_episodes=3, **QUIET)
    _, policy = load_policy(tmp_path, "cpu")
    act = lambda obs: deterministic_action(policy, torch.as_tensor(obs)).numpy()  # noqa: E731
    assert summary["eval_mean"] == evaluate(act, "cartpole", 3, seed=EVAL_SEED_OFFSET).mean
