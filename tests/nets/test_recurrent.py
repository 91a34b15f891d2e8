"""The recurrent actor-critic: its written-out step equals torch's RNN, unrolling clears the memory exactly at
episode starts, the shared critic does not train the actor's memory, and acting carries the memory."""

from __future__ import annotations

import pytest
import torch

from thrust_app.envs.core import Box, Discrete
from thrust_app.nets.recurrent import RecurrentActorCritic, Sequences, clear_ended, episode_cuts


def make_net(rnn_type="lstm", layers=1, critic_rnn="separate", space=None) -> RecurrentActorCritic:
    space = space or Discrete(3)
    torch.manual_seed(0)
    return RecurrentActorCritic(
        (5,), space, (16,), "tanh", rnn_type=rnn_type, rnn_hidden=8, rnn_layers=layers, critic_rnn=critic_rnn
    )


@pytest.mark.parametrize("rnn_type", ["lstm", "gru"])
@pytest.mark.parametrize("layers", [1, 2])
def test_the_written_out_step_equals_torchs_rnn(rnn_type, layers):
    net = make_net(rnn_type, layers)
    x, memory = torch.randn(6, 5), torch.randn(net.parts_per_rnn, layers, 6, 8)
    want_out, want_memory = net.run_rnn(net.actor_rnn, x.unsqueeze(0), memory)
    out, got_memory = net.rnn_step(net.actor_rnn, x, memory)
    torch.testing.assert_close(out, want_out[0], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(got_memory, want_memory, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("rnn_type", ["lstm", "gru"])
def test_unrolling_clears_the_memory_exactly_at_episode_starts(rnn_type):
    """The stretches between episode starts run as one RNN call each; a step-at-a-time loop that clears the
    memory where `starts` says is the reference."""
    net = make_net(rnn_type)
    steps, batch = 12, 4
    x = torch.randn(steps, batch, 5)
    starts = torch.zeros(steps, batch)
    starts[0, 1] = starts[3, 0] = starts[3, 2] = starts[7, 3] = starts[11, 1] = 1.0
    state = torch.randn(net.parts_per_rnn, 1, batch, 8)
    assert episode_cuts(starts) == [0, 3, 7, 11, 12]
    got, got_final = net.unroll(net.actor_rnn, x, starts, state)
    want, memory = [], state
    for t in range(steps):
        out, memory = net.run_rnn(net.actor_rnn, x[t : t + 1], clear_ended(memory, starts[t]))
        want.append(out[0])
    torch.testing.assert_close(got, torch.stack(want), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(got_final, memory, atol=1e-6, rtol=1e-5)
    # and the memory matters: without the clears the outputs differ
    unclear, _ = net.run_rnn(net.actor_rnn, x, state)
    assert not torch.allclose(unclear[4:], got[4:], atol=1e-3)


def test_a_shared_critic_reads_the_actors_memory_without_training_it():
    net = make_net(critic_rnn="shared")
    seq = Sequences(torch.randn(4, 2, 5), torch.zeros(4, 2), net.initial_state(2))
    _, _, value = net.evaluate_actions(seq, torch.zeros(8, dtype=torch.long))
    net.zero_grad()
    value.sum().backward()
    assert all(float(p.grad.abs().sum()) == 0 for p in net.actor_rnn.parameters())
    assert float(net.vf_head.weight.grad.abs().sum()) > 0
    assert net.initial_state(2).shape == (2, 1, 2, 8)  # the actor's (h, c) only


@pytest.mark.parametrize("critic_rnn", ["separate", "shared", "none"])
@pytest.mark.parametrize("space", [Discrete(3), Box((-2.0,), (2.0,), (1,))], ids=["discrete", "box"])
def test_acting_step_by_step_equals_the_sequence_forward(critic_rnn, space):
    """`act` carries the actor's memory (batch first, flat) one step at a time; its scores equal the policy head
    over the whole sequence, memory cleared at the episode start in between."""
    net = make_net(critic_rnn=critic_rnn, space=space)
    steps, batch = 6, 3
    obs, starts = torch.randn(steps, batch, 5), torch.zeros(steps, batch)
    starts[0] = 1.0
    starts[4, 1] = 1.0
    pi_latent, _, _ = net.latents(Sequences(obs, starts, net.initial_state(batch)))
    state = torch.zeros(batch, net.state_size)
    for t in range(steps):
        state = state * (1 - starts[t]).unsqueeze(-1)
        *out, state = net.act(obs[t], state=state)
        want = net.greedy(net.pi_head(pi_latent[t]))
        torch.testing.assert_close(out[0], want[0] if isinstance(want, tuple) else want, atol=1e-5, rtol=1e-5)
