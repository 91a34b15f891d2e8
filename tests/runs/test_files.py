"""Run folders on disk: checkpoints load without running pickled code, and a bad one is refused saying why."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch

from thrust_app.runs.files import CheckpointError, RunDirError
from thrust_app.training.trainer import resume, train

QUIET = {"progress": False, "log": lambda _: None}


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_bad_checkpoints_are_refused_without_running_their_code(tmp_path):
    run = tmp_path / "run"
    train("ppo", "bandit", timesteps=256, run_dir=run, device="cpu", eval_episodes=1, **QUIET)
    ckpt = run / "last.pt"
    data = ckpt.read_bytes()
    ckpt.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="not a readable Thrust checkpoint"):
        resume(run, timesteps=512, **QUIET)  # on past its budget: the checkpoint must be read
    torch.save({"weights": torch.zeros(2)}, ckpt)
    with pytest.raises(CheckpointError, match="not a Thrust checkpoint"):
        resume(run, timesteps=512, **QUIET)  # on past its budget: the checkpoint must be read
    marker = tmp_path / "pwned"
    ckpt.write_bytes(pickle.dumps(Exploit(str(marker))))
    with pytest.raises(CheckpointError):
        resume(run, timesteps=512, **QUIET)  # on past its budget: the checkpoint must be read
    assert not marker.exists()
    with pytest.raises(RunDirError, match="not a Thrust run folder"):
        resume(tmp_path / "nowhere", **QUIET)


class Exploit:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_docs_describe_every_file_of_a_run_folder():
    """docs/runs.md's table names each file a run folder can hold, as the code names them."""
    from thrust_app.dashboard import jobs
    from thrust_app.runs import files, lock, tensorboard
    from thrust_app.sweeps import spec

    doc = (Path(__file__).resolve().parents[2] / "docs" / "runs.md").read_text()
    names = [getattr(files, name) for name in dir(files) if name.endswith("_FILE")] + [files.LAST_CHECKPOINT]
    names += [lock.LOCK_FILE, f"{tensorboard.TB_FOLDER}/", spec.TRIAL_FILE, jobs.LAUNCH_FILE, jobs.EXIT_FILE, jobs.LOG_FILE]
    table = doc.split("## The files", 1)[1].split("\n## ", 1)[0]
    missing = [name for name in names if f"`{name}`" not in table]
    assert not missing, f"docs/runs.md does not describe {missing}"
