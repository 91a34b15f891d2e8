"""Observation and reward normalisation while training, with Stable-Baselines3's `VecNormalize` semantics.

A `NormalizedVecEnv` wraps a vec env: observations become clip((obs - mean) / sqrt(var + eps), -clip_obs,
clip_obs) with the running mean and variance of every observation seen in training; rewards become
clip(r / sqrt(var_R + eps), -clip_reward, clip_reward), var_R the running variance of each env's
discounted return R <- gamma R + r (reset at episode ends). Episode returns and lengths stay the env's
own (what a user reads). The statistics travel in the env's checkpoint state; evaluation and export use
them frozen: `obs_normalizer` is the module a run's policy is wrapped in to evaluate and export
(nets/obs_normalizer.py). An off-policy run acts on normalised observations but its replay buffer keeps
the env's own (`original_obs`, `original_step`) and each minibatch is normalised when sampled, with the
statistics of that time (`normalize_sample`), as SB3's replay buffers do under VecNormalize.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from ..envs.vec import BatchStep, VecEnv
from ..nets.obs_normalizer import NormalizedPolicy, ObsNormalizer


class RunningMeanStd:
    """Mean and variance of a stream of batches (Chan et al.'s parallel update, as SB3's), float64."""

    def __init__(self, shape: tuple[int, ...] = (), epsilon: float = 1e-4) -> None:
        self.mean = np.zeros(shape, np.float64)
        self.var = np.ones(shape, np.float64)
        self.count = epsilon

    def update(self, batch: np.ndarray) -> None:
        batch_count = batch.shape[0]
        if batch_count == 1:  # one env: the mean is the row, the variance 0; what mean/var compute, 20 µs sooner
            batch_mean, batch_var = batch[0], 0.0
        else:
            batch_mean, batch_var = batch.mean(axis=0), batch.var(axis=0)
        delta, total = batch_mean - self.mean, self.count + batch_count
        # M2 = M2_a + M2_b + delta^2 n_a n_b / (n_a + n_b)
        m2 = self.var * self.count + batch_var * batch_count + delta**2 * self.count * batch_count / total
        self.mean, self.var, self.count = self.mean + delta * batch_count / total, m2 / total, total

    def state_dict(self) -> dict[str, Any]:
        return {"mean": torch.as_tensor(self.mean), "var": torch.as_tensor(self.var), "count": self.count}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.mean, self.var, self.count = state["mean"].numpy(), state["var"].numpy(), float(state["count"])


class NormalizedVecEnv(VecEnv):
    """`venv` with normalised observations and rewards; the statistics move only while `training`."""

    def __init__(
        self,
        venv: VecEnv,
        *,
        norm_obs: bool,
        norm_reward: bool,
        clip_obs: float,
        clip_reward: float,
        gamma: float,
        epsilon: float,
    ) -> None:
        if venv.backend.name != "numpy":
            raise ValueError("normalize needs the env's arrays in numpy: use --env-backend numpy")
        self.venv = venv
        self.env_id, self.num_envs, self.backend = venv.env_id, venv.num_envs, venv.backend
        self.observation_space, self.action_space = venv.observation_space, venv.action_space
        self.norm_obs, self.norm_reward, self.clip_obs, self.clip_reward = norm_obs, norm_reward, clip_obs, clip_reward
        self.gamma, self.epsilon = gamma, epsilon
        self.obs_rms = RunningMeanStd(tuple(venv.observation_space.shape))
        self.obs_normalizer = ObsNormalizer(self.obs_rms.mean, self.obs_rms.var, epsilon, clip_obs)
        self.ret_rms = RunningMeanStd(())
        self.returns = np.zeros(venv.num_envs, np.float64)
        self.training = True
        #: Whether the env keeps `original_obs` / `original_step` (`keep_originals`: an off-policy run's buffer).
        self.keeps_originals = False
        #: The latest observations and step as the env gave them, before normalisation (SB3's get_original_obs /
        #: get_original_reward): what an off-policy run's replay buffer keeps. Copies: an env may reuse its arrays.
        self.original_obs: np.ndarray | None = None
        self.original_step: BatchStep | None = None
        #: The observation normaliser on a GPU learner's device, with the statistics of `device_count` env steps.
        self.device_normalizer: ObsNormalizer | None = None
        self.device_count = 0.0

    def keep_originals(self) -> None:
        """Keep each step's observations and rewards as the env gave them (what SB3 keeps in a replay buffer under
        VecNormalize); an on-policy run never reads them, so it does not pay the copies."""
        self.keeps_originals = True

    def normalize_obs(self, obs: np.ndarray) -> np.ndarray:
        if not self.norm_obs:
            return obs
        return self.obs_normalizer.normalize_array(obs)

    def update_obs_statistics(self, obs: np.ndarray) -> None:
        self.obs_rms.update(obs)
        self.obs_normalizer.set_statistics(self.obs_rms.mean, self.obs_rms.var)

    def reward_scale(self) -> np.float64:
        """sqrt(var_R + eps): what a reward is divided by (before clipping to +-clip_reward)."""
        return np.sqrt(self.ret_rms.var + self.epsilon)

    def normalize_reward(self, reward: np.ndarray) -> np.ndarray:
        if not self.norm_reward:
            return reward
        return np.clip(reward / self.reward_scale(), -self.clip_reward, self.clip_reward).astype(np.float32)

    def reset(self, seed: int | None = None) -> np.ndarray:
        obs = self.venv.reset(seed)
        if self.keeps_originals:
            self.original_obs = np.array(obs)
        self.returns[:] = 0.0
        if self.training and self.norm_obs:
            self.update_obs_statistics(obs)
        return self.normalize_obs(obs)

    def step(self, actions: Any) -> BatchStep:
        step = self.venv.step(actions)
        if self.keeps_originals:
            self.original_obs = np.array(step.obs)
            self.original_step = step._replace(reward=np.array(step.reward), final_obs=np.array(step.final_obs))
        if self.training and self.norm_obs:
            self.update_obs_statistics(step.obs)
        if self.training and self.norm_reward:
            self.returns = self.returns * self.gamma + step.reward  # R <- gamma R + r
            self.ret_rms.update(self.returns)
        ended = step.terminated | step.truncated
        self.returns[ended] = 0.0
        obs = self.normalize_obs(step.obs)
        # final_obs differs from obs only where an episode ended (SB3 normalises only those terminal observations)
        final_obs = self.normalize_obs(step.final_obs) if ended.any() else obs
        return step._replace(obs=obs, reward=self.normalize_reward(step.reward), final_obs=final_obs)

    def normalize_sample(self, batch: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        """A replay minibatch of the env's own values (obs, actions, rewards, next obs, ...) normalised with the
        statistics as they are now, as SB3's replay buffers sample under VecNormalize."""
        obs, actions, rewards, next_obs, *rest = batch
        if self.norm_obs:
            normalizer = self.obs_normalizer_on(obs.device)
            obs, next_obs = normalizer(obs.float()), normalizer(next_obs.float())
        if self.norm_reward:  # r / sqrt(var_R + eps), clipped
            rewards = torch.clamp(rewards / float(self.reward_scale()), -self.clip_reward, self.clip_reward)
        return (obs, actions, rewards, next_obs, *rest)

    def obs_normalizer_on(self, device: torch.device) -> ObsNormalizer:
        """The observation normaliser with the current statistics on `device`: the env's own on the CPU; for a GPU
        learner one copy on its device, refreshed only when the statistics moved since the last sample."""
        if device == self.obs_normalizer.mean.device:
            return self.obs_normalizer
        if self.device_normalizer is None or self.device_normalizer.mean.device != device:
            self.device_normalizer, self.device_count = copy.deepcopy(self.obs_normalizer).to(device), self.obs_rms.count
        elif self.device_count != self.obs_rms.count:
            self.device_normalizer.load_state_dict(self.obs_normalizer.state_dict())  # copies onto its own device
            self.device_count = self.obs_rms.count
        return self.device_normalizer

    def close(self) -> None:
        self.venv.close()

    def get_state(self) -> dict[str, Any]:
        return {
            "inner": self.venv.get_state(),
            "obs_rms": self.obs_rms.state_dict(),
            "ret_rms": self.ret_rms.state_dict(),
            "returns": torch.as_tensor(self.returns),
        } | (
            {"original_obs": torch.as_tensor(self.original_obs)}
            if self.keeps_originals and self.original_obs is not None
            else {}
        )

    def set_state(self, state: dict[str, Any]) -> None:
        self.obs_rms.load_state_dict(state["obs_rms"])
        self.obs_normalizer.set_statistics(self.obs_rms.mean, self.obs_rms.var)
        self.ret_rms.load_state_dict(state["ret_rms"])
        self.returns = state["returns"].numpy().copy()
        if "original_obs" in state:  # the observation a restored episode goes on from, as the env gave it
            self.original_obs = state["original_obs"].numpy().copy()
        if state["inner"] is not None:
            self.venv.set_state(state["inner"])

    def restores_episodes(self, state: dict[str, Any] | None) -> bool:
        return state is not None and state["inner"] is not None


