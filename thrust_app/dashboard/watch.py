"""Frames of one episode of a trained policy, for the dashboard's "Watch" tab (all four Thrust envs)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..envs import make_env


@dataclass
class Recording:
    frames: list[np.ndarray]
    episode_return: float
    steps: int

    def gif(self, fps: int = 20) -> bytes:
        """The frames as a looping animated GIF."""
        from PIL import Image

        images = [Image.fromarray(f) for f in self.frames]
        buffer = io.BytesIO()
        images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)
        return buffer.getvalue()


def record_episode(act, env_id: str, seed: int, max_frames: int = 400) -> Recording:
    """Play one deterministic episode with `act` (batch of obs -> batch of actions), keeping every frame."""
    env = make_env(env_id, render_mode="rgb_array")
    obs, _ = env.reset(seed=seed)
    frames = [env.render()]
    total, steps, done = 0.0, 0, False
    while not done:
        action = np.asarray(act(obs[None].astype(np.float32)))[0]
        obs, reward, terminated, truncated, _ = env.step(action if action.ndim else action.item())
        total += float(reward)
        steps += 1
        done = terminated or truncated
        if len(frames) < max_frames:
            frames.append(env.render())
    env.close()
    return Recording(frames, total, steps)


def run_policy(run_dir: Path):
    """(env id, act function) of a run's trained deterministic policy."""
    import torch

    from ..algos.base import deterministic_action
    from ..trainer import load_policy

    spec, policy = load_policy(run_dir)

    def act(obs):
        with torch.no_grad():
            return deterministic_action(policy, torch.as_tensor(obs)).numpy()

    return spec.env, act
