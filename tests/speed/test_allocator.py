"""`keep_freed_memory`: after it, a megabyte tensor comes from malloc's heap, not from a memory mapping of its own
(which the kernel faults in afresh each time one is allocated); each case in a process of its own, since the
setting holds for the whole process."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: Bytes in mmap'd blocks (glibc's mallinfo2().hblkhd) grown by allocating a 4 MiB tensor, after `keep` or not.
PROBE = """
import ctypes, sys
import torch
from thrust_app.speed.allocator import keep_freed_memory

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                    "fsmblks", "uordblks", "fordblks", "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = MallInfo2
kept = keep_freed_memory() if sys.argv[1] == "keep" else None
before = mallinfo2().hblkhd
tensor = torch.empty(1 << 20)  # 4 MiB of float32
print(kept, mallinfo2().hblkhd - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc: Linux only")
def test_megabyte_tensors_come_from_the_heap_once_freed_memory_is_kept():
    def probe(mode: str) -> list[str]:
        out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
        return out.stdout.split()

    assert probe("default")[1] != "0"  # glibc's default: a block this large is a mapping of its own
    assert probe("keep") == ["True", "0"]
