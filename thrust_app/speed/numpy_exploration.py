"""DQN's and SAC's acting into the replay buffer with numpy end to end: the `acting="numpy"` path of the
off-policy algorithms.

The reference is `OffPolicyAlgorithm.act` (algos/off_policy.py): per env step the behaviour policy's
torch forward, the env step through EnvIO and the buffer's tensor `add`. Here the explorer's forward
runs in numpy on views of the net's parameters (numpy_acting.py), the env's own arrays are used, the
buffer is written through its numpy views, and the random numbers of all `train_freq` steps are drawn
at once from the algorithm's generator. DQN's come in the reference's order, so both paths take the same
actions (tests/speed/test_numpy_acting.py); SAC's noise is drawn from the algorithm's generator where
the reference's `actor.sample` draws from torch's global one: the same distribution, other numbers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ..algos.dqn import DQN, uniform_action
from ..algos.off_policy import OffPolicyAlgorithm
from ..algos.sac import SAC
from ..envs.tensors import EnvIO
from ..envs.vec import VecEnv, episode_ended
from .numpy_acting import FastEpsilonGreedy, FastSquashedGaussian

#: The behaviour policy in numpy, called as `explorer(obs, *draws)` with one step's draws.
Explorer = Callable[..., np.ndarray]


class NumpyExploration:
    """`algo.act` in numpy for one off-policy algorithm (built once per run; its nets' views follow every update)."""

    def __init__(self, algo: OffPolicyAlgorithm) -> None:
        self.algo = algo
        if isinstance(algo, DQN):
            self.policy = FastEpsilonGreedy(algo.q_net)
        elif isinstance(algo, SAC):
            self.policy = FastSquashedGaussian(algo.actor)
        else:
            raise TypeError(f"{type(algo).__name__} has no numpy explorer")

    def explorer(self) -> Explorer:
        """The behaviour policy at the algorithm's exploration settings when it is called (DQN's epsilon,
        which `after_env_step` moves every step)."""
        algo = self.algo
        if isinstance(algo, DQN):
            policy = self.policy
            return lambda obs, uniform, random_action: policy(obs, uniform, random_action, algo.exploration_rate)
        return self.policy

    def draws(self, steps: int, n: int) -> list[tuple[np.ndarray, ...]]:
        """The random numbers `steps` explorer calls take for n envs, drawn at once from the algorithm's
        generator as the reference draws them step by step: one tuple per step."""
        algo = self.algo
        if isinstance(algo, DQN):  # DQN.explore's (u, v) pair per step: one draw of (steps, 2, n) is the same stream
            u, v = torch.rand((steps, 2, n), generator=algo.generator, device=algo.device).unbind(1)
            return list(zip(u.numpy(), uniform_action(v, algo.action_space.n).numpy(), strict=True))
        noise = torch.randn((steps, n, *algo.action_space.shape), generator=algo.generator, device=algo.device)
        return [(step_noise,) for step_noise in noise.numpy()]

    def __call__(self, env: VecEnv, env_io: EnvIO, obs: torch.Tensor) -> tuple[list[float], list[int], torch.Tensor]:
        """The reference's `train_freq` steps of every env into the buffer (`env_io` is not needed: the env's
        own arrays are used); the finished episodes' returns and lengths and the observation to go on from."""
        algo = self.algo
        config, n = algo.config, env.num_envs
        returns, lengths = [], []
        obs_array = obs.numpy()
        # the first steps act at random while fewer than learning_starts env steps are collected, as in `act`
        random_steps = min(config.train_freq, max(0, -(-(config.learning_starts - algo.num_timesteps) // n)))
        uniform_actions = None  # drawn only while some steps act at random: an empty draw still costs ~30 us
        if random_steps:
            uniform_actions = algo.random_actions(random_steps * n).numpy()
            uniform_actions = uniform_actions.reshape(random_steps, n, *uniform_actions.shape[1:])
        draws = self.draws(config.train_freq - random_steps, n)
        explorer = self.explorer() if draws else None
        for index in range(config.train_freq):
            action = uniform_actions[index] if index < random_steps else explorer(obs_array, *draws[index - random_steps])
            kept_obs = algo.kept_obs(obs_array)  # the env's original under normalize (taken before the step)
            step = env.step(action)
            reward, next_obs = algo.kept_outcome(step)
            algo.buffer.add_arrays(kept_obs, action, reward, next_obs, step.terminated)
            done = step.terminated | step.truncated
            ended = episode_ended(step)
            if ended.any():
                returns += step.episode_return[ended].tolist()
                lengths += step.episode_length[ended].tolist()
            obs_array = step.obs
            algo.num_timesteps += n
            algo.after_env_step(done)
        return returns, lengths, torch.from_numpy(obs_array)
