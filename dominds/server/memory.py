"""Giving the allocator's free memory back after a big, short-lived piece of work.

A listing of 100,000 dialogs, or a start that scanned them, creates millions of short-lived objects.
Once they are freed, CPython keeps some in its free lists (tuples, dicts, lists…), and those few keep
whole 1 MiB pymalloc arenas in use; glibc keeps the pages it freed in its heaps (the listing thread's
own arena among them). A full collection empties the free lists (the arenas they pinned are released),
and ``malloc_trim(0)`` hands the free pages of every glibc heap back to the system: measured on a
100,000-dialog workspace 4 s after a listing, 74.7 MiB → 70.7 after the collection → 69.1 after the
trim (docs/performance.md, Memory). Nothing the daemon holds is dropped; only memory that was
already free leaves the process. Used after a listing (server/listing.py) and once ``serve`` is
ready (cli/cmd_serve.py: recovery's scan), each only when it went through more than
``BIG_WORK_TREES`` trees.
"""

from __future__ import annotations

import gc

from dominds.libc import libc_function

BIG_WORK_TREES = 1000
"""A listing, or a start, that went through more trees than this gives back what it freed. Smaller
ones leave little behind, and ``ctypes`` alone costs 0.3 MiB."""


def give_back_memory() -> None:
    """A full collection, then ``malloc_trim(0)`` where glibc has it (see the module docstring)."""
    gc.collect()
    trim = libc_function("malloc_trim", ("c_size_t",))  # glibc's; None elsewhere (musl, macOS)
    if trim is not None:
        trim(0)
