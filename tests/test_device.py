"""Devices: `auto` picks what the machine has; asking for CUDA without a GPU is one clear error."""

from __future__ import annotations

import pytest
import torch

from thrust_app.device import DeviceError, resolve_device
from thrust_app.trainer import train

QUIET = {"progress": False, "log": lambda _: None}


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA, so asking for it is no error")
def test_cuda_without_a_gpu_is_a_clear_error():
    with pytest.raises(DeviceError, match=r"no CUDA device.*--device cpu"):
        resolve_device("cuda")
    assert resolve_device("auto").type == "cpu"
    with pytest.raises(DeviceError, match="unknown device 'tpu'"):
        resolve_device("tpu")


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here: the CUDA training path runs in benches/gpu_check.sh"
)
def test_training_runs_on_cuda(tmp_path):
    summary = train("ppo", "cartpole", timesteps=1024, device="cuda", run_dir=tmp_path, **QUIET)
    assert summary["device"].startswith("cuda")
