"""Shared test set-up: one torch thread, as Thrust trains small nets (a second thread only adds
synchronisation on two cores); a fixture that trains an algorithm for a few iterations; the small tasks with
known answers registered (thrust_app/envs/tasks.py: action masks, memory, MultiDiscrete and MultiBinary)."""

import copy
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest
import torch

from thrust_app.envs import tasks  # noqa: F401 (registers the ThrustTest/ tasks)
from thrust_app.envs.batched import make_batched
from thrust_app.envs.tensors import EnvIO
from thrust_app.nets.policies import QNetwork
from thrust_app.speed.switches import apply_speed


@pytest.fixture
def dqn_batch():
    """A replay minibatch of 48 transitions with 5-dim observations and 3 actions: (obs, actions, rewards,
    next obs, terminated), rewards large enough that Huber's clipped side is reached."""
    generator = torch.Generator().manual_seed(0)
    n, obs_size, n_actions = 48, 5, 3
    return (
        torch.randn(n, obs_size, generator=generator) * 2,
        torch.randint(0, n_actions, (n,), generator=generator),
        torch.randn(n, generator=generator) * 3,
        torch.randn(n, obs_size, generator=generator) * 2,
        (torch.rand(n, generator=generator) < 0.3).float(),
    )


@pytest.fixture
def dqn_nets():
    """`make(hidden)`: a Q-net for `dqn_batch` (5-dim observations, 3 actions) built from torch seed 0, and a
    target net that lags it."""

    def make(hidden: tuple[int, ...]) -> tuple[QNetwork, QNetwork]:
        torch.manual_seed(0)
        q_net = QNetwork((5,), 3, hidden)
        target_net = copy.deepcopy(q_net)
        with torch.no_grad():
            target_net.flat.add_(0.1 * torch.randn_like(target_net.flat))
        return q_net, target_net

    return make


@pytest.fixture
def run_iterations():
    """`run(algo_cls, env_id, iterations, n_envs=1, device="cpu", env_backend="numpy", seed=0, **settings)`:
    the algorithm built from torch seed `seed` on a batched env (the same seed; numpy arrays on the host, or
    torch tensors on `device`), its speed switches applied, after that many iterations, and the last
    iteration's logged stats."""

    def run(
        algo_cls,
        env_id: str,
        iterations: int,
        n_envs: int = 1,
        device: str = "cpu",
        env_backend: str = "numpy",
        seed: int = 0,
        **settings,
    ):
        torch.manual_seed(seed)
        env_device = device if env_backend == "torch" else "cpu"
        env = make_batched(env_id, n_envs, seed=seed, backend=env_backend, device=env_device, check_actions=False)
        config = algo_cls.Config(n_envs=n_envs, **settings)
        agent = algo_cls(env.observation_space.shape, env.action_space, config, torch.device(device), seed=seed)
        agent.apply_schedules(1.0)
        apply_speed(agent, env)
        env_io = EnvIO(torch.device(device))
        obs, stats = env_io.reset(env), {}
        for _ in range(iterations):
            iteration = agent.iteration(env, env_io, obs)
            obs, stats = iteration.obs, iteration.stats
        return agent, stats

    return run
