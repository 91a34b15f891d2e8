"""Shared test set-up: one torch thread, as Thrust trains small nets (a second thread only adds
synchronisation on two cores); a fixture that trains an algorithm for a few iterations; a small env with
action masks (`ThrustTest/MaskedChoice-v0`, masks by method; `ThrustTest/InfoMaskedChoice-v0`, in info); one with
MultiDiscrete and one with MultiBinary actions (`ThrustTest/Dials-v0`, `ThrustTest/BinaryDials-v0`)."""

import copy
import os
from typing import ClassVar

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym
import numpy as np
import pytest
import torch

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


N_ACTIONS, ALLOWED, STEPS = 6, 3, 20


class MaskedChoice(gym.Env):
    """Each step shows a target action and the 3 of 6 actions allowed (the target among them): +1 for the
    target, -1 for a forbidden action, 0 otherwise; 20 steps. Random play over all actions scores about
    -6.7 an episode, random play among the allowed ones +6.7, the best policy 20. Counts forbidden picks."""

    #: forbidden actions picked, by every instance (a dict, so that a subclass shares it)
    picks: ClassVar[dict[str, int]] = {"forbidden": 0}

    def __init__(self, masks_in_info: bool = False) -> None:
        self.masks_in_info = masks_in_info
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2 * N_ACTIONS,), np.float32)
        self.action_space = gym.spaces.Discrete(N_ACTIONS)

    def _draw(self) -> tuple[np.ndarray, dict]:
        self.target = int(self.np_random.integers(N_ACTIONS))
        others = self.np_random.permutation([a for a in range(N_ACTIONS) if a != self.target])[: ALLOWED - 1]
        self.mask = np.zeros(N_ACTIONS, dtype=bool)
        self.mask[[self.target, *others]] = True
        obs = np.concatenate([np.eye(N_ACTIONS)[self.target], self.mask]).astype(np.float32)
        return obs, ({"action_mask": self.mask.copy()} if self.masks_in_info else {})

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._draw()

    def step(self, action):
        allowed = bool(self.mask[action])
        self.picks["forbidden"] += int(not allowed)
        reward = 1.0 if action == self.target else (0.0 if allowed else -1.0)
        self.t += 1
        obs, info = self._draw()
        return obs, reward, False, self.t >= STEPS, info


class MethodMasks(MaskedChoice):
    def action_masks(self) -> np.ndarray:
        return self.mask.copy()


gym.register("ThrustTest/MaskedChoice-v0", entry_point=MethodMasks)  # tests/training/test_masks.py, interop
gym.register("ThrustTest/InfoMaskedChoice-v0", entry_point=MaskedChoice, kwargs={"masks_in_info": True})


RECALL_STEPS = 10


class MaskedRecall(MethodMasks):
    """MaskedChoice whose target is shown only at the episode's first step and stays the same for its 10 steps:
    masks and memory both needed. Random play among the allowed actions scores about 3.3, a policy without
    memory at best the same (the target is one of the 3 allowed), a policy that remembers the cue 10."""

    def _draw(self) -> tuple[np.ndarray, dict]:
        if self.t == 0:
            self.target = int(self.np_random.integers(N_ACTIONS))
        others = self.np_random.permutation([a for a in range(N_ACTIONS) if a != self.target])[: ALLOWED - 1]
        self.mask = np.zeros(N_ACTIONS, dtype=bool)
        self.mask[[self.target, *others]] = True
        cue = np.eye(N_ACTIONS)[self.target] if self.t == 0 else np.zeros(N_ACTIONS)
        return np.concatenate([cue, self.mask]).astype(np.float32), {}

    def step(self, action):
        obs, reward, terminated, _, info = super().step(action)
        return obs, reward, terminated, self.t >= RECALL_STEPS, info


gym.register("ThrustTest/MaskedRecall-v0", entry_point=MaskedRecall)  # tests/algos/test_recurrent_ppo.py


TURNS = 10


class Dials(gym.Env):
    """Set each dial to the value shown: the reward is the fraction of dials right, 10 turns. Random settings
    score about 10 / values per episode, the right ones 10. `binary`: two-valued dials as MultiBinary."""

    def __init__(self, binary: bool = False) -> None:
        self.nvec = np.array([2, 2, 2, 2] if binary else [3, 4, 2])
        self.observation_space = gym.spaces.MultiBinary(4) if binary else gym.spaces.MultiDiscrete(self.nvec)
        self.action_space = gym.spaces.MultiBinary(4) if binary else gym.spaces.MultiDiscrete(self.nvec)

    def _target(self) -> np.ndarray:
        self.target = self.np_random.integers(self.nvec)
        return self.target.astype(np.int8 if isinstance(self.action_space, gym.spaces.MultiBinary) else np.int64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.turn = 0
        return self._target(), {}

    def step(self, action):
        reward = float(np.mean(np.asarray(action) == self.target))
        self.turn += 1
        return self._target(), reward, False, self.turn >= TURNS, {}


gym.register("ThrustTest/Dials-v0", entry_point=Dials)
gym.register("ThrustTest/BinaryDials-v0", entry_point=Dials, kwargs={"binary": True})
