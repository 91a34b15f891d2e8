"""The part DQN and SAC share: act for `train_freq` steps into a replay buffer, then learn from it."""

from __future__ import annotations

from abc import abstractmethod

import torch

from ..envs.core import Box
from ..flat_params import FlatParameters
from ..replay import ReplayBuffer
from .base import Algorithm, Iteration


class OffPolicyAlgorithm(Algorithm):
    """Each iteration: `train_freq` steps of every env, then `gradient_steps` calls of `train_step`
    once `learning_starts` env steps have been collected."""

    def __init__(self, obs_shape, action_space, config, device, seed) -> None:
        super().__init__(obs_shape, action_space, config, device, seed)
        continuous = isinstance(action_space, Box)
        self.buffer = ReplayBuffer(config.buffer_size, obs_shape, action_space.shape if continuous else (),
                                   torch.float32 if continuous else torch.int64, device)

    @abstractmethod
    def explore(self, obs: torch.Tensor) -> torch.Tensor:
        """The behaviour policy's actions for a batch of observations."""

    @abstractmethod
    def train_step(self) -> dict[str, torch.Tensor]:
        """One gradient step on a sampled minibatch; returns detached losses."""

    def parts(self):
        return {"buffer": self.buffer}

    def random_actions(self, n: int) -> torch.Tensor:
        space = self.action_space
        if isinstance(space, Box):
            low, high = self.policy.low, self.policy.high
            u = torch.rand((n, *space.shape), generator=self.generator, device=self.device)
            return low + u * (high - low)
        return torch.randint(0, space.n, (n,), generator=self.generator, device=self.device)

    def iteration(self, env, io, obs, progress_remaining) -> Iteration:
        c = self.config
        returns, lengths = [], []
        for _ in range(c.train_freq):
            with torch.no_grad():
                if self.num_timesteps < c.learning_starts:
                    action = self.random_actions(env.num_envs)
                else:
                    action = self.explore(obs)
            out = io.step(env, action)
            self.buffer.add(obs, action, out.reward, out.final_obs, out.terminated)
            done = out.terminated | out.truncated
            if bool(done.any()):
                returns += out.episode_return[done].tolist()
                lengths += out.episode_length[done].tolist()
            obs = out.obs
            self.num_timesteps += env.num_envs
            self.after_env_step()
        stats: dict[str, float] = {}
        if self.num_timesteps >= c.learning_starts:
            totals: dict[str, torch.Tensor] = {}
            for _ in range(c.gradient_steps):
                for key, value in self.train_step().items():
                    totals[key] = totals.get(key, 0.0) + value
            stats = {k: float(v) / c.gradient_steps for k, v in totals.items()} | self.extra_stats()
        return Iteration(obs, c.train_freq * env.num_envs, returns, lengths, stats)

    def after_env_step(self) -> None:
        """Hook run after every vec-env step (DQN updates its target net here)."""

    def extra_stats(self) -> dict[str, float]:
        """Values to log once per iteration besides the losses (DQN's epsilon)."""
        return {}


def polyak(target: FlatParameters, source: FlatParameters, tau: float) -> None:
    """target <- tau * source + (1 - tau) * target, in place: one op on the flat buffers of two nets of
    the same architecture (the target is a copy of the source)."""
    with torch.no_grad():
        target.flat.lerp_(source.flat, tau)


