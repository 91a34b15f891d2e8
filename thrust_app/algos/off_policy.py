"""The part DQN and SAC share: their common settings, and acting for `train_freq` steps into a replay
buffer, then learning from it."""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, Literal

import torch

from ..config import CUDA_GRAPHS_HELP, OFF_POLICY_UPDATE_HELP, AlgoConfig, ConfigError, check_memory, param
from ..envs.core import Box
from ..envs.vec import episode_ended
from ..nets.flat_params import FlatParameters
from .base import Algorithm, Iteration
from .frame_replay import FrameSharingReplay
from .her import GoalSpace, HerReplayBuffer
from .replay import Batch, ReplayBuffer


@dataclasses.dataclass
class OffPolicyConfig(AlgoConfig):
    """Settings DQN and SAC share (each redeclares the defaults it changes)."""

    buffer_size: int = param(1_000_000, "replay buffer capacity (transitions)", ge=1)
    learning_starts: int = param(100, "env steps of uniform random actions before learning starts", ge=0)
    batch_size: int = param(256, "minibatch size", ge=1)
    train_freq: int = param(1, "env steps (per env) between learning phases", ge=1)
    gradient_steps: int = param(1, "gradient steps per learning phase", ge=1)
    tau: float = param(0.005, "target network update weight (1.0 = hard copy)", gt=0, le=1)
    activation: Literal["relu", "tanh"] = param("relu", "MLP activation of every net (SB3's activation_fn)")
    share_frames: bool = param(
        True,
        "with frame_stack > 1: the replay buffer stores each frame once and rebuilds the stacks when sampling "
        "(the same samples as storing every stack, about 1/(2 x frame_stack) of the memory; algos/frame_replay.py)",
    )
    replay_buffer_class: Literal["ReplayBuffer", "HerReplayBuffer"] = param(
        "ReplayBuffer",
        "HerReplayBuffer: Hindsight Experience Replay, for goal envs (a Dict observation with achieved_goal and "
        "desired_goal, and compute_reward, as gymnasium-robotics' Fetch envs): minibatches relabelled with goals "
        "the episode achieved (algos/her.py)",
    )
    n_sampled_goal: int = param(4, "HER: relabelled transitions per real one (a share k / (k + 1) of each minibatch)", ge=1)
    goal_selection_strategy: Literal["future", "final", "episode"] = param(
        "future", "HER: a relabelled goal is achieved at a later step of the episode (future), its last, or any step"
    )
    cuda_graphs: bool = param(False, CUDA_GRAPHS_HELP)
    update: Literal["handwritten", "numba", "reference"] = param("handwritten", OFF_POLICY_UPDATE_HELP)

    def validate(self) -> None:
        super().validate()
        if self.uses_her() and self.shares_frames():
            raise ConfigError("replay_buffer_class=HerReplayBuffer keeps whole observations: set share_frames=False")

    def uses_her(self) -> bool:
        return self.replay_buffer_class == "HerReplayBuffer"

    def shares_frames(self) -> bool:
        return self.share_frames and self.frame_stack > 1

    def check_fits(self, timesteps: int, obs_bytes: int) -> None:
        """The replay buffer and the envs must fit the machine's memory."""
        # per transition: obs and next obs in their dtype, or one frame when frames are shared; action, reward,
        # terminated (float32; int64 actions count as two)
        obs_storage = obs_bytes / self.frame_stack if self.shares_frames() else 2 * obs_bytes
        check_memory(
            self.buffer_size * (obs_storage + 16), f"a replay buffer of {self.buffer_size:,} transitions", "lower buffer_size"
        )
        check_memory(self.n_envs * (obs_bytes + 32) * 4, f"{self.n_envs:,} envs", "lower n_envs")


