"""Saving and restoring everything a run needs to continue exactly where it was: the algorithm (nets,
optimizers, buffers, its random stream), the env's state and current observation, the global torch
random streams, and the logger's records in progress. Files are written atomically (`runs/files.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ..algos.base import Algorithm
from ..envs.tensors import EnvIO
from ..envs.vec import VecEnv
from ..runs.files import LAST_CHECKPOINT, SUMMARY_FILE, RunDirError, atomic_write_json, load_checkpoint, save_checkpoint
from .run_logger import RunLogger
from .run_spec import RunSpec


class Checkpointer:
    """Writes `last.pt` in a run folder (or a file of the caller's choice) from the parts of a run it is
    handed, and restores those parts from one."""

    def __init__(
        self,
        run_dir: Path,
        spec: RunSpec,
        algo: Algorithm,
        env: VecEnv,
        env_io: EnvIO,
        logger: RunLogger,
        device: torch.device,
    ) -> None:
        self.path = run_dir / LAST_CHECKPOINT
        self.spec, self.algo, self.env, self.env_io, self.logger, self.device = spec, algo, env, env_io, logger, device

    def save(self, obs: torch.Tensor, path: Path | None = None) -> Path:
        """Checkpoint the run as it stands at observation `obs`. The run's own checkpoint (no `path`) comes with
        a summary that agrees with it, status "incomplete", until the run ends and writes its last one: a
        process killed after this checkpoint leaves a summary of where `--resume` continues from."""
        state = {
            "algo_name": self.spec.algo,
            "env": self.spec.env,
            "algo": self.algo.state_dict(),
            "obs": obs.cpu(),
            "env_state": self.env.get_state(),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None,
            **self.logger.state_dict(),
        }
        target = Path(path) if path is not None else self.path
        save_checkpoint(target, state)
        if path is None:
            summary = self.logger.summary("incomplete", self.algo.num_timesteps, self.device, notify=False)
            atomic_write_json(self.path.with_name(SUMMARY_FILE), {**summary, "run_dir": str(self.path.parent)})
        return target

    def load(self, path: Path | None = None) -> dict[str, Any]:
        """The state in `last.pt` (or `path`), on the CPU: `restore` copies each part to the run's device."""
        return load_checkpoint(Path(path) if path is not None else self.path)

    def restore(self, state: dict[str, Any]) -> torch.Tensor:
        """Put every part back as `state` holds it; returns the observation the run continues from."""
        spec, device = self.spec, self.device
        if state["algo_name"] != spec.algo or state["env"] != spec.env:
            raise RunDirError(
                f"checkpoint is for {state['algo_name']} on {state['env']}, but the run folder says {spec.algo} on {spec.env}"
            )
        self.algo.load_state_dict(state["algo"])
        if state["env_state"] is not None:
            self.env.set_state(state["env_state"])
        if self.env.restores_episodes(state["env_state"]):
            obs = state["obs"].to(device)
        else:  # gymnasium envs: start fresh episodes, seeded by the step reached
            obs = self.env_io.reset(self.env, spec.seed + self.algo.num_timesteps)
            self.algo.episodes_restarted()
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] is not None and device.type == "cuda":
            torch.cuda.set_rng_state(state["cuda_rng"], device)
        self.logger.load_state_dict(state)
        return obs
