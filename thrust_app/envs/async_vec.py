"""Env copies in worker processes: gymnasium's AsyncVectorEnv behind Thrust's VecEnv interface.

For envs whose step costs more than passing its arrays between processes (Atari, MuJoCo, a user's own
slow simulator): the copies step in parallel, one process each. Same-step auto-reset and `final_obs`
as the in-process loop (`LoopVecEnv`), and the same seeds: copy i starts with `seed + i`, so both give
the same trajectories (tests/envs/test_async_vec.py). The envs' state lives in the workers and is not
checkpointed: a resumed run starts fresh episodes, as with any gymnasium env.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from .arrays import BackendName
from .vec import BatchStep, LoopVecEnv, check_count, has_mask_method, reports_episodes


class AsyncVecEnv(LoopVecEnv):
    """N copies of a gymnasium env, each in its own worker process (`vec_env="async"`)."""

    def __init__(
        self,
        make_env: Callable[[], Any],
        num_envs: int,
        seed: int | None = None,
        backend: BackendName = "numpy",
        device: str = "cpu",
    ) -> None:
        check_count(num_envs)
        probe = make_env()  # spaces, id and how episodes are reported, from one copy made here
        try:
            self.describe(probe, num_envs, backend, seed, device)
            self.reports_episodes = reports_episodes(probe)
            self._mask_method = has_mask_method(probe)
        finally:
            probe.close()
        self.vector = gym.vector.AsyncVectorEnv(
            [make_env] * num_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP, copy=False
        )
        self._returns = [0.0] * num_envs
        self._lengths = [0] * num_envs
        self._masks = None

    def reset(self, seed: int | None = None) -> Any:
        seed = self._seed if seed is None else seed
        self._seed = None
        self._returns = [0.0] * self.num_envs
        self._lengths = [0] * self.num_envs
        obs, infos = self.vector.reset(seed=None if seed is None else [seed + i for i in range(self.num_envs)])
        self.keep_vector_masks(infos)
        self._final_masks = self._masks
        return self._stack(list(obs))

    def keep_vector_masks(self, infos: dict) -> None:
        """The workers' action masks at their current observations: their `action_masks()`, else the
        `action_mask` of the infos the reset or step returned (a reset's, where an episode ended)."""
        if self._mask_method:
            self._masks = [np.asarray(mask, dtype=bool) for mask in self.vector.call("action_masks")]
        elif "action_mask" in infos:
            self._masks = [np.asarray(mask, dtype=bool) for mask in infos["action_mask"]]
        else:
            self._masks = None

    def step(self, actions: Any) -> BatchStep:
        actions = self.env_actions(actions)
        obs, rewards, terms, truncs, infos = self.vector.step(actions)
        ended = infos.get("_final_obs", np.zeros(self.num_envs, dtype=bool))
        rows = []
        for i in range(self.num_envs):
            final = infos["final_obs"][i] if ended[i] else obs[i]
            info = episode_info(infos.get("final_info", {}), i) if ended[i] else {}
            rows.append((obs[i], final, rewards[i], terms[i], truncs[i], *self.score(i, rewards[i], bool(ended[i]), info)))
        self.keep_vector_masks(infos)
        if self._masks is not None:
            self._final_masks = [self.final_mask(i, infos) if ended[i] else mask for i, mask in enumerate(self._masks)]
        return self.batch(rows)

    def final_mask(self, i: int, infos: dict) -> np.ndarray:
        """Copy i's mask at the observation its episode ended on: its final info's `action_mask`; a worker's
        `action_masks()` can no longer be asked (it has reset), so then every action counts as allowed."""
        final_info = infos.get("final_info", {})
        if "action_mask" in final_info and final_info.get("_action_mask", np.ones(self.num_envs, bool))[i]:
            return np.asarray(final_info["action_mask"][i], dtype=bool)
        return np.ones_like(self._masks[i])

    def final_action_masks(self) -> np.ndarray | None:
        return None if self._masks is None else np.stack(self._final_masks)

    def close(self) -> None:
        self.vector.close()


def episode_info(final_info: dict, i: int) -> dict:
    """Copy i's `episode` report (RecordEpisodeStatistics) out of a vector env's batched final infos."""
    if "episode" in final_info and final_info["_episode"][i]:
        return {"episode": {"r": final_info["episode"]["r"][i], "l": final_info["episode"]["l"][i]}}
    return {}