def normalized(venv: VecEnv, config: Any) -> NormalizedVecEnv:
    """`venv` normalised as a run's config asks (its `gamma` discounts the returns whose std scales rewards)."""
    return NormalizedVecEnv(
        venv,
        norm_obs=config.norm_obs,
        norm_reward=config.norm_reward,
        clip_obs=config.clip_obs,
        clip_reward=config.clip_reward,
        gamma=config.gamma,
        epsilon=config.norm_epsilon,
    )


def on_raw_observations(policy: torch.nn.Module, config: Any, env_state: dict[str, Any] | None) -> torch.nn.Module:
    """The policy as evaluation and export see it: trained on normalised observations, it gets the saved
    statistics in front, frozen (`NormalizedPolicy`); any other policy as it is."""
    if not (config.normalize and config.norm_obs):
        return policy
    if env_state is None or "obs_rms" not in env_state:
        raise ValueError("the run normalises observations but its checkpoint holds no statistics")
    rms = RunningMeanStd()
    rms.load_state_dict(env_state["obs_rms"])
    normalizer = ObsNormalizer(rms.mean, rms.var, config.norm_epsilon, config.clip_obs)
    return NormalizedPolicy(policy, normalizer.to(next(policy.parameters()).device))


def evaluated_policy(algo: Any, env: VecEnv) -> torch.nn.Module:
    """A training run's deterministic policy on raw observations: with normalisation, the env's statistics
    as they are now in front of it, frozen."""
    return on_raw_observations(algo.policy, algo.config, env.get_state() if algo.config.normalize else None)
