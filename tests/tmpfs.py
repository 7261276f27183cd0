"""A small tmpfs mounted for one test (a real full disk, a second filesystem), where the test runs as root.

Elsewhere (not root, no mount permission in the container) the test is skipped with the reason.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(mount_point: Path, size: str = "8m") -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount_point.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


class Filler:
    """Takes every free byte of a filesystem (a file grown until ENOSPC), and gives it back."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "filler.bin"

    def fill(self) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for chunk in (b"\1" * (1 << 20), b"\1" * 4096, b"\1"):
                while True:
                    try:
                        os.write(fd, chunk)
                    except OSError as exc:
                        if exc.errno != errno.ENOSPC:
                            raise
                        break
        finally:
            os.close(fd)
        assert os.statvfs(self.path.parent).f_bavail == 0

    def free(self) -> None:
        self.path.unlink(missing_ok=True)
