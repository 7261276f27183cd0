"""A drive's cancel scope (DESIGN §4.9): everything one drive runs is cancelled as one.

A drive (driver/drive.py) runs its generations as the one *work task* of its ``DriveScope``. Everything
a generation starts runs inside that task and is awaited by it: the provider stream, the function tools
(``run_together`` below: a ``shell_cmd`` kills its process group when cancelled, an MCP call sends the
protocol's ``notifications/cancelled``), the tellask dispatches. Stop cancels the work task, so all of it
is cancelled at once; each piece records itself on the way out (the generation ``interrupted``, each
running tool call interrupted, "may or may not have taken effect"). The drive itself is not cancelled:
it then settles the dialog (``interrupted{reason}``) and ends, so the dialog is idle within a second
whatever was running.

``DriveScopes`` holds an engine's open scopes, one per dialog with a drive in flight (opened when the
scheduler starts the drive, before it waits for the dialog's mutex, so a Stop in that window counts):
Stop cancels one; shutdown cancels all, and the scheduler waits until every drive has written its final
records before the workspace lock is released.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Iterable, Iterator
from typing import Any, TypeVar

log = logging.getLogger("dominds.engine")

T = TypeVar("T")


class DriveScope:
    """The cancel scope of one drive of one dialog."""

    def __init__(self, self_id: str) -> None:
        self.self_id = self_id
        self.reason: str | None = None
        """Why the scope was cancelled (``user_stop``, ``server_shutdown``, …); None while it runs."""
        self._work: asyncio.Task[Any] | None = None

    @property
    def cancelled(self) -> bool:
        return self.reason is not None

    def cancel(self, reason: str) -> None:
        """Cancel everything the drive runs (idempotent; the first reason is kept)."""
        if self.reason is None:
            self.reason = reason
        if self._work is not None and not self._work.done():
            self._work.cancel(f"drive of {self.self_id} cancelled: {reason}")

    async def run(self, work: Coroutine[Any, Any, T]) -> T | None:
        """Run ``work`` as the scope's task and return its result; None when the scope was cancelled.

        Cancelling the task that awaits this (a hard shutdown) cancels ``work`` too and propagates."""
        if self.reason is not None:
            work.close()
            return None
        task = asyncio.create_task(work, name=f"drive-work-{self.self_id}")
        self._work = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the drive itself is being cancelled: not ours to swallow
            if self.reason is None:
                self.reason = "system_stop"  # cancelled from inside, without a Stop: still an interruption
            return None
        finally:
            self._work = None


class DriveScopes:
    """The open scopes of one engine, by the selfId of the dialog being driven."""

    def __init__(self) -> None:
        self._open: dict[str, DriveScope] = {}

    def __contains__(self, self_id: object) -> bool:
        return self_id in self._open

    def __len__(self) -> int:
        return len(self._open)

    @contextlib.contextmanager
    def open(self, self_id: str) -> Iterator[DriveScope]:
        scope = DriveScope(self_id)
        self._open[self_id] = scope
        try:
            yield scope
        finally:
            if self._open.get(self_id) is scope:
                del self._open[self_id]

    def get(self, self_id: str) -> DriveScope | None:
        return self._open.get(self_id)

    def cancel(self, self_id: str, reason: str) -> bool:
        """Cancel the drive of ``self_id``; False when none is in flight."""
        scope = self._open.get(self_id)
        if scope is None:
            return False
        scope.cancel(reason)
        return True

    def cancel_all(self, reason: str) -> int:
        for scope in list(self._open.values()):
            scope.cancel(reason)
        return len(self._open)


async def run_together(jobs: Iterable[Coroutine[Any, Any, Any]]) -> None:
    """Run ``jobs`` concurrently as siblings: when one fails the others are cancelled, and nothing is left
    running when this returns or raises (``asyncio.gather`` left the siblings writing the caller's files
    after the drive had ended). The first failure is raised as itself, not as an exception group, so the
    drive's handlers (a refused write pauses the dialog) see what they expect."""
    try:
        async with asyncio.TaskGroup() as group:
            for job in jobs:
                group.create_task(job)
    except BaseExceptionGroup as failed:
        first = _first_leaf(failed)
        for other in _leaves(failed):
            if other is not first:
                log.error("a sibling of a failed job also failed", exc_info=other)
        raise first from None


def _leaves(group: BaseException) -> list[BaseException]:
    if isinstance(group, BaseExceptionGroup):
        return [leaf for exc in group.exceptions for leaf in _leaves(exc)]
    return [group]


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    return _leaves(group)[0]
