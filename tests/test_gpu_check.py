"""benches/gpu_check.sh fails loudly, with one line, on a machine without CUDA instead of measuring nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "benches" / "gpu_check.sh"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: gpu_check.sh would run for real")
def test_gpu_check_refuses_to_run_without_cuda(tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}  # python3: this venv's, with torch
    done = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "out")], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert "no CUDA device here" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "gpu_check.log").exists()  # nothing was measured
