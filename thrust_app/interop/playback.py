"""One episode of an exported bundle in Python: the pure-Python env core and onnxruntime, batch 1 (a
recurrent policy's memory carried from step to step, the legal moves of a core that offers them passed as the action
mask).

This is the reference the browser player must match action for action: the same env source
(the core; for a MuJoCo robot the locomotion core over the desktop's MuJoCo), the same seed, the same ONNX file.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..envs.core import CoreEnv, make_core, playing_core, playing_locomotion
from ..envs.mujoco_physics import make_locomotion_core
from .bundle import OnnxPolicy, load_bundle


@dataclass
class Episode:
    actions: list
    episode_return: float
    steps: int
    median_inference_ms: float
    #: the observation each action answered, in order
    observations: list


def playing_env(manifest: dict) -> CoreEnv:
    """The env a bundle's episodes run on: its core (a MinAtar id's in its pipeline too) or its MuJoCo robot's."""
    if playing_locomotion(manifest):
        return make_locomotion_core(manifest["env_id"])
    return make_core(playing_core(manifest) or manifest["env_id"])


def onnx_episode(bundle_path: str | Path, seed: int, max_steps: int = 100_000) -> Episode:
    bundle = load_bundle(bundle_path)
    policy = OnnxPolicy(bundle)
    env = playing_env(bundle.manifest)
    obs = env.reset(seed=seed)
    shape = (1, *bundle.manifest["observation"]["shape"])
    memory = np.zeros((1, policy.state_size), np.float32)  # a recurrent policy's, zeros at the episode's start
    masked = hasattr(env, "action_masks")  # a core that offers its legal moves
    actions, latencies, observations = [], [], []
    total = 0.0
    while env.running and env.steps < max_steps:
        start = time.perf_counter()
        batch = np.asarray(obs, dtype=np.float32).reshape(shape)
        mask = np.asarray([env.action_masks()], bool) if masked else None
        if policy.state_size:
            action, memory = policy.act(batch, mask, memory)
        else:
            action = policy.act(batch, mask)
        action = action[0]
        latencies.append((time.perf_counter() - start) * 1000)
        action = int(action) if bundle.discrete else action.tolist()
        actions.append(action)
        observations.append(list(obs))
        result = env.step(action)
        obs, total = result.obs, total + result.reward
    return Episode(actions, total, env.steps, float(np.median(latencies)), observations)
