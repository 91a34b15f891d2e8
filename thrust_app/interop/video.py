"""One episode of a trained policy as a video (mp4 or webm), for the dashboard's Watch tab and
`benches/watch_render.py`. Frames go straight to ffmpeg (imageio-ffmpeg's bundled binary) as the
episode plays, so an episode of any length costs no memory for its frames."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..envs import make_env
from ..envs.pipeline import Pipeline
from ..envs.vec import env_action_mask, has_mask_method

#: Container -> (ffmpeg codec, extra output options, MIME type). x264 "ultrafast" and VP9 "realtime"
#: trade file size for speed: these are short clips of flat-coloured frames.
FORMATS = {
    "mp4": ("libx264", ["-preset", "ultrafast"], "video/mp4"),
    "webm": ("libvpx-vp9", ["-deadline", "realtime", "-cpu-used", "8"], "video/webm"),
}


@dataclass
class Recording:
    video: bytes
    mime: str
    episode_return: float
    steps: int
    seconds: float  #: wall time to play, render and encode the episode


def record_episode(
    act: Callable[[np.ndarray], np.ndarray],
    env_id: str,
    seed: int,
    video_format: str = "mp4",
    fps: int | None = None,
    pipeline: Pipeline | None = None,
) -> Recording:
    """Play one deterministic episode with `act` (as `evaluate` calls it: memory carried), encoding every frame.
    The policy sees the env through its observation `pipeline`; the video shows the env's own frames (an Atari
    game in colour at full size, not the 84 x 84 grey stack the policy reads)."""
    import imageio_ffmpeg

    codec, options, mime = FORMATS[video_format]
    started = time.perf_counter()
    env = make_env(env_id, pipeline, render_mode="rgb_array")
    if fps is None and pipeline is not None and pipeline.wrapper == "atari":
        fps = 60 // 4  # the emulator's 60 frames a second, 4 of them per agent step: the game's own speed
    fps = fps or env.metadata.get("render_fps", 30)
    obs, info = env.reset(seed=seed)
    method = has_mask_method(env)
    mask = env_action_mask(env, info, method)
    memory = np.zeros((1, getattr(act, "state_size", 0)), np.float32)  # a recurrent policy's, zeros at the start
    frame = video_frame(env.render())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"episode.{video_format}"
        writer = imageio_ffmpeg.write_frames(
            str(path),
            (frame.shape[1], frame.shape[0]),
            fps=fps,
            codec=codec,
            macro_block_size=2,
            output_params=options,
            ffmpeg_log_level="error",
        )
        writer.send(None)  # start ffmpeg
        writer.send(frame)
        total, steps, done = 0.0, 0, False
        while not done:
            action, memory = policy_step(act, obs, mask, memory)
            obs, reward, terminated, truncated, info = env.step(action if action.ndim else action.item())
            mask = env_action_mask(env, info, method)
            total += float(reward)
            steps += 1
            done = terminated or truncated
            writer.send(video_frame(env.render()))
        writer.close()
        env.close()
        video = path.read_bytes()
    return Recording(video, mime, total, steps, time.perf_counter() - started)


def policy_step(act: Callable, obs: np.ndarray, mask: np.ndarray | None, memory: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The policy's action for one observation (among the allowed ones, under a mask) and its memory after it (a
    policy without memory keeps an empty one)."""
    batch = obs[None] if obs.dtype == np.uint8 else obs[None].astype(np.float32)
    masks = None if mask is None else mask[None]
    if memory.shape[1]:
        action, memory = act(batch, masks, memory)
    else:
        action = act(batch) if masks is None else act(batch, masks)
    return np.asarray(action)[0], memory


#: Frames smaller than this (MinAtar's 10 x 10 grid) are enlarged, cell by cell, to at least this size.
MIN_VIDEO_SIDE = 160


def video_frame(frame: np.ndarray) -> np.ndarray:
    """An env's rendered frame as the video's: bytes (a float frame in [0, 1] scaled), and a small grid
    enlarged by whole pixels so each cell stays sharp."""
    if frame.dtype != np.uint8:
        frame = (np.clip(frame, 0.0, 1.0) * 255).astype(np.uint8)
    factor = -(-MIN_VIDEO_SIDE // min(frame.shape[:2]))
    return np.repeat(np.repeat(frame, factor, axis=0), factor, axis=1) if factor > 1 else frame


def run_policy(run_dir: Path):
    """(env id, act function, observation pipeline) of a run's trained deterministic policy."""
    from ..algos.base import NumpyPolicy
    from ..training.trainer import load_policy

    spec, policy = load_policy(run_dir)
    return spec.env, NumpyPolicy(policy), Pipeline.of(spec.config)
