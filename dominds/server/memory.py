"""Giving the allocator's free memory back after a big, short-lived piece of work.

A listing of 100,000 dialogs, or a start that scanned them, creates millions of short-lived objects.
Once they are freed, CPython keeps some in its free lists (tuples, dicts, lists…), and those few keep
whole 1 MiB pymalloc arenas in use; glibc keeps the pages it freed in its heaps (the listing thread's
own arena among them). A full collection empties the free lists (the arenas they pinned are released),
and ``malloc_trim(0)`` hands the free pages of every glibc heap back to the system: measured on a
100,000-dialog workspace, 74.7 → 69.1 MiB after a listing (docs/performance.md, Memory). Nothing the
daemon holds is dropped; only memory that was already free leaves the process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Callable
from functools import cache


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` (None elsewhere: musl, macOS)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def give_back_memory() -> None:
    """A full collection, then ``malloc_trim(0)`` where glibc has it (see the module docstring)."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
