"""Recurrent PPO: PPO with an LSTM or GRU policy and value (sb3-contrib's RecurrentPPO), for envs whose
observation does not tell the whole state (a velocity hidden, a cue shown once).

What changes from PPO: the net carries a memory from step to step (nets/recurrent.py), cleared at every
episode's start, and carried from one rollout into the next. The rollout keeps the memory each env had
before each step, so an update replays sequences: every env's n_steps are cut into chunks of
`sequence_length` steps (the largest divisor of n_steps that fits a minibatch), each chunk starts from the
memory the env had there, and a minibatch is batch_size // sequence_length whole chunks in a random order.
Inside a chunk the memory is cleared at episode starts exactly as while collecting, so at the same
weights an update recomputes the log-probabilities and values the rollout recorded (tests/algos/
test_recurrent_ppo.py). The loss is PPO's own.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import torch

from ..config import param
from ..nets.recurrent import RecurrentActorCritic, Sequences
from .ppo import PPO, Minibatch, PPOConfig
from .rollout import CollectedSteps, Rollout, collect_steps, make_rollout


@dataclass
class RecurrentPPOConfig(PPOConfig):
    """sb3-contrib's RecurrentPPO and its MlpLstmPolicy defaults (lstm_hidden_size 256, one layer, the critic
    with an LSTM of its own)."""

    batch_size: int = param(128, "steps per minibatch, in whole chunks of sequence_length steps (sb3-contrib's 128)", ge=1)
    rnn_type: Literal["lstm", "gru"] = param("lstm", "the memory: an LSTM (sb3-contrib's) or a GRU")
    lstm_hidden_size: int = param(256, "units of each RNN layer (sb3-contrib's name; a GRU's too)", ge=1)
    n_lstm_layers: int = param(1, "stacked RNN layers", ge=1)
    critic_rnn: Literal["separate", "shared", "none"] = param(
        "separate",
        "the critic's memory: an RNN of its own (sb3-contrib's enable_critic_lstm=True), the actor's without "
        "training it (shared_lstm=True), or none, a linear layer (both False)",
    )
    acting: Literal["numpy", "torch"] = param(
        "torch", "how the policy acts while collecting: torch (the only form for memory)"
    )
    update: Literal["handwritten", "reference"] = param("reference", "autograd (the only update for memory)")


class RolloutMemory:
    """The recurrent net as a rollout sees it: `sample` and `value` as ActorCritic's, with every env's memory
    carried from step to step (and from one rollout to the next) and recorded before each step."""

    def __init__(self, net: RecurrentActorCritic, n_envs: int) -> None:
        self.net = net
        self.state = net.initial_state(n_envs)
        self.starts = torch.ones(n_envs, device=self.state.device)  #: the first step of a run starts an episode
        self.recorded_starts: list[torch.Tensor] = []
        self.recorded_states: list[torch.Tensor] = []

    def sample(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        self.recorded_starts.append(self.starts)
        self.recorded_states.append(self.state)
        action, log_prob, value, self.state = self.net.step(obs, self.starts, self.state, mask)
        self.starts = torch.zeros_like(self.starts)
        return action, log_prob, value

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """V(obs) after the memory as it is now: a truncated episode's final observation after its last step,
        or the next rollout's first observation (cleared where it starts an episode)."""
        return self.net.value(obs, self.starts, self.state)

    def env_action(self, action: torch.Tensor) -> torch.Tensor:
        return self.net.env_action(action)

    def resample_noise(self, step: int, n_envs: int) -> None:
        self.net.resample_noise(step, n_envs)

    def episodes_ended(self, done: torch.Tensor) -> None:
        """The envs whose episode just ended start a new one at the next step."""
        self.starts = done.float()

    def take_records(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(T, N) episode starts and (T, parts, layers, N, hidden) memories recorded since the last call."""
        starts, states = torch.stack(self.recorded_starts), torch.stack(self.recorded_states)
        self.recorded_starts, self.recorded_states = [], []
        return starts, states


def sequence_length(n_steps: int, batch_size: int) -> int:
    """The chunk an env's rollout is cut into: the largest divisor of n_steps no longer than batch_size."""
    return max(length for length in range(1, min(n_steps, batch_size) + 1) if n_steps % length == 0)


def as_chunks(values: torch.Tensor, length: int) -> torch.Tensor:
    """(T, N, ...) steps as (length, T // length * N, ...): column c * N + n is env n's chunk c."""
    steps, n_envs, *rest = values.shape
    return values.reshape(steps // length, length, n_envs, *rest).transpose(0, 1).reshape(length, -1, *rest)


def chunk_states(states: torch.Tensor, length: int) -> torch.Tensor:
    """(T, parts, layers, N, hidden) memories as each chunk's first: (parts, layers, T // length * N, hidden)."""
    first = states[::length]  # (chunks, parts, layers, N, hidden)
    return first.permute(1, 2, 0, 3, 4).flatten(2, 3)


class RecurrentPPO(PPO):
    name = "recurrent_ppo"
    Config = RecurrentPPOConfig
    config: RecurrentPPOConfig
    net: RecurrentActorCritic

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        #: every env's memory while collecting; made at the first rollout (it needs the env count)
        self.memory: RolloutMemory | None = None

    def make_net(self) -> RecurrentActorCritic:
        config = self.config
        return RecurrentActorCritic(
            self.obs_shape,
            self.action_space,
            config.hidden,
            config.activation,
            config.log_std_init,
            rnn_type=config.rnn_type,
            rnn_hidden=config.lstm_hidden_size,
            rnn_layers=config.n_lstm_layers,
            critic_rnn=config.critic_rnn,
            ortho_init=config.ortho_init,
            parts=self.obs_parts,
            vf_hidden=config.vf_hidden,
            sde_sample_freq=config.sde(),
        )

    def collect(self, env, env_io, obs) -> tuple[Rollout, torch.Tensor]:
        """PPO's rollout, with each step's episode starts and memories."""
        steps, last_values, obs = self.collect_steps((env, env_io, obs))
        starts, states = self.memory.take_records()
        rollout = make_rollout(steps, last_values)
        rollout.starts, rollout.states = starts, states
        return rollout, obs

    def collect_steps(self, inputs: tuple) -> CollectedSteps:
        env, env_io, obs = inputs
        if self.memory is None or self.memory.state.shape[2] != env.num_envs:
            self.memory = RolloutMemory(self.net, env.num_envs)
        return collect_steps(env, env_io, obs, self.memory, self.config.n_steps, self.config.gamma)

    def minibatches(
        self, rollout: Rollout, advantages: torch.Tensor, returns: torch.Tensor
    ) -> Iterator[tuple[tuple, torch.Tensor | None]]:
        """One epoch: the rollout's chunks in a random order, as Sequences with the actions, old log-probs, old
        values, advantages and returns flat in (step, chunk) order; and their action masks (None without)."""
        length = sequence_length(self.config.n_steps, self.config.batch_size)
        obs, starts, actions = (as_chunks(v, length) for v in (rollout.obs, rollout.starts, rollout.actions))
        samples = Minibatch(*(as_chunks(v, length) for v in (rollout.log_probs, rollout.values, advantages, returns)))
        masks = None if rollout.masks is None else as_chunks(rollout.masks, length)
        states = chunk_states(rollout.states, length)
        n_chunks = obs.shape[1]
        per_batch = max(1, self.config.batch_size // length)
        order = torch.randperm(n_chunks, generator=self.generator, device=obs.device)
        for begin in range(0, n_chunks, per_batch):
            chunks = order[begin : begin + per_batch]
            sequences = Sequences(obs[:, chunks], starts[:, chunks], states[:, :, chunks])
            flat = tuple(values[:, chunks].flatten(0, 1) for values in (actions, *samples))
            yield (sequences, *flat), None if masks is None else masks[:, chunks].flatten(0, 1)

    def state_dict(self) -> dict:
        """PPO's state and every env's memory now, so that a resumed run goes on mid-episode as it was."""
        state = super().state_dict()
        if self.memory is not None:
            state["memory"] = {"state": self.memory.state, "starts": self.memory.starts}
        return state

    def episodes_restarted(self) -> None:
        self.memory = None  # made again at the next rollout: zeros, every env starting an episode

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        saved = state.get("memory")
        if saved is not None:
            self.memory = RolloutMemory(self.net, saved["state"].shape[2])
            self.memory.state, self.memory.starts = saved["state"].to(self.device), saved["starts"].to(self.device)
