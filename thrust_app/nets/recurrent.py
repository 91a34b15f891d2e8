"""The recurrent actor-critic of recurrent PPO (sb3-contrib's RecurrentActorCriticPolicy): observation
features -> LSTM or GRU -> policy and value MLPs -> heads.

The critic reads the features through an RNN of its own (`critic_rnn="separate"`, sb3-contrib's
enable_critic_lstm), the actor's RNN output with its gradient stopped (`"shared"`, shared_lstm), or a
linear layer and no memory (`"none"`).

Memory travels as one tensor, `state`, of shape (parts, layers, N, hidden): the actor's (h, c) for an
LSTM (h for a GRU), then the critic's where it has its own RNN. An episode's memory starts at zero:
`starts` (1.0 where a step is an episode's first) clears it before that step. What acting, evaluation
and export see is the actor's part alone, batch first and flat: `act(obs, mask, state=(N, state_size))`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import nn

from ..envs.core import Box, Discrete, MultiDiscrete
from .flat_params import FlatParameters
from .policies import ActionHead, front_encoder, image_encoder, is_image, masked, mlp, orthogonal_init

RNN_TYPES = {"lstm": nn.LSTM, "gru": nn.GRU}
CRITIC_RNN = ("separate", "shared", "none")


class Sequences(NamedTuple):
    """What a recurrent net learns from: T steps of B env sequences and the memory they started with."""

    obs: torch.Tensor  #: (T, B, *obs_shape)
    starts: torch.Tensor  #: (T, B) 1.0 where the step is an episode's first: the memory is cleared before it
    state: torch.Tensor  #: (parts, layers, B, hidden) the memory before step 0


def episode_cuts(starts: torch.Tensor) -> list[int]:
    """The step indices 0 = t_0 < t_1 < ... < T at which some sequence starts an episode: between two cuts no
    memory is cleared, so the RNN runs those steps as one call."""
    inner = torch.nonzero(starts[1:].any(-1)).flatten() + 1
    return [0, *inner.tolist(), starts.shape[0]]


def clear_ended(state: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
    """`state` with the memory of the sequences that start an episode (`starts` 1.0, shape (B,)) set to zero."""
    return state * (1.0 - starts).view(1, 1, -1, 1)


def init_like_sb3(net: RecurrentActorCritic) -> None:
    """SB3's orthogonal initialisation: gain sqrt(2) for the extractor and the MLPs, 0.01 policy head, 1 value head."""
    for module, gain in ((net.encoder, math.sqrt(2)), (net.pi_mlp, math.sqrt(2)), (net.vf_mlp, math.sqrt(2))):
        orthogonal_init(module, gain)
    orthogonal_init(net.pi_head, 0.01)
    orthogonal_init(net.vf_head, 1.0)


