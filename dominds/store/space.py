"""Does the disk take new data again? A probe that really allocates.

A successful rewrite of an existing file proves nothing about free space: ``latest.yaml`` is written over
its spare's blocks (``atomic._write_via_spare``) and an append that fits in a file's last block needs no
new one, so both succeed on a disk with 0 bytes free. The probe asks for ``PROBE_BYTES`` of new blocks in
the directory it is given (``posix_fallocate``, or zeros written where the filesystem cannot reserve),
then gives them back. Its file is named like an atomic write's temp file, so one a kill left behind is
removed at the next start like theirs.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from dominds.store.errors import WriteFailedError

PROBE_BYTES = 1 << 20
"""What a drive needs to get going: a few course appends, a state file or two, maybe a new subdialog."""

_CHUNK = b"\0" * (64 << 10)


def probe_free_space(directory: Path, size: int = PROBE_BYTES) -> None:
    """Allocate ``size`` bytes in ``directory`` and free them; ``WriteFailedError`` when the disk refuses."""
    probe = directory / f".space-probe.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise WriteFailedError(probe, exc.strerror or str(exc)) from exc
    try:
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise
            written = 0
            while written < size:  # no reservation here: only written bytes are allocated
                written += os.write(fd, _CHUNK[: size - written])
    except OSError as exc:
        raise WriteFailedError(probe, exc.strerror or str(exc)) from exc
    finally:
        os.close(fd)
        try:
            os.unlink(probe)
        except FileNotFoundError:
            pass
