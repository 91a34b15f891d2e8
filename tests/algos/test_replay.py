"""The replay buffer: a ring of the newest `capacity` transitions, written as slices, sampled uniformly."""

from __future__ import annotations

import torch

from thrust_app.algos.replay import ReplayBuffer


def batch(start: int, n: int) -> tuple[torch.Tensor, ...]:
    """n transitions whose every field encodes its number, so positions can be checked."""
    number = torch.arange(start, start + n, dtype=torch.float32)
    return number[:, None].repeat(1, 3), number.long(), number, -number[:, None].repeat(1, 3), number % 2 == 0


def reference_ring(capacity: int, written: int) -> torch.Tensor:
    """Transition numbers a ring of `capacity` holds per slot after `written` transitions (index i % capacity)."""
    slots = torch.full((capacity,), -1.0)
    for number in range(written):
        slots[number % capacity] = number
    return slots


def test_writes_wrap_around_like_a_ring_of_the_newest_transitions():
    buffer = ReplayBuffer(7, (3,), (), torch.int64, torch.device("cpu"))
    written = 0
    for n in (1, 4, 3, 5, 1, 9, 2):  # single rows, writes that wrap, and one larger than the buffer
        buffer.add(*batch(written, n))
        written += n
        expected = reference_ring(7, written)
        filled = expected >= 0
        assert buffer.size == min(written, 7) and buffer.pos == written % 7
        assert torch.equal(buffer.rewards[filled], expected[filled])
        assert torch.equal(buffer.actions[filled], expected[filled].long())
        assert torch.equal(buffer.obs[filled], expected[filled][:, None].repeat(1, 3))
        assert torch.equal(buffer.next_obs[filled], -expected[filled][:, None].repeat(1, 3))
        assert torch.equal(buffer.terminated[filled], (expected[filled] % 2 == 0).float())


def test_samples_come_from_the_filled_part_and_round_trip_through_state_dict():
    buffer = ReplayBuffer(100, (3,), (), torch.int64, torch.device("cpu"))
    buffer.add(*batch(0, 10))
    obs, actions, rewards, next_obs, _ = buffer.sample(256, torch.Generator().manual_seed(0))
    assert obs.shape == (256, 3) and rewards.max() <= 9 and rewards.min() >= 0
    assert torch.equal(actions.float(), rewards) and torch.equal(next_obs[:, 0], -rewards)
    copy = ReplayBuffer(100, (3,), (), torch.int64, torch.device("cpu"))
    copy.load_state_dict(buffer.state_dict())
    assert (copy.pos, copy.size) == (10, 10) and torch.equal(copy.obs, buffer.obs)


def test_next_masks_are_kept_sampled_with_their_transitions_and_round_trip():
    buffer = ReplayBuffer(5, (3,), (), torch.int64, torch.device("cpu"))
    for start in range(0, 8, 2):  # two per add, wrapping around the ring
        obs, actions, rewards, next_obs, terminated = batch(start, 2)
        masks = torch.stack([torch.arange(4) <= number % 4 for number in range(start, start + 2)])
        buffer.add(obs, actions, rewards, next_obs, terminated, masks)
    *_, rewards, _, _, masks = buffer.sample(64, torch.Generator().manual_seed(0))
    assert torch.equal(masks.sum(1), rewards.long() % 4 + 1)  # each mask stayed with its transition
    copy = ReplayBuffer(5, (3,), (), torch.int64, torch.device("cpu"))
    copy.load_state_dict(buffer.state_dict())
    assert torch.equal(copy.next_masks, buffer.next_masks)
