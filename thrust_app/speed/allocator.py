"""Freed memory kept in the process for reuse, for a seed batch's large short-lived tensors.

glibc's malloc serves an allocation of 128 KiB or more (raised as such blocks are freed) from a fresh
memory mapping and gives the pages back to the OS when it is freed; it also trims its heap top whenever
128 KiB or more is free there. A seed batch's update allocates megabyte tensors ((N, B, h) activations and
their gradients) and frees them every minibatch step, so each one came back as pages the kernel had to
fault in and zero. `keep_freed_memory` serves allocations up to 32 MiB from the heap and keeps what is
freed there: the process holds its peak, and the update steps faster (32 PPO CartPole seeds: 1.4x per
minibatch step, benches/batched_seeds.py in docs/backends.md). This is what PyTorch's CPU tuning guide
gets from jemalloc or tcmalloc, here without preloading a library. Nothing a run computes changes.
"""

from __future__ import annotations

import ctypes
import sys

#: mallopt's parameters (glibc's malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: Allocations below this come from the heap: glibc's largest mmap threshold on a 64-bit system.
MMAP_THRESHOLD = 32 << 20
#: Free memory at the heap's top up to this stays with the process.
TRIM_THRESHOLD = 1 << 30


def keep_freed_memory() -> bool:
    """Set glibc's malloc to serve allocations below 32 MiB from its heap and keep what is freed (for this
    whole process, from now on); False where the C library is not glibc (macOS, musl), which is left as it is."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