class RecurrentActorCritic(ActionHead, FlatParameters):
    """Policy and value with memory, for recurrent PPO; actions as ActionHead describes."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        action_space: Discrete | Box | MultiDiscrete,
        hidden: Sequence[int] = (64, 64),
        activation: str = "tanh",
        log_std_init: float = 0.0,
        *,
        rnn_type: str = "lstm",
        rnn_hidden: int = 256,
        rnn_layers: int = 1,
        critic_rnn: str = "separate",
        ortho_init: bool = True,
        parts: Sequence | None = None,
        vf_hidden: Sequence[int] = (),
        sde_sample_freq: int | None = None,
    ) -> None:
        super().__init__()
        if critic_rnn not in CRITIC_RNN:
            raise ValueError(f"critic_rnn must be one of {', '.join(CRITIC_RNN)}, got {critic_rnn!r}")
        n_out = self.init_action_space(action_space)
        self.rnn_type, self.rnn_hidden, self.rnn_layers, self.critic_rnn = rnn_type, rnn_hidden, rnn_layers, critic_rnn
        self.parts_per_rnn = 2 if rnn_type == "lstm" else 1  #: (h, c) per LSTM, h per GRU
        self.obs_shape = tuple(obs_shape)
        # sb3-contrib's features extractor: NatureCNN (or the small CNN) for images, a flatten for vectors, CNNs per
        # image for a Dict observation with images (`parts`)
        flat = image_encoder(obs_shape) if is_image(obs_shape) else nn.Flatten()
        self.encoder = front_encoder(parts, obs_shape) if parts else flat
        features = self.encoder.out_dim if is_image(obs_shape) or parts else math.prod(obs_shape)
        rnn = RNN_TYPES[rnn_type]
        self.actor_rnn = rnn(features, rnn_hidden, num_layers=rnn_layers)
        self.critic_rnn_net = rnn(features, rnn_hidden, num_layers=rnn_layers) if critic_rnn == "separate" else None
        self.critic_linear = nn.Linear(features, rnn_hidden) if critic_rnn == "none" else None
        self.pi_mlp = mlp([rnn_hidden, *hidden], activation)
        vf_sizes = tuple(vf_hidden) or tuple(hidden)  # the value MLP's own sizes where they differ
        self.vf_mlp = mlp([rnn_hidden, *vf_sizes], activation)
        self.pi_head = nn.Linear(hidden[-1] if hidden else rnn_hidden, n_out)
        self.vf_head = nn.Linear(vf_sizes[-1] if vf_sizes else rnn_hidden, 1)
        if ortho_init:
            init_like_sb3(self)
        self.init_log_std(action_space, n_out, log_std_init, sde_sample_freq)
        self.flatten_parameters()

    @property
    def parts(self) -> int:
        """How many (layers, N, hidden) blocks the whole memory holds: the actor's, then the critic's."""
        return self.parts_per_rnn * (2 if self.critic_rnn_net is not None else 1)

    @property
    def state_size(self) -> int:
        """The width of the actor's memory per env, flat: what evaluation, export and the player carry."""
        return self.parts_per_rnn * self.rnn_layers * self.rnn_hidden

    def initial_state(self, n: int) -> torch.Tensor:
        """The whole memory of `n` envs at an episode's start: zeros."""
        return torch.zeros(self.parts, self.rnn_layers, n, self.rnn_hidden, device=self.pi_head.weight.device)

    def run_rnn(self, rnn: nn.RNNBase, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`rnn` over x (T, B, F) from `state` (parts_per_rnn, layers, B, H); its outputs and final state."""
        out, final = rnn(x, (state[0], state[1]) if self.parts_per_rnn == 2 else state[0])
        return out, torch.stack(final) if self.parts_per_rnn == 2 else final.unsqueeze(0)

    def unroll(
        self, rnn: nn.RNNBase, x: torch.Tensor, starts: torch.Tensor, state: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`rnn` over T steps of B sequences, the memory cleared before each episode's first step: one RNN
        call per stretch of steps in which no sequence starts an episode (sb3-contrib's _process_sequence
        steps one at a time whenever any does)."""
        outputs = []
        for begin, end in itertools.pairwise(episode_cuts(starts)):
            out, state = self.run_rnn(rnn, x[begin:end], clear_ended(state, starts[begin]))
            outputs.append(out)
        return torch.cat(outputs), state

    # -- the two halves ------------------------------------------------------------------------------
    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """Features of (T, B, *obs_shape) observations, (T, B, F)."""
        steps, batch = obs.shape[:2]
        return self.encoder(obs.reshape(steps * batch, *self.obs_shape)).reshape(steps, batch, -1)

    def latents(self, seq: Sequences) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(policy latent, value latent) per step, (T, B, width) each, and the memory after the last step."""
        features = self.encode(seq.obs)
        k = self.parts_per_rnn
        pi_out, pi_state = self.unroll(self.actor_rnn, features, seq.starts, seq.state[:k])
        if self.critic_rnn_net is not None:
            vf_out, vf_state = self.unroll(self.critic_rnn_net, features, seq.starts, seq.state[k:])
            state = torch.cat([pi_state, vf_state])
        else:
            # shared: the critic reads the actor's memory without training it (sb3-contrib's shared_lstm)
            vf_out, state = (pi_out.detach() if self.critic_linear is None else self.critic_linear(features)), pi_state
        return self.pi_mlp(pi_out), self.vf_mlp(vf_out), state

    def evaluate_actions(
        self, seq: Sequences, actions: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per step, flat in (T, B) order: log pi(a|history) of `actions` (T * B, ...), the entropy, and the
        value; differentiable. With an action `mask` (T * B, n) over the allowed actions only."""
        pi_latent, vf_latent, _ = self.latents(seq)
        head_out = masked(self.pi_head(pi_latent.flatten(0, 1)), mask)
        log_prob, entropy = self.log_prob_entropy(head_out, actions, pi_latent.flatten(0, 1))
        return log_prob, entropy, self.vf_head(vf_latent.flatten(0, 1)).squeeze(-1)

    @torch.no_grad()
    def step(
        self, obs: torch.Tensor, starts: torch.Tensor, state: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step of N envs while collecting: a sampled action, its log-probability, the value, and the
        memory after the step."""
        pi_latent, vf_latent, state = self.latents(Sequences(obs.unsqueeze(0), starts.unsqueeze(0), state))
        action, log_prob = self.draw(masked(self.pi_head(pi_latent[0]), mask), pi_latent[0])
        return action, log_prob, self.vf_head(vf_latent[0]).squeeze(-1), state

    @torch.no_grad()
    def value(self, obs: torch.Tensor, starts: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """V of `obs` after the memory `state` (no gradient; the memory is not advanced)."""
        return self.vf_head(self.latents(Sequences(obs.unsqueeze(0), starts.unsqueeze(0), state))[1][0]).squeeze(-1)

    # -- acting: the actor's memory only, batch first ----------------------------------------------------
    def act(self, obs: torch.Tensor, mask: torch.Tensor | None = None, *, state: torch.Tensor):
        """The deterministic policy one step on: (logits, action, next state) for discrete actions, (action,
        next state) for Box ones; `state` (N, state_size) is the actor's memory, zeros at an episode's start.
        The RNN step is written out (`rnn_step`): what an exported graph holds is plain matmuls and gates."""
        head_out, next_state = self.actor_step(obs, state)
        greedy = self.greedy(head_out, mask)
        return (*greedy, next_state) if isinstance(greedy, tuple) else (greedy, next_state)

    def actor_step(self, obs: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy head's output for `obs` after the actor's memory `state` (N, state_size), and the memory after."""
        memory = state.reshape(-1, self.parts_per_rnn, self.rnn_layers, self.rnn_hidden).permute(1, 2, 0, 3)
        out, memory = self.rnn_step(self.actor_rnn, self.encoder(obs), memory)
        return self.pi_head(self.pi_mlp(out)), memory.permute(2, 0, 1, 3).reshape(-1, self.state_size)

    def rnn_step(self, rnn: nn.RNNBase, x: torch.Tensor, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step of `rnn` on x (N, F) from `memory` (parts_per_rnn, layers, N, H), layer by layer with
        torch's gate layout (equal to `run_rnn` on one step; tests/nets/test_recurrent.py)."""
        sigmoid, tanh = torch.sigmoid, torch.tanh
        hs, cs = [], []
        for layer in range(self.rnn_layers):
            w_ih, b_ih = getattr(rnn, f"weight_ih_l{layer}"), getattr(rnn, f"bias_ih_l{layer}")
            w_hh, b_hh = getattr(rnn, f"weight_hh_l{layer}"), getattr(rnn, f"bias_hh_l{layer}")
            h = memory[0, layer]
            if self.parts_per_rnn == 2:  # LSTM: gates i, f, g, o from W_i x + b_i + W_h h + b_h
                i, f, g, o = (nn.functional.linear(x, w_ih, b_ih) + nn.functional.linear(h, w_hh, b_hh)).chunk(4, -1)
                c = sigmoid(f) * memory[1, layer] + sigmoid(i) * tanh(g)  # c' = s(f) c + s(i) tanh(g)
                h = sigmoid(o) * tanh(c)  # h' = s(o) tanh(c')
                cs.append(c)
            else:  # GRU: gates r, z, n
                r_x, z_x, n_x = nn.functional.linear(x, w_ih, b_ih).chunk(3, -1)
                r_h, z_h, n_h = nn.functional.linear(h, w_hh, b_hh).chunk(3, -1)
                r, z = sigmoid(r_x + r_h), sigmoid(z_x + z_h)
                n = tanh(n_x + r * n_h)  # n = tanh(W_in x + b_in + r (W_hn h + b_hn))
                h = (1 - z) * n + z * h  # h' = (1 - z) n + z h
            hs.append(h)
            x = h
        return x, torch.stack([torch.stack(hs), torch.stack(cs)]) if cs else torch.stack(hs).unsqueeze(0)
