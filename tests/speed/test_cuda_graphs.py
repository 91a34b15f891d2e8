"""The `cuda_graphs` switch of DQN, SAC and PPO: refused in one line off CUDA (the run goes on eagerly,
unchanged), and on a CUDA device the captured update takes the eager update's steps, and PPO's captured
collection the eager collection's."""

from __future__ import annotations

import pytest
import torch

from thrust_app.algos import DQN, PPO, SAC
from thrust_app.envs.batched import make_batched
from thrust_app.envs.tensors import EnvIO
from thrust_app.speed.cuda_graphs import collection_unavailable_reason, same_device, unavailable_reason
from thrust_app.speed.switches import apply_speed

OFF_POLICY = {"hidden": (32, 32), "learning_starts": 40, "batch_size": 16}
# 4 envs x 16 steps = 64 samples in minibatches of 24, 24 and 16: the short last one runs eagerly
ON_POLICY = {"hidden": (32, 32), "n_steps": 16, "batch_size": 24, "n_epochs": 2}
RUNS = {
    "dqn": (DQN, "cartpole", 60, 1, OFF_POLICY),
    "sac": (SAC, "pendulum", 60, 1, OFF_POLICY),
    "ppo": (PPO, "cartpole", 4, 4, ON_POLICY),
}
NEEDS_CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (run by benches/gpu_check.sh)")


def graph_of(algo):
    """The graph wrapper of the algorithm's update step (PPO: its minibatch step)."""
    return algo.speed.graphed["step_minibatch" if isinstance(algo, PPO) else "update"]


def flat_parameters(algo) -> torch.Tensor:
    return algo.net.flat if isinstance(algo, PPO) else algo.q_net.flat if isinstance(algo, DQN) else algo.critic.flat


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the refusal is for machines without one")
@pytest.mark.parametrize("algo", sorted(RUNS))
def test_on_the_cpu_the_switch_is_refused_in_one_line_and_the_run_is_unchanged(run_iterations, algo):
    algo_cls, env, iterations, n_envs, settings = RUNS[algo]
    captured, _ = run_iterations(algo_cls, env, iterations, n_envs, cuda_graphs=True, **settings)
    notes = [note for note in captured.notes if "cuda_graphs" in note]
    assert len(notes) == 1 and "\n" not in notes[0] and "CUDA device" in notes[0], captured.notes
    assert captured.speed.graphed == {}
    eager, _ = run_iterations(algo_cls, env, iterations, n_envs, **settings)
    assert torch.equal(flat_parameters(captured), flat_parameters(eager))


def test_each_unmet_condition_has_its_reason():
    cuda = torch.device("cuda")
    constant = {"lr_schedule": "constant", "clip_schedule": "constant"}
    assert "CUDA device" in unavailable_reason(torch.device("cpu"), True, constant)
    assert "update=handwritten" in unavailable_reason(cuda, False, constant)
    assert "lr_schedule=constant" in unavailable_reason(cuda, True, {**constant, "lr_schedule": "linear"})
    assert "clip_schedule=constant" in unavailable_reason(cuda, True, {**constant, "clip_schedule": "linear"})
    assert unavailable_reason(cuda, True, constant) is None


def test_a_collection_is_captured_only_with_the_env_on_the_learners_device():
    numpy_env = make_batched("cartpole", 4, backend="numpy")
    assert "--env-backend torch" in collection_unavailable_reason(numpy_env, torch.device("cuda"))
    torch_env = make_batched("cartpole", 4, backend="torch", device="cpu", check_actions=False)
    assert "not on the GPU" in collection_unavailable_reason(torch_env, torch.device("cuda"))
    assert collection_unavailable_reason(torch_env, torch.device("cpu")) is None
    checking_env = make_batched("cartpole", 4, backend="torch", device="cpu")
    assert "check_actions=True" in collection_unavailable_reason(checking_env, torch.device("cpu"))


def test_devices_are_one_by_type_and_cuda_index():
    device = torch.device
    assert same_device(device("cuda:1"), device("cuda:1")) and same_device(device("cpu"), device("cpu"))
    assert not same_device(device("cuda:1"), device("cuda:0")) and not same_device(device("cuda:0"), device("cpu"))
    current = torch.cuda.current_device() if torch.cuda.is_available() else 0
    assert same_device(device("cuda"), device(f"cuda:{current}")) and not same_device(
        device("cuda"), device(f"cuda:{current + 1}")
    )


@NEEDS_CUDA
@pytest.mark.parametrize("algo", ["dqn", "ppo"])
def test_the_captured_update_takes_the_eager_updates_steps(run_iterations, algo):
    algo_cls, env, iterations, n_envs, settings = RUNS[algo]
    captured, _ = run_iterations(algo_cls, env, iterations, n_envs, device="cuda", cuda_graphs=True, **settings)
    assert graph_of(captured).captured is not None
    eager, _ = run_iterations(algo_cls, env, iterations, n_envs, device="cuda", **settings)
    torch.testing.assert_close(flat_parameters(captured), flat_parameters(eager), atol=1e-5, rtol=1e-4)


@NEEDS_CUDA
def test_the_captured_sac_update_learns_like_the_eager_one(run_iterations):
    algo_cls, env, iterations, n_envs, settings = RUNS["sac"]
    captured, _ = run_iterations(algo_cls, env, iterations + 20, n_envs, device="cuda", cuda_graphs=True, **settings)
    assert graph_of(captured).captured is not None
    eager, _ = run_iterations(algo_cls, env, iterations + 20, n_envs, device="cuda", **settings)
    assert captured.parameters_finite()
    # same batches, same steps; the sampling noise inside the graph comes from the generator's graph-safe
    # stream, so the two runs agree closely rather than exactly
    torch.testing.assert_close(captured.critic.flat, eager.critic.flat, atol=1e-2, rtol=1e-2)


@NEEDS_CUDA
def test_the_captured_collection_takes_the_eager_steps_and_reads_a_reset_env():
    settings = {**ON_POLICY, "batch_size": 64}
    captured, eager = (run_iterations_on_gpu_envs(graphs, settings) for graphs in (True, False))
    assert captured.speed.graphed["collect_steps"].captured is not None and graph_of(captured).captured is not None
    # the same actions, env states and random draws in every step, or the parameters would be far apart
    torch.testing.assert_close(captured.net.flat, eager.net.flat, atol=1e-5, rtol=1e-4)


def run_iterations_on_gpu_envs(graphs: bool, settings: dict):
    """PPO on 16 CartPoles as torch tensors on the GPU: three iterations, a reset with a new seed, two more."""
    torch.manual_seed(0)
    device = torch.device("cuda")
    env = make_batched("cartpole", 16, seed=0, backend="torch", device="cuda", check_actions=False)
    config = PPO.Config(n_envs=16, cuda_graphs=graphs, **settings)
    agent = PPO(env.observation_space.shape, env.action_space, config, device, seed=0)
    agent.apply_schedules(1.0)
    apply_speed(agent, env)
    env_io = EnvIO(device)
    obs = env_io.reset(env)
    for iteration in range(5):
        if iteration == 3:
            obs = env_io.reset(env, seed=1)
        obs = agent.iteration(env, env_io, obs).obs
    return agent
