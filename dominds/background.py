"""Background tasks that something owns and awaits (DESIGN §4.9: no task runs that nothing awaits).

A ``BackgroundTasks`` keeps a strong reference to each task it started (the event loop keeps only a weak
one), logs a task's failure once when it ends (never "Task exception was never retrieved"), and
``aclose()`` cancels what still runs and waits for it: the owner calls it when it closes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger("dominds")


class BackgroundTasks:
    def __init__(self, owner: str) -> None:
        self.owner = owner
        """Names the owner in log lines."""
        self._tasks: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Any:
        return iter(list(self._tasks))

    def spawn(self, job: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        return self.adopt(asyncio.get_running_loop().create_task(job, name=name))

    def adopt(self, task: asyncio.Task[Any]) -> asyncio.Task[Any]:
        """Own a task started elsewhere (one its starter stopped waiting for): awaited by ``aclose``."""
        if not task.done():
            self._tasks.add(task)
        task.add_done_callback(self._ended)
        return task

    def _ended(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        log_failure(self.owner, task)

    async def wait(self) -> None:
        """Wait for the tasks running now to end by themselves."""
        while self._tasks:
            await asyncio.wait(list(self._tasks))

    async def aclose(self) -> None:
        """Cancel every task and wait until each has ended."""
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)


def log_failure(owner: str, task: asyncio.Future[Any]) -> None:
    """Read how an ended task ended and log a failure (its exception is then retrieved: contained and
    logged, never left for the event loop to report as "Task exception was never retrieved")."""
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        name = task.get_name() if isinstance(task, asyncio.Task) else "a future"
        log.error("%s: background task %s failed", owner, name, exc_info=exc)


def contain(owner: str, task: asyncio.Task[Any]) -> asyncio.Task[Any]:
    """Have a failure of ``task`` logged when it ends, for an owner that keeps and awaits its tasks with
    ``asyncio.wait`` (which reads no result)."""
    task.add_done_callback(lambda ended: log_failure(owner, ended))
    return task
