"""Atomic file replacement and durable appends.

``write_atomic`` writes a temp file in the same directory, fsyncs it, renames it over the target
and fsyncs the directory, so a reader (or a crash) sees either the old or the new content, never a
mix. While a group committer runs on the current event loop (``store/commit.py``: the engine enables
one), the fsyncs are deferred and shared by every write of the group; the writes themselves still
happen here, in order. Set ``DOMINDS_FSYNC=0`` to skip the fsyncs (benchmarks only: rename stays
atomic, durability across power loss is lost). See docs/reliability.md for what each costs.

``write_atomic(..., spare=True)`` (a dialog's ``latest.yaml``, rewritten at every turn) keeps the
replaced version as a hidden spare (``.latest.yaml.spare``) and writes the next version into that
spare's inode before swapping the two names in one step (``renameat2(RENAME_EXCHANGE)``): the same
atomicity as a rename, but no inode is allocated and none is freed. On ext4 without a journal an
allocation scans past every inode freed in the last minutes and a free trims its block on the device
(``discard``), each ~0.3–0.8 ms under load, against ~0.05 ms for the overwrite and the swap
(docs/performance.md, "Fan-out").
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

from dominds.libc import libc_errno, libc_function
from dominds.rtws import STATE_FILE_MODE
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


def write_atomic(
    path: Path, data: bytes | str, *, mode: int | None = None, spare: bool = False, create_mode: int = 0o644
) -> None:
    """Replace ``path`` with ``data`` atomically; create parent directories as needed.

    ``spare``: keep the replaced version as ``.<name>.spare`` and write the next version into it, then
    swap the names (``_write_via_spare``); where the swap is not available, as without it.
    Raises ``WriteFailedError`` (the old content is left untouched) when the disk refuses.
    """
    durable_step("replace", path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory = path.parent
    group = _group()
    if spare and mode is None and _exchange_works and len(data) <= SPARE_MAX_BYTES:
        try:
            with _spare_lock:
                written = _write_via_spare(path, data, group)
            if written:
                return
        except OSError as exc:
            raise WriteFailedError(path, _describe(exc)) from exc
    try:
        tmp = directory / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        flags, perms = os.O_WRONLY | os.O_CREAT | os.O_EXCL, create_mode if mode is None else mode
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
        try:
            os.replace(tmp, path)
        except BaseException:
            _unlink_quietly(tmp)
            raise
        _replaced_durably(path, group)
    except OSError as exc:
        raise WriteFailedError(path, _describe(exc)) from exc


def _replaced_durably(path: Path, group: commit.GroupCommit | None) -> None:
    """``path`` names another inode now: its data, then its directory, made durable with the group; without
    one, the directory at once (the caller fsynced whatever it wrote)."""
    if group is not None:
        group.note(str(path), str(path.parent))  # data first, then the directory: see commit.py
    else:
        fsync_dir(path.parent)


SPARE_SUFFIX = ".spare"
SPARE_MAX_BYTES = 4096
"""Larger versions go through a temp file: a spare is written with one ``pwrite`` within one page,
which a ``kill -9`` leaves whole or untouched (a longer write could be cut between pages)."""
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_exchange_works = sys.platform == "linux"
"""Cleared for this process at the first filesystem (or C library) that cannot swap two names."""
_SYNC_RANGE_WAIT_WRITE_WAIT = 1 | 2 | 4
"""``SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER``."""
_spare_lock = threading.Lock()
"""One spare write at a time in this process (a spare's name is fixed, unlike a temp file's)."""


def spare_path(path: Path) -> Path:
    return path.with_name(f".{path.name}{SPARE_SUFFIX}")


def _write_via_spare(path: Path, data: bytes, group: commit.GroupCommit | None) -> bool:
    """Write ``data`` into ``path``'s spare and swap the two names; False: use a temp file instead.

    The spare is written in place only when it is a plain file of its own (a hard link made by a backup
    tool must never change) that no longer holds the version the disk names as ``path``: a spare
    swapped out in the group that is not committed yet holds the last durable version, which a power
    cut before that commit would bring back, so that write falls back to a temp file. A ``kill -9``
    at any point leaves ``path`` whole (the swap is one step); a spare left half-written is never read.
    A missing spare is created with the new version (one new inode, as a temp file costs, and none
    freed: the replaced version becomes the spare)."""
    global _exchange_works
    spare_name = str(spare_path(path))
    if group is not None and spare_name in group.held_spares:
        return False  # (``None`` here would be equivalent: the one caller tests truthiness)
    try:
        fd = os.open(spare_name, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        fd = -1
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.EACCES):
            return False  # not a file we may reuse: a temp file, and the odd spare left alone
        raise
    created = fd < 0
    if not created:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(fd)
            return False
        try:
            # Cut first, then one write: a kill in between leaves a prefix of the older version (read
            # only if the file is torn: DialogFiles.read_latest), never the new text with an old tail.
            if info.st_size > len(data):
                os.ftruncate(fd, len(data))  # mostly within its last block: nothing freed
            _write_all(fd, data, sync=False, at=0)
            if _FSYNC and group is None:
                os.fsync(fd)
            elif _FSYNC:
                _write_back(fd)  # its bytes on the device before the swap can be committed
        finally:
            os.close(fd)
    else:
        try:
            fd = os.open(spare_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, STATE_FILE_MODE)
        except FileNotFoundError:
            return False  # no directory yet: write_atomic makes it
        try:
            _write_all(fd, data, sync=_FSYNC and group is None)
        finally:
            os.close(fd)
    durable_step("swap", path)  # a kill here leaves the new version whole under the spare's name
    swapped = _exchange(spare_name, str(path))
    if swapped is None:  # this filesystem cannot swap: a temp file from now on
        _exchange_works = False
        if created:
            _unlink_quietly(Path(spare_name))
        return False
    if not swapped:  # no file to replace yet: the spare becomes it
        os.rename(spare_name, path)
    elif group is not None:
        group.held_spares.add(spare_name)
    _replaced_durably(path, group)
    return True


def _write_back(fd: int) -> None:
    """Write a file's dirty pages to the device and wait for them (``sync_file_range``: no cache flush,
    no metadata), where the C library has it.

    For a spare written over in place within a group: its new bytes go over blocks already allocated,
    which no filesystem orders before the swap of the names (ext4's ``auto_da_alloc`` orders a replaced
    file's *new* blocks). A journal may commit the swap at any moment (another file's fsync, its timer);
    a power cut after that commit and before the group's fsyncs would leave ``latest.yaml`` naming the
    version before the last, whole, one committed version back. Written back first, the bytes reach the
    device before the swap is even made, and the journal's commit flushes the device's cache before
    its commit record: the swap is never durable without them (~0.1 ms per write on this disk)."""
    sync_range = libc_function("sync_file_range", ("c_int", "c_longlong", "c_longlong", "c_uint"))
    if sync_range is None or sync_range(fd, 0, 0, _SYNC_RANGE_WAIT_WRITE_WAIT) != 0:
        os.fdatasync(fd)  # no such call (or it failed): the full cost, never a weaker order


def restore_spare(path: Path) -> None:
    """Make ``path``'s spare the file again, its replaced version the spare (``DialogFiles.read_latest``
    found the file torn: a power cut). Only the process that writes the dialog may do this: a swap
    made while another process is writing the spare would bring an older version back."""
    durable_step("replace", path)
    spare_name = str(spare_path(path))
    group = _group()
    try:
        with _spare_lock:
            swapped = _exchange(spare_name, str(path))
            if swapped is None:
                os.replace(spare_name, path)
            elif not swapped:
                os.rename(spare_name, path)
            elif group is not None:
                group.held_spares.add(spare_name)  # the version the disk names as the file until this commits
        _replaced_durably(path, group)
    except OSError as exc:
        raise WriteFailedError(path, _describe(exc)) from exc


def _exchange(first: str, second: str) -> bool | None:
    """Swap two names in one step: True; False when ``second`` does not exist; None when unsupported."""
    renameat2 = libc_function("renameat2", ("c_int", "c_char_p", "c_int", "c_char_p", "c_uint"))
    if renameat2 is None:
        return None
    if renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    code = libc_errno()
    if code == errno.ENOENT and os.path.lexists(first):
        return False
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV):
        return None
    raise OSError(code, os.strerror(code), second)


def _write_all(fd: int, data: bytes, *, sync: bool, at: int | None = None) -> None:
    """Write every byte of ``data`` (``os.write`` may take fewer), then fsync when ``sync``."""
    view = memoryview(data)
    while view:
        if at is None:
            written = os.write(fd, view)
        else:
            written = os.pwrite(fd, view, at)
            at += written
        view = view[written:]
    if sync:
        os.fsync(fd)


def replace_unsynced(path: Path, data: bytes, mode: int = 0o666) -> None:
    """Replace ``path`` with ``data`` atomically but not durably (no fsync, no crash point): for what
    another file can rebuild (a cache, a copy, a log a reader follows), where a reader must never see
    half a file. Creates the parent directories; ``mode`` goes through the umask. Raises ``OSError``,
    leaving no temp file behind."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def write_fresh(path: Path, data: bytes | str) -> None:
    """Write a new file in a directory no reader sees yet (a dialog's staging directory, renamed into
    place afterwards by ``renamed_into_place``): no temp file and no rename, the directory's rename is
    the atomic step. Raises ``WriteFailedError`` when the disk refuses or the file already exists."""
    durable_step("create", path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, STATE_FILE_MODE)
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
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW)
            new_file = False
        except FileNotFoundError:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, STATE_FILE_MODE)
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


SYMLINK_PROBLEM = "is a symbolic link; dialog files are never followed through links (they could lead outside the workspace)"


def _describe(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on device"
    if exc.errno == errno.ELOOP:
        return SYMLINK_PROBLEM
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return exc.strerror or str(exc)
