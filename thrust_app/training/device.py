"""Picking the torch device at run time: `auto`, `cpu` or `cuda`, with a clear word on what was taken."""

from __future__ import annotations

import torch
from threadpoolctl import threadpool_limits

DEVICE_CHOICES = ("auto", "cpu", "cuda")


class DeviceError(ValueError):
    """The requested device cannot be used on this machine."""


def cuda_summary() -> str:
    """One line on what CUDA this machine offers (for messages and the dashboard)."""
    if not torch.cuda.is_available():
        built = "with" if torch.version.cuda else "without"
        return f"no CUDA device (torch {torch.__version__}, built {built} CUDA)"
    names = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    return f"CUDA {torch.version.cuda}: {names}"


def resolve_device(name: str, torch_threads: int | None = 1) -> torch.device:
    """`auto` takes CUDA when present, else the CPU; `cuda` without a GPU is a DeviceError.

    On the CPU, torch and numpy's BLAS (which the fast acting paths use) are limited to `torch_threads`
    threads (default 1): small nets gain nothing from more and lose a lot when another process competes
    for the cores. The calling thread (the one that trains) also flushes denormal floats to zero
    (`torch.set_flush_denormal`, as TensorFlow's CPU threads do): a dead ReLU unit's weights get zero
    gradients, their Adam first moments decay by 0.9 a step into the denormals below 1.2e-38 and stay
    there, and every op on a denormal costs many times a normal one (`benches/update_floor.py` measures it).
    """
    if name not in DEVICE_CHOICES and not name.startswith("cuda:"):
        raise DeviceError(f"unknown device {name!r}; choose one of {', '.join(DEVICE_CHOICES)}")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise DeviceError(
            f"device {name!r} was asked for but this machine has {cuda_summary()}; use --device cpu or --device auto"
        )
    device = torch.device(name)
    if device.type == "cpu" and torch_threads:
        torch.set_num_threads(torch_threads)
        threadpool_limits(torch_threads, user_api="blas")
    if device.type == "cpu":
        torch.set_flush_denormal(True)  # False (and nothing changed) on a CPU without the SSE3 flags
    return device
