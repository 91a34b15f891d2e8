"""Saving and restoring everything a run needs to continue exactly where it was: the algorithm (nets,
optimizers, buffers, its random stream), the env's state and current observation, the global torch
random streams, and the logger's records in progress. Files are written atomically (`runs.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from .runs import LAST_CHECKPOINT, RunDirError, load_checkpoint, save_checkpoint

if TYPE_CHECKING:
    from .trainer import Trainer


class Checkpointer:
    """Writes `last.pt` in a run folder (or a file of the caller's choice) and restores a Trainer from one."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LAST_CHECKPOINT

    def save(self, trainer: Trainer, path: Path | None = None) -> Path:
        device = trainer.device
        state = {
            "algo_name": trainer.spec.algo,
            "env": trainer.spec.env,
            "algo": trainer.algo.state_dict(),
            "obs": trainer.obs.cpu(),
            "env_state": trainer.env.get_state(),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
            **trainer.logger.state_dict(),
        }
        target = Path(path) if path is not None else self.path
        save_checkpoint(target, state)
        return target

    def load(self, path: Path | None = None) -> dict[str, Any]:
        """The state in `last.pt` (or `path`), on the CPU: `restore` copies each part to the run's device."""
        return load_checkpoint(Path(path) if path is not None else self.path)

    def restore(self, trainer: Trainer, state: dict[str, Any]) -> None:
        spec = trainer.spec
        device = trainer.device
        if state["algo_name"] != spec.algo or state["env"] != spec.env:
            raise RunDirError(
                f"checkpoint is for {state['algo_name']} on {state['env']}, but the run folder says {spec.algo} on {spec.env}"
            )
        trainer.algo.load_state_dict(state["algo"])
        if state["env_state"] is not None:
            trainer.env.set_state(state["env_state"])
            trainer.obs = state["obs"].to(device)
        else:  # gymnasium envs: start fresh episodes, seeded by the step reached
            trainer.obs = trainer.env_io.reset(trainer.env, spec.seed + trainer.algo.num_timesteps)
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] is not None and device.type == "cuda":
            torch.cuda.set_rng_state(state["cuda_rng"], device)
        trainer.logger.load_state_dict(state)
