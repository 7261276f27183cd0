"""While ``dominds serve`` starts, the requests the front answers go before the engine's imports.

Used by ``dominds serve`` only (cli/cmd_serve.py): its worker threads import the watcher, then the engine
and the API, while the front application already answers (server/front.py).
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from dominds.server.guard import Handler


class ImportGate:
    """Lets the front's requests go first while a worker thread imports the engine's modules.

    A thread importing modules holds the GIL in stretches the interpreter cannot cut short (a module's
    classes and validators are built in C), and each of the many times a request's work gives the GIL up
    (a file's ``stat``, an SQLite step) it waited for the next one: an early listing took 60-100 ms
    instead of 5 ms (docs/performance.md, "Start-up"). So while an importer runs (``importing``), each
    ``import`` statement of that thread first waits while the front answers a request: at most
    ``MAX_HOLD_SECONDS`` per stretch of requests, because a request may itself need a module the
    importer is in the middle of (it would wait for the importer's lock, the importer for the request).
    Waiting at the ``import`` statement, not in a finder, holds none of the interpreter's import locks
    but those of the modules being executed. Other threads never wait; ``builtins.__import__`` is
    restored once the importer is done."""

    MAX_HOLD_SECONDS = 0.1

    def __init__(self) -> None:
        self._importer: int | None = None
        self._clear = threading.Event()
        self._clear.set()
        self._requests = 0
        self._closed_at = 0.0
        self._import: Callable[..., Any] = builtins.__import__
        self._starting = True
        """Until ``started``: requests are counted, from before the first importer runs."""

    def importing(self, function: Callable[[], None]) -> Callable[[], None]:
        """``function`` run as the importer, in the worker thread that calls the result (one at a time)."""

        def run() -> None:
            self._importer = threading.get_ident()
            self._import = builtins.__import__
            builtins.__import__ = self._gated_import
            try:
                function()
            finally:
                builtins.__import__ = self._import
                self._importer = None

        return run

    def started(self) -> None:
        """The start is over: requests are no longer counted."""
        self._starting = False

    def _gated_import(self, *args: Any, **kwargs: Any) -> Any:
        if not self._clear.is_set() and threading.get_ident() == self._importer:
            self._clear.wait(max(0.0, self._closed_at + self.MAX_HOLD_SECONDS - time.monotonic()))
        return self._import(*args, **kwargs)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not self._starting:  # nothing to hold back any more
            return await handler(request)
        if not self._requests:
            self._closed_at = time.monotonic()
            self._clear.clear()
        self._requests += 1
        try:
            return await handler(request)
        finally:
            self._requests -= 1
            if not self._requests:
                self._clear.set()
