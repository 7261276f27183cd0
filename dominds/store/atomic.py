"""Atomic file replacement and durable appends.

``write_atomic`` writes a temp file in the same directory, fsyncs it, renames it over the target
and fsyncs the directory, so a reader (or a crash) sees either the old or the new content, never a
mix. While a group committer runs on the current event loop (``store/commit.py``: the engine enables
one), the fsyncs are deferred and shared by every write of the group; the writes themselves still
happen here, in order. Set ``DOMINDS_FSYNC=0`` to skip the fsyncs (benchmarks only: rename stays
atomic, durability across power loss is lost). See docs/reliability.md for what each costs.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from queue import SimpleQueue

from dominds.store import commit
from dominds.store.crashpoints import durable_step
from dominds.store.errors import WriteFailedError

_FSYNC = os.environ.get("DOMINDS_FSYNC", "1") not in ("0", "false", "no")

def set_fsync(enabled: bool) -> None:
    """Turn fsync on or off for this process (benchmarks measure both)."""
    global _FSYNC
    _FSYNC = enabled


def _group() -> commit.GroupCommit | None:
    """The running loop's group committer when fsyncs are on and one is enabled."""
    return commit.current() if _FSYNC else None


def fsync_dir(directory: Path) -> None:
    """Make a directory's entries durable: now, or with the current group."""
    if not _FSYNC:
        return
    group = commit.current()
    if group is not None:
        group.note(None, str(directory))
        return
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def renamed_into_place(directory: Path, names: Iterable[str]) -> None:
    """A directory written under a staging name and renamed into place: make the rename durable.

    ``names``: the files written into it (``write_fresh``). Without a group they were already fsynced
    as they were written; the directory (its entries: ``write_fresh`` made no directory fsync) and its
    parent are fsynced now. Within a group they were not: its files, the directory and its parent join
    the group."""
    if not _FSYNC:
        return
    group = commit.current()
    if group is None:
        fsync_dir(directory)
        fsync_dir(directory.parent)
        return
    for name in names:
        group.note(os.path.join(directory, name), None)
    group.note(None, str(directory))
    group.note(None, str(directory.parent))


