"""Group commit: writes that become durable together share one fsync per file and one per directory.

Without it every state-file replace costs two fsyncs and every course append one, one after the other
on the event loop: a 100-way fan-out waited on ~1,500 of them. With a committer enabled for the running
event loop (the engine enables one while it runs):

- each write still happens at once and in program order (temp file, rename, append, unlink), so this
  process and every reader see the same files as before, a failed write still raises at its call site,
  and a ``kill -9`` leaves exactly the prefix of writes it left before (the crash-point harness counts
  the same steps);
- its fsyncs are deferred: the file and its directory are noted, and once the loop has no other work
  ready (at most ``MAX_COMMIT_DELAY`` later) the group is committed: every noted file, then every
  noted directory, each fsynced once, in parallel threads (concurrent fsyncs share the filesystem's
  journal commits);
- a state write asked for with ``defer`` is made once, when its group commits, before the fsyncs; a
  group committed only because the loop stayed busy past ``MAX_COMMIT_DELAY`` carries it over to the
  next group once (its owner usually saves again meanwhile: the write is then never made), and
  everything issued after it waits for that next group;
- nothing is acknowledged or published before its fsync: ``after_durable`` runs a callback (deliver an
  event, send a reply) only once every write issued before it is durable, in the order callbacks were
  given; ``durable()`` waits for that (API responses, tool calls, shutdown).

The data of a group is made durable before any of its directories, and no write runs while a group
commits. Until its fsyncs finish, a power cut may lose any of the group's writes, none of which was
acknowledged or published. What remains is the filesystem's own ordering *within* a group: the old
code fsynced each write before issuing the next, so no rename or unlink could reach the disk before
the data written before it; within a group, a filesystem that writes metadata back on its own (a
journal commit triggered by another process) may persist a rename or an unlink of the group before
the group's data. ext4 (data=ordered, auto_da_alloc: a replaced file's data goes first), XFS and btrfs
order a replace-by-rename; ``DOMINDS_GROUP_COMMIT=0`` turns group commit off (every write fsyncs
before it returns) for a filesystem or a workload where that matters. See docs/reliability.md and
tests/driver/test_power_cut.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from dominds.store import crashpoints

log = logging.getLogger("dominds.store")

FSYNC_THREADS = 16
"""fsyncs in flight at once; more buy nothing on one disk."""
INLINE_FSYNCS = 3
"""Groups with at most this many files (or directories) fsync them one after the other, on the loop."""
RETRY_SECONDS = 1.0
"""Pause before an fsync that failed is tried again (held replies and events wait meanwhile)."""
MAX_COMMIT_DELAY = float(os.environ.get("DOMINDS_COMMIT_DELAY_MS", "") or 4) / 1000
"""How long a group may wait for the loop's ready work before it is committed anyway (seconds;
``DOMINDS_COMMIT_DELAY_MS``). Only a saturated loop waits this long: an idle one commits at once."""

_GROUP_COMMIT = os.environ.get("DOMINDS_GROUP_COMMIT", "1") not in ("0", "false", "no")
_committers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, GroupCommit] = weakref.WeakKeyDictionary()


class GroupCommit:
    """The deferred fsyncs of one event loop and the callbacks waiting for them."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.users = 0
        self.issued = 0
        """Writes noted so far."""
        self.durable = 0
        """Writes whose fsyncs have finished (all writes up to this count)."""
        self.commits = 0
        """Groups committed (each one fsync round)."""
        self._files: set[str] = set()
        self._dirs: set[str] = set()
        self.held_spares: set[str] = set()
        """Spares swapped out in this group (``atomic.write_atomic``, ``spare``): each holds the version
        the disk may still name as its file until this group commits, so none is written over before."""
        self._deferred: dict[object, _Deferred] = {}
        """State writes to make just before the group's fsyncs, one per key (``defer``)."""
        self._gated: deque[tuple[int, Callable[[], None]]] = deque()
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._scheduled = False
        self._opened: float | None = None
        """Loop time at which the pending group first deferred its commit for ready work."""
        self._executor: ThreadPoolExecutor | None = None
        self.problem: str | None = None
        """Why the last fsync failed (cleared when a later one succeeds)."""

    # -- noting writes (called right after the write, on the loop) ---------------------------------

    def note(self, file: str | None, directory: str | None) -> None:
        self.issued += 1
        if file is not None:
            self._files.add(file)
        if directory is not None:
            self._dirs.add(directory)
        if not self._scheduled:
            self._scheduled = True
            self.loop.call_soon(self._commit)

    def defer(self, key: object, write: Callable[[], None]) -> None:
        """Run ``write`` when this group commits, before its fsyncs (once per ``key`` however often asked).

        For a state file rewritten several times in a row (a dialog's ``latest.yaml`` at a generation's
        start, then at its end): the write that would be superseded within the group is never made.
        It counts as issued at once, so every reply or event given after this call waits for it. A group
        committed while the loop still has work ready (``MAX_COMMIT_DELAY`` used up) carries it over to
        the next group, once: a saturated loop (a 100-way fan-out) would otherwise write the state of
        every generation that is under way at that moment, and write it again when it ends."""
        if key not in self._deferred:
            self.issued += 1
            self._deferred[key] = _Deferred(self.issued, write)
        if not self._scheduled:
            self._scheduled = True
            self.loop.call_soon(self._commit)

    @property
    def pending(self) -> bool:
        return self.durable < self.issued or bool(self._gated)

    # -- waiting ----------------------------------------------------------------------------------

    def after_durable(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` now if every write so far is durable, else once it is (FIFO with the others)."""
        if not self._gated and self.durable >= self.issued:
            callback()
        else:
            self._gated.append((self.issued, callback))

    async def wait_durable(self) -> None:
        """Return once every write issued before this call is durable."""
        ticket = self.issued
        if self.durable >= ticket:
            return
        future: asyncio.Future[None] = self.loop.create_future()
        self._waiters.append((ticket, future))
        await future

    # -- committing -------------------------------------------------------------------------------

    def _commit(self) -> None:
        """Make every noted write durable: all files in parallel, then all directories in parallel.

        Runs on the loop and blocks it for the length of one fsync round, on purpose: while it runs no
        write can happen, so a directory fsync never makes durable a rename or an unlink issued after
        the group was taken whose data (or whose predecessors' data) is not durable yet."""
        if self.durable >= self.issued:
            self._scheduled = False
            return
        ready = self._work_ready()
        if ready and self._may_wait():
            self.loop.call_soon(self._commit)  # let it join this group: one fsync round for all of it
            return
        self._scheduled = False
        self._opened = None
        carried = self._run_deferred(carry=ready)
        target = self.issued if carried is None else carried - 1  # what was issued before a carried write
        files, self._files = self._files, set()
        dirs, self._dirs = self._dirs, set()
        crashpoints.durable_step("commit", None)
        try:
            self._fsync_all(files, directories=False)
            self._fsync_all(dirs, directories=True)
        except OSError as exc:
            self.problem = f"fsync failed: {exc.strerror or exc}"
            log.error("%s; replies and events wait until the disk takes it", self.problem)
            self._files |= files
            self._dirs |= dirs
            self._scheduled = True
            self.loop.call_later(RETRY_SECONDS, self._commit)
            return
        self.problem = None
        self.commits += 1
        self.held_spares.clear()
        self.durable = target
        self._release()
        if self.durable < self.issued and not self._scheduled:  # carried writes: the next group
            self._scheduled = True
            self.loop.call_soon(self._commit)

    def _run_deferred(self, *, carry: bool) -> int | None:
        """Make the deferred writes; with ``carry``, keep those not carried yet for the next group.

        Returns the lowest ticket of the writes kept (None: none kept)."""
        kept: dict[object, _Deferred] = {}
        while self._deferred:
            key = next(iter(self._deferred))
            deferred = self._deferred.pop(key)
            if carry and not deferred.carried:
                deferred.carried = True
                kept[key] = deferred
                continue
            try:
                deferred.write()  # its own writes are noted into this group
            except Exception:  # the owner keeps its state dirty; its next write (or a restart) redoes it
                log.exception("a deferred state write failed")
        self._deferred = kept
        return min((d.ticket for d in kept.values()), default=None)

    def _work_ready(self) -> bool:
        """Whether callbacks are ready to run on the loop (asyncio's run queue; other loops: never)."""
        return bool(getattr(self.loop, "_ready", None))

    def _may_wait(self) -> bool:
        """Whether the group may still wait for the loop's ready work.

        A turn's steps (message accepted, generation started, reply recorded, run state settled) run
        in successive loop iterations without the loop ever waiting; committing after each would pay
        one fsync round per step. Deferring while work is ready lets them share one, bounded by
        ``MAX_COMMIT_DELAY`` so a busy loop still commits (and publishes) steadily."""
        now = self.loop.time()
        if self._opened is None:
            self._opened = now
        return now - self._opened < MAX_COMMIT_DELAY

    def _fsync_all(self, paths: set[str], *, directories: bool) -> None:
        if len(paths) <= INLINE_FSYNCS:  # a few: waking threads would cost more than it saves
            for path in paths:
                fsync_path(path, directories)
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(FSYNC_THREADS - 1, thread_name_prefix="dominds-fsync")
        # One task per thread, each fsyncing its share in turn (a future per path cost more than its
        # fsync's own CPU); the loop's thread takes a share too instead of only waiting.
        ordered = list(paths)
        shares = [ordered[i :: FSYNC_THREADS] for i in range(min(FSYNC_THREADS, len(ordered)))]
        running = [self._executor.submit(_fsync_share, share, directories) for share in shares[1:]]
        try:
            _fsync_share(shares[0], directories)
        finally:
            for future in running:
                future.result()  # re-raises the first failure (after every share is done)

    def _release(self) -> None:
        while self._gated and self._gated[0][0] <= self.durable:
            _, callback = self._gated.popleft()
            try:
                callback()
            except Exception:  # one subscriber's bug must not hold back the others
                log.exception("a callback waiting for durability failed")
        still = []
        for ticket, future in self._waiters:
            if ticket <= self.durable:
                if not future.done():
                    future.set_result(None)
            else:
                still.append((ticket, future))
        self._waiters = still

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None


class _Deferred:
    """A deferred state write: its ticket (the ``issued`` count it took) and whether a group carried it."""

    __slots__ = ("ticket", "write", "carried")

    def __init__(self, ticket: int, write: Callable[[], None]) -> None:
        self.ticket = ticket
        self.write = write
        self.carried = False


def _fsync_share(paths: list[str], directories: bool) -> None:
    for path in paths:
        fsync_path(path, directories)


def fsync_path(path: str, directory: bool) -> None:
    """fsync a file or directory by path; one that no longer exists needs none (replaced or removed since)."""
    try:
        fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ---------------------------------------------------------------- the current loop's committer


def current() -> GroupCommit | None:
    """The committer of the running event loop, if one is enabled (None: every write fsyncs at once)."""
    global _last
    loop = asyncio._get_running_loop()  # the cheap form: called on every write and publish
    if loop is None:
        return None
    if _last is not None and _last.loop is loop:
        committer: GroupCommit | None = _last
    else:
        committer = _committers.get(loop)
        _last = committer
    return committer if committer is not None and committer.users else None


_last: GroupCommit | None = None


def enable() -> GroupCommit | None:
    """Defer fsyncs of writes made on the running loop until ``disable``; None when turned off by env."""
    if not _GROUP_COMMIT:
        return None
    loop = asyncio.get_running_loop()
    committer = _committers.get(loop)
    if committer is None:
        committer = _committers[loop] = GroupCommit(loop)
    committer.users += 1
    return committer


async def disable() -> None:
    """Make everything durable, then (for the last user) go back to fsync-at-once."""
    committer = _committers.get(asyncio.get_running_loop())
    if committer is None or not committer.users:
        return
    with contextlib.suppress(asyncio.CancelledError):
        await committer.wait_durable()
    committer.users -= 1
    if not committer.users:
        committer._release()
        committer.close()


def after_durable(callback: Callable[[], None]) -> None:
    """Run ``callback`` once every write issued so far is durable (at once without a committer)."""
    committer = current()
    if committer is None:
        callback()
    else:
        committer.after_durable(callback)


def defer(key: object, write: Callable[[], None]) -> None:
    """Run ``write`` with the current group's commit (at once without a committer)."""
    committer = current()
    if committer is None:
        write()
    else:
        committer.defer(key, write)


async def durable() -> None:
    """Wait until every write issued so far on this loop is durable."""
    committer = current()
    if committer is not None:
        await committer.wait_durable()