class OffPolicyAlgorithm(Algorithm):
    """Each iteration: `train_freq` steps of every env, then `gradient_steps` calls of `train_step`
    once `learning_starts` env steps have been collected."""

    config: OffPolicyConfig

    def __init__(self, obs_shape, action_space, config: OffPolicyConfig, device, seed, obs_dtype="float32", obs_parts=None):
        super().__init__(obs_shape, action_space, config, device, seed, obs_dtype, obs_parts)
        action_shape, action_dtype = self.stored_actions()
        obs_torch_dtype = getattr(torch, obs_dtype)
        #: HER's buffer needs the env's goals: `use_goals` makes it (build_algorithm calls it)
        self.buffer: ReplayBuffer | FrameSharingReplay | HerReplayBuffer | None = None
        #: Under normalize, the env that normalises (`use_normalizer`): the buffer keeps its original values
        self.normalizing_env: Any = None
        if config.uses_her():
            return
        if config.shares_frames():
            self.buffer = FrameSharingReplay(
                config.buffer_size, obs_shape, action_shape, action_dtype, device, obs_torch_dtype, config.n_envs
            )
        else:
            self.buffer = ReplayBuffer(config.buffer_size, obs_shape, action_shape, action_dtype, device, obs_torch_dtype)

    def stored_actions(self) -> tuple[tuple[int, ...], torch.dtype]:
        """The shape and dtype of one action in the replay buffer: Box actions as float32, discrete ones as int64."""
        if isinstance(self.action_space, Box):
            return tuple(self.action_space.shape), torch.float32
        return (), torch.int64

    def use_goals(self, goals: GoalSpace) -> None:
        """Make the HER buffer (replay_buffer_class=HerReplayBuffer) for the env whose goals `goals` describes."""
        config = self.config
        action_shape, action_dtype = self.stored_actions()
        self.buffer = HerReplayBuffer(
            config.buffer_size, self.obs_shape, action_shape, action_dtype, self.device, config.n_envs, goals,
            config.n_sampled_goal, config.goal_selection_strategy,
        )  # fmt: skip

    @abstractmethod
    def explore(self, obs: torch.Tensor) -> torch.Tensor:
        """The behaviour policy's actions for a batch of observations."""

    @abstractmethod
    def update(self, batch: Batch) -> dict[str, torch.Tensor]:
        """One gradient step on `batch` (obs, actions, rewards, next obs, terminated); returns detached losses."""

    def train_step(self) -> dict[str, torch.Tensor]:
        """One gradient step on a minibatch sampled from the buffer (normalised as it is sampled, under normalize)."""
        batch = self.buffer.sample(self.config.batch_size, self.generator)
        return self.update(batch if self.normalizing_env is None else self.normalizing_env.normalize_sample(batch))

    def use_normalizer(self, env: Any) -> None:
        """Under normalize, as SB3 with VecNormalize: the buffer keeps the observations and rewards as the env gave
        them (`env.original_obs`, `env.original_step`), and each minibatch is normalised when it is sampled, with
        the statistics as they are then (`env.normalize_sample`); HER relabels on the original goals first."""
        env.keep_originals()
        self.normalizing_env = env

    def kept_obs(self, obs: Any, convert: Callable[[Any], Any] = lambda x: x) -> Any:
        """The observation `obs` (the one acted on) as the buffer keeps it: the env's original under normalize."""
        return obs if self.normalizing_env is None else convert(self.normalizing_env.original_obs)

    def kept_outcome(self, step: Any, convert: Callable[[Any], Any] = lambda x: x) -> tuple[Any, Any]:
        """The reward and next observation of `step` as the buffer keeps them: the env's originals under normalize."""
        if self.normalizing_env is None:
            return step.reward, step.final_obs
        original = self.normalizing_env.original_step
        return convert(original.reward), convert(original.final_obs)

    def stateful_parts(self):
        return {"buffer": self.buffer}

    def random_actions(self, n: int, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Uniform random actions (the warm-up's), among the allowed ones where the env offers masks."""
        space = self.action_space
        if isinstance(space, Box):
            low, high = self.policy.low, self.policy.high
            uniform = torch.rand((n, *space.shape), generator=self.generator, device=self.device)
            return low + uniform * (high - low)
        if mask is not None:
            return uniform_allowed(torch.rand(n, generator=self.generator, device=self.device), mask)
        return torch.randint(0, space.n, (n,), generator=self.generator, device=self.device)

    def iteration_steps(self, num_envs: int) -> int:
        return self.config.train_freq * num_envs

    def iteration(self, env, env_io, obs) -> Iteration:
        returns, lengths, obs = self.act(env, env_io, obs)
        return self.learn(env, obs, returns, lengths)

    def act(self, env, env_io, obs) -> tuple[list[float], list[int], torch.Tensor]:
        """`train_freq` steps of every env into the buffer, acting through torch; returns the finished
        episodes' returns and lengths and the observation to go on from."""
        config = self.config
        returns, lengths = [], []
        mask = env_io.masks(env)  # None, unless the env offers action masks (DQN then acts among the allowed)
        for _ in range(config.train_freq):
            with torch.no_grad():
                if self.num_timesteps < config.learning_starts:
                    action = self.random_actions(env.num_envs, mask)
                else:
                    action = self.explore(obs) if mask is None else self.explore(obs, mask)
            kept_obs = self.kept_obs(obs, env_io.tensor)  # before the step replaces the env's original
            step = env_io.step(env, action)
            reward, next_obs = self.kept_outcome(step, env_io.tensor)
            if mask is None:
                self.buffer.add(kept_obs, action, reward, next_obs, step.terminated)
            else:
                self.buffer.add(kept_obs, action, reward, next_obs, step.terminated, env_io.final_masks(env))
                mask = env_io.masks(env)
            done = step.terminated | step.truncated
            ended = episode_ended(step)
            if bool(ended.any()):
                returns += step.episode_return[ended].tolist()
                lengths += step.episode_length[ended].tolist()
            obs = step.obs
            self.num_timesteps += env.num_envs
            self.after_env_step(done)
        return returns, lengths, obs

    def learn(self, env, obs: torch.Tensor, returns: list[float], lengths: list[int]) -> Iteration:
        """`gradient_steps` calls of `train_step` once more than `learning_starts` env steps are in the buffer (SB3's
        `num_timesteps > learning_starts`: with learning_starts a multiple of train_freq, the first learning phase
        follows the first iteration that acted on the policy)."""
        config = self.config
        stats: dict[str, float] = {}
        if self.num_timesteps > config.learning_starts:
            totals: dict[str, torch.Tensor] = {}
            for _ in range(config.gradient_steps):
                for key, value in self.train_step().items():
                    totals[key] = totals.get(key, 0.0) + value
            stats = {key: float(total) / config.gradient_steps for key, total in totals.items()} | self.extra_stats()
        return Iteration(obs, self.iteration_steps(env.num_envs), returns, lengths, stats)

    def after_env_step(self, done) -> None:
        """Hook run after every vec-env step, with which envs finished an episode (a bool tensor or array):
        HER's buffer closes their episodes; DQN also moves epsilon and copies its target net here, TD3 restarts a
        finished env's noise process."""
        if isinstance(self.buffer, HerReplayBuffer):
            self.buffer.close_episodes(done)

    def episodes_restarted(self) -> None:
        """HER's buffer leaves the interrupted episodes unsampled and starts new ones."""
        if isinstance(self.buffer, HerReplayBuffer):
            self.buffer.restart_episodes()

    def extra_stats(self) -> dict[str, float]:
        """Values to log once per iteration besides the losses (DQN's epsilon)."""
        return {}


def uniform_allowed(v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per row, the k-th allowed action with k = floor(v * number allowed), v ~ U[0, 1): each allowed action
    equally likely."""
    count = mask.sum(1)
    k = (v * count).long().clamp_(max=count - 1)
    return (((mask.cumsum(1) - 1) == k.unsqueeze(1)) & mask).long().argmax(1)


def polyak(target: FlatParameters, source: FlatParameters, tau: float) -> None:
    """target <- tau * source + (1 - tau) * target, in place: one op on the flat buffers of two nets of
    the same architecture (the target is a copy of the source)."""
    with torch.no_grad():
        target.flat.lerp_(source.flat, tau)
