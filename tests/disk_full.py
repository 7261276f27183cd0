"""A full disk in one process: every write of the store refused with ENOSPC while armed."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

import pytest

from dominds.store import atomic


class DiskFull:
    """Make every write of the process fail with ENOSPC while armed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.armed = False
        self.refuses: Callable[[bytes], bool] = lambda data: True
        """Which writes the full disk refuses while armed (all by default; the probe always)."""
        self.probes_refused = 0
        """The storage watcher's free-space probes refused so far (a signal the test can wait on)."""
        real_write = os.write

        def write(fd: int, data: bytes) -> int:  # type: ignore[override]
            if self.armed and self.refuses(bytes(data)):
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_write(fd, data)

        def pwrite(fd: int, data: bytes, offset: int) -> int:  # a state file written over its spare
            if self.armed:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_pwrite(fd, data, offset)

        def posix_fallocate(fd: int, offset: int, length: int) -> None:  # the watcher's probe of free space
            if self.armed:
                self.probes_refused += 1
                raise OSError(errno.ENOSPC, "No space left on device")
            real_fallocate(fd, offset, length)

        real_pwrite, real_fallocate = os.pwrite, os.posix_fallocate
        monkeypatch.setattr(atomic.os, "write", write)
        monkeypatch.setattr(atomic.os, "pwrite", pwrite)
        monkeypatch.setattr(atomic.os, "posix_fallocate", posix_fallocate)
