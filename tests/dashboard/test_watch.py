"""Watch: an episode of a policy becomes a video of every frame, in mp4 or webm."""

from __future__ import annotations

import numpy as np
import pytest

from thrust_app.dashboard.watch import record_episode


def balance(obs: np.ndarray) -> np.ndarray:
    return np.array([int(obs[0][2] + 0.5 * obs[0][3] > 0)])


@pytest.mark.parametrize("video_format, magic", [("mp4", b"ftyp"), ("webm", b"\x1a\x45\xdf\xa3")])
def test_a_whole_episode_becomes_a_video_with_every_frame(video_format, magic, tmp_path):
    import imageio_ffmpeg

    recording = record_episode(balance, "cartpole", seed=0, video_format=video_format)
    assert recording.steps == 500 and recording.episode_return == 500.0  # longer than the old 400-frame cap
    assert magic in recording.video[:64]
    path = tmp_path / f"episode.{video_format}"
    path.write_bytes(recording.video)
    frames, seconds = imageio_ffmpeg.count_frames_and_secs(str(path))
    assert frames == recording.steps + 1 and seconds == pytest.approx(501 / 50, abs=0.1)
