"""The frame-sharing replay buffer samples exactly what a buffer storing every obs and next obs samples,
across episode ends, padded first stacks and the ring's wrap-around, in a fraction of the memory."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from thrust_app.algos.frame_replay import FrameSharingReplay
from thrust_app.algos.replay import ReplayBuffer

K, FRAME = 4, (3, 2)


class StackedStreams:
    """N envs whose observations are stacks of the last K random frames, with episodes of random lengths. An
    episode starts from K distinct frames: whatever the padding (gymnasium repeats the first frame, SB3's
    VecFrameStack puts zeros), the buffer must give back the stack it was given."""

    def __init__(self, n: int, rng: np.random.Generator) -> None:
        self.n, self.rng = n, rng
        self.obs = np.stack([self.fresh() for _ in range(n)])

    def fresh(self) -> np.ndarray:
        return self.rng.integers(0, 256, (K, *FRAME), dtype=np.uint8)

    def step(self) -> tuple[np.ndarray, ...]:
        frames = self.rng.integers(0, 256, (self.n, 1, *FRAME), dtype=np.uint8)
        final = np.concatenate([self.obs[:, 1:], frames], axis=1)
        terminated = self.rng.random(self.n) < 0.15
        truncated = ~terminated & (self.rng.random(self.n) < 0.1)
        obs, self.obs = self.obs, final.copy()
        for env in np.flatnonzero(terminated | truncated):
            self.obs[env] = self.fresh()
        actions = self.rng.integers(0, 6, self.n)
        rewards = self.rng.standard_normal(self.n).astype(np.float32)
        return obs, actions, rewards, final, terminated


@pytest.mark.parametrize(("n_envs", "capacity"), [(1, 7), (3, 12), (2, 5)])
def test_samples_equal_a_buffer_that_stores_every_stack(n_envs, capacity):
    streams = StackedStreams(n_envs, np.random.default_rng(n_envs))
    shared = FrameSharingReplay(capacity, (K, *FRAME), (), torch.int64, torch.device("cpu"), torch.uint8, n_envs)
    naive = ReplayBuffer(shared.capacity, (K, *FRAME), (), torch.int64, torch.device("cpu"), torch.uint8)
    for add in range(60):  # several laps of the ring
        obs, actions, rewards, final, terminated = streams.step()
        shared.add_arrays(obs, actions, rewards, final, terminated)
        naive.add_arrays(obs, actions, rewards, final, terminated)
        assert shared.size == naive.size
        got = shared.sample(32, torch.Generator().manual_seed(add))
        want = naive.sample(32, torch.Generator().manual_seed(add))
        for name, a, b in zip(("obs", "action", "reward", "next obs", "terminated"), got, want, strict=True):
            assert torch.equal(a, b), f"{name} differs after add {add}"


def test_a_stream_that_breaks_without_an_episode_end_keeps_its_next_obs_whole():
    """A next obs is rebuilt from the following step only while that step continues it; when it does
    not (an env reset between adds), the buffer keeps the next obs it was given."""
    rng = np.random.default_rng(0)
    shared = FrameSharingReplay(10, (K, *FRAME), (), torch.int64, torch.device("cpu"), torch.uint8, 1)
    naive = ReplayBuffer(10, (K, *FRAME), (), torch.int64, torch.device("cpu"), torch.uint8)
    streams = StackedStreams(1, rng)
    for add in range(8):
        obs, actions, rewards, final, _ = streams.step()
        no_end = np.zeros(1, dtype=bool)
        if add == 4:
            streams.obs = np.stack([streams.fresh()])  # the stream restarts although no end was reported
        for buffer in (shared, naive):
            buffer.add_arrays(obs, actions, rewards, final, no_end)
    got, want = shared.sample(64, torch.Generator().manual_seed(1)), naive.sample(64, torch.Generator().manual_seed(1))
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))


def test_stores_one_frame_per_transition_and_round_trips_through_a_checkpoint():
    streams = StackedStreams(2, np.random.default_rng(3))
    shared = FrameSharingReplay(20, (K, *FRAME), (), torch.int64, torch.device("cpu"), torch.uint8, 2)
    for _ in range(15):
        shared.add_arrays(*streams.step())
    frame_bytes = np.prod(FRAME)
    assert shared.frames.nbytes == (shared.slots + K) * 2 * frame_bytes  # vs 2 * K frames per transition
    copy = FrameSharingReplay(20, (K, *FRAME), (), torch.int64, torch.device("cpu"), torch.uint8, 2)
    saved = io.BytesIO()
    torch.save(shared.state_dict(), saved)  # as a checkpoint holds it: tensors and plain values only
    copy.load_state_dict(torch.load(io.BytesIO(saved.getvalue()), weights_only=True))
    for _ in range(5):  # the copy continues exactly as the original does
        step = streams.step()
        shared.add_arrays(*step)
        copy.add_arrays(*step)
    got, want = copy.sample(50, torch.Generator().manual_seed(2)), shared.sample(50, torch.Generator().manual_seed(2))
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))


def test_refuses_a_batch_of_the_wrong_env_count():
    shared = FrameSharingReplay(8, (K, *FRAME), (), torch.int64, torch.device("cpu"), torch.uint8, 2)
    obs = np.zeros((3, K, *FRAME), dtype=np.uint8)
    with pytest.raises(ValueError, match="takes 2 transitions per add"):
        shared.add_arrays(obs, np.zeros(3), np.zeros(3), obs, np.zeros(3))
