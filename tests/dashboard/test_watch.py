"""Watch: an episode of a policy becomes a video of every frame, in mp4 or webm."""

from __future__ import annotations

import numpy as np
import pytest

from thrust_app.interop.video import record_episode


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


@pytest.mark.parametrize(
    ("env_id", "pipeline", "size", "fps"),
    [("ALE/Pong-v5", ("atari", 4), (160, 210), 15), ("MinAtar/Breakout-v1", ("minatar", 1), (160, 160), None)],
)
def test_an_image_policy_plays_in_its_pipeline_and_the_video_shows_the_game(env_id, pipeline, size, fps, tmp_path):
    """The policy reads the frames training saw (Atari: 4 x 84 x 84 bytes); the video shows the game's own
    frames in colour at full size, at the game's speed (an Atari step is 4 emulator frames of 60 per s);
    MinAtar's 10 x 10 grid is enlarged cell by cell."""
    import imageio_ffmpeg

    from thrust_app.envs.pipeline import Pipeline

    seen = []

    def act(obs: np.ndarray) -> np.ndarray:
        seen.append((obs.shape, obs.dtype))
        return np.array([len(seen) % 3])

    recording = record_episode(act, env_id, seed=0, pipeline=Pipeline(*pipeline))
    assert recording.steps == len(seen) > 0
    expected = (1, 4, 84, 84) if pipeline[0] == "atari" else (1, 4, 10, 10)
    assert seen[0] == (expected, np.uint8 if pipeline[0] == "atari" else np.float32)
    path = tmp_path / "episode.mp4"
    path.write_bytes(recording.video)
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    assert tuple(meta["size"]) == size
    if fps is not None:
        assert meta["fps"] == fps


def test_a_recurrent_policy_plays_with_its_memory_carried():
    """The reference recurrent bundle's policy: the video's episode is the one `evaluate` plays (memory carried,
    zeros at the start), the pole balanced with its velocities hidden."""
    from thrust_app.interop.bundle import OnnxPolicy, load_bundle
    from thrust_app.training.evaluation import evaluate
    from thrust_app.web.server import REFERENCE_DIR

    policy = OnnxPolicy(load_bundle(REFERENCE_DIR / "cartpole-novel-recurrent_ppo"))
    recording = record_episode(policy, "cartpole-novel", seed=4)
    assert recording.episode_return == evaluate(policy, "cartpole-novel", episodes=1, seed=4).returns[0] >= 400


def test_the_watch_tab_renders_an_episode_of_a_trained_run(tmp_path, monkeypatch):
    """The dashboard's Watch tab (dashboard/watch_tab.py): pick a run, Render episode, the video shows."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from thrust_app.training.trainer import train

    monkeypatch.setenv("THRUST_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("THRUST_PLAYER_PORT", "0")
    train("ppo", "cartpole", timesteps=512, run_dir=tmp_path / "runs" / "watched", progress=False, log=lambda _: None)
    app = str(Path(__file__).resolve().parents[2] / "thrust_app" / "dashboard" / "app.py")
    at = AppTest.from_file(app, default_timeout=120).run()
    at.button(key="watch").click().run()
    assert not at.exception
    caption = next(c.value for c in at.caption if c.value.startswith("seed 0: return"))
    assert "steps (played and encoded in" in caption
    assert at.get("video"), "no video element"
