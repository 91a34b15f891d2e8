"""benches/gpu_check.sh fails loudly, with one line, on a machine without CUDA instead of measuring nothing."""

from __future__ import annotations

import json
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


BENCHES = Path(__file__).resolve().parents[1] / "benches"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the /cuda columns would run for real")
@pytest.mark.parametrize(
    ("script", "args", "expected"),
    [
        ("trainer_throughput.py", ["--quick"], ["dqn_train_step/cpu", "sac_train_step/cpu", "ppo_cartpole_steps_per_sec/cpu"]),
        ("onnx_policies.py", ["--quick", "--no-browser"], []),
        (
            "batched_ppo.py",
            ["--quick", "--envs", "1,64", "--env-backends", "torch"],
            ["N=1 cpu env:torch", "N=64 cpu env:torch"],
        ),
        ("image_ppo.py", ["--quick"], ["ppo minatar N=8 cpu"]),
    ],
)
def test_the_benches_gpu_check_runs_work_on_the_cpu(tmp_path, script, args, expected):
    """gpu_check.sh runs these with their /cuda columns; here the CPU side runs and the CUDA side says in
    one line that it is skipped, so the script cannot rot between the rare runs on a lent GPU."""
    out = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, str(BENCHES / script), *args, "--json", str(out)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text())
    names = [row["name"] for row in report.get("results", [])]
    assert all(name in names for name in expected), names
    if script != "onnx_policies.py":  # onnx_policies has no /cuda torch column; it lists onnxruntime's providers
        assert "/cuda skipped: no CUDA device" in done.stdout
    else:
        assert {row["runtime"] for row in report["rows"]} >= {"torch eager", "onnxruntime cpu"}
