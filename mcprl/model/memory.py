"""Giving freed memory back to the operating system, and how much there is to take.

glibc's allocator keeps the memory of freed tensors in its heaps for reuse, and training leaves
those heaps fragmented: after a forward+backward of a micro-batch, gigabytes can sit free but
resident, so the next phase (sampling, or the next micro-batch) grows the process further instead
of reusing them. `release()` at the boundaries of those phases hands the free pages back
(`malloc_trim`), which keeps peak RSS near what is actually in use, for about a millisecond a call.
Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import resource
import sys
from functools import cache
from pathlib import Path

import psutil
import torch


@cache
def _malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def release() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def free_bytes(device: torch.device) -> int:
    """Memory a process may still take on `device`: the GPU's free memory, else the machine's available memory,
    or less where a cgroup (v2: a container's limit) allows this process less."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    free = psutil.virtual_memory().available
    group = Path("/sys/fs/cgroup")
    try:
        limit = (group / "memory.max").read_text().strip()
        if limit != "max":
            free = min(free, int(limit) - int((group / "memory.current").read_text()))
    except (OSError, ValueError):
        pass  # no cgroup v2 limit readable here
    return free
