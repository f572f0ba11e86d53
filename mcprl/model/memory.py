"""Giving freed memory back to the operating system.

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