def write_atomic(path: Path, data: bytes | str, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically; create parent directories as needed.

    Raises ``WriteFailedError`` (the old content is left untouched) when the disk refuses.
    """
    durable_step("replace", path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory = path.parent
    group = _group()
    try:
        tmp = directory / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        flags, perms = os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644 if mode is None else mode
        try:
            fd = os.open(tmp, flags, perms)
        except FileNotFoundError:  # the directory is made on first use (not a mkdir before every write)
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, flags, perms)
        try:
            _write_all(fd, data, sync=_FSYNC and group is None)
        except BaseException:
            os.close(fd)
            _unlink_quietly(tmp)
            raise
        os.close(fd)
        if mode is not None:
            os.chmod(tmp, mode)  # exact, whatever the umask (daemon.json must be 0600)
        replaced = _hold(path) if group is not None else None
        try:
            os.replace(tmp, path)
        except BaseException:
            _unlink_quietly(tmp)
            if replaced is not None:
                os.close(replaced)
            raise
        if replaced is not None:
            _releaser.release(replaced)
        if group is not None:
            group.note(str(path), str(directory))  # data first, then the directory: see commit.py
        else:
            fsync_dir(directory)
    except OSError as exc:
        raise WriteFailedError(path, _describe(exc)) from exc


_O_PATH = getattr(os, "O_PATH", 0)


def _hold(path: Path) -> int | None:
    """A reference (an ``O_PATH`` descriptor) to the file ``path`` names now, if any.

    Held across a replace, it keeps the replaced file's inode from being freed by the rename itself:
    its last reference goes when ``_releaser`` closes the descriptor, in its own thread. Freeing a
    file truncates it, and on a file system mounted with ``discard`` (this VM's ext4) each freed
    block is discarded synchronously on the device: ~40 % of a replace's time on the event loop
    (``perf``: ``ext4_evict_inode`` → ``ext4_free_blocks`` → ``blkdev_issue_discard`` →
    ``submit_bio_wait``). Nothing durable depends on when the old inode is freed: the rename is the
    replace, for every reader and for a crash alike (a crash while the descriptor is open leaves the
    old inode unreferenced, as any unlinked file that a process still had open; fsck reclaims it on
    a file system without a journal, the journal's orphan list on one with)."""
    if not _O_PATH:
        return None
    try:
        return os.open(path, _O_PATH | os.O_CLOEXEC)
    except OSError:  # no file yet (the first write) or not reachable: the rename frees nothing
        return None


class _Releaser:
    """Closes descriptors in a thread of its own (``_hold``): the last close of a replaced file frees it."""

    def __init__(self) -> None:
        self._queue: SimpleQueue[int] = SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def release(self, fd: int) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="dominds-release", daemon=True)
                    self._thread.start()
        self._queue.put(fd)

    def _run(self) -> None:
        while True:
            fd = self._queue.get()
            try:
                os.close(fd)
            except OSError:
                pass


_releaser = _Releaser()


def _write_all(fd: int, data: bytes, *, sync: bool) -> None:
    """Write every byte of ``data`` (``os.write`` may take fewer), then fsync when ``sync``."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    if sync:
        os.fsync(fd)


def write_fresh(path: Path, data: bytes | str) -> None:
    """Write a new file in a directory no reader sees yet (a dialog's staging directory, renamed into
    place afterwards by ``renamed_into_place``): no temp file and no rename, the directory's rename is
    the atomic step. Raises ``WriteFailedError`` when the disk refuses or the file already exists."""
    durable_step("create", path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            # within a group, renamed_into_place notes the files it is given
            _write_all(fd, data, sync=_FSYNC and _group() is None)
        finally:
            os.close(fd)
    except OSError as exc:
        raise WriteFailedError(path, _describe(exc)) from exc


def append_line(path: Path, line: str, *, sync: bool = True) -> None:
    """Append one line (a newline is added) with a single write; fsync when ``sync`` (always within a group).

    A crash mid-append leaves at most a torn last line, which the JSONL reader ignores.
    """
    durable_step("append", path)
    data = (line + "\n").encode("utf-8")
    group = _group()  # in a group every append is fsynced (it costs nothing more): events after it wait
    try:
        try:  # the file exists but once per course: no stat before every append
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
            new_file = False
        except FileNotFoundError:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            new_file = True
        try:
            good_size = _mend_torn_tail(fd, os.fstat(fd).st_size)
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                if sync and _FSYNC and group is None:
                    os.fsync(fd)
            except OSError:
                # A full disk may take half a line: cut back to the last good line before anything else is
                # appended, so a later append never leaves a bad line in the middle of the file.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, good_size)
                raise
        finally:
            os.close(fd)
        if group is not None:
            group.note(str(path), str(path.parent) if new_file else None)
        elif new_file:
            fsync_dir(path.parent)
    except OSError as exc:
        raise WriteFailedError(path, _describe(exc)) from exc


def _mend_torn_tail(fd: int, size: int) -> int:
    """Make the file end on a whole line before appending; returns its size.

    A process killed mid-append (a write can stop at a page boundary) leaves a last line without its
    newline. Appending after it would glue two records into one bad line in the middle of the file, so
    a tail that is a complete record gets its newline and a torn one is cut off (its writer never saw it
    succeed, so nothing acknowledged is lost)."""
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    start = size
    while start > 0:  # find the last newline, reading backwards in blocks
        block_start = max(0, start - 65536)
        found = os.pread(fd, start - block_start, block_start).rfind(b"\n")
        if found != -1:
            start = block_start + found + 1
            break
        start = block_start
    tail = os.pread(fd, size - start, start)
    try:
        json.loads(tail)
    except ValueError:
        os.ftruncate(fd, start)
        return start
    os.write(fd, b"\n")
    return size + 1


def remove_file(path: Path) -> None:
    """Delete ``path`` if it exists and make the deletion durable."""
    durable_step("remove", path)
    try:
        path.unlink()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise WriteFailedError(path, _describe(exc)) from exc
    fsync_dir(path.parent)


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _describe(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on device"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return exc.strerror or str(exc)
