"""Memory measurement shared by the benchmarks: RSS fields, peak growth, and a glibc that returns freed memory."""

from __future__ import annotations

import gc
from collections.abc import Callable


def rss_kib(field: str) -> int:
    """A memory field of /proc/self/status (VmRSS, VmHWM), in KiB; 0 where unavailable."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def exact_rss_allocator() -> bool:
    """Make glibc hand large blocks back to the OS on free, so RSS tracks live memory.

    glibc raises its mmap threshold after big frees and then serves such blocks from the
    heap, where freed pages stay resident and hide later allocations from RSS. A fixed 64 KiB
    threshold (``mallopt``) undoes that; ``malloc_trim`` (before each measurement) returns
    freed heap pages. Only untimed memory passes run after this. False if not glibc.
    """
    libc = _glibc()
    return libc is not None and bool(libc.mallopt(-3, 64 * 1024))  # -3: M_MMAP_THRESHOLD


def _glibc():
    """The C library through ctypes if it is glibc (has mallopt/malloc_trim), else None."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def peak_rss_growth(fn: Callable[[], object]) -> int:
    """Peak RSS growth in bytes while ``fn`` runs (Linux: resets the VmHWM mark); 0 if unknown."""
    gc.collect()  # garbage freed during ``fn`` would hide its own growth
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)  # freed but resident heap pages would be reused unseen
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")  # reset the peak-RSS mark of this process
    except OSError:
        return 0
    before = rss_kib("VmRSS")
    result = fn()
    peak = rss_kib("VmHWM")
    del result
    return max(0, peak - before) * 1024
