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
        task = asyncio.get_running_loop().create_task(job, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._ended)
        return task

    def _ended(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()  # retrieved here: contained and logged, never left for the loop to report
        if exc is not None:
            log.error("%s: background task %s failed", self.owner, task.get_name(), exc_info=exc)

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
