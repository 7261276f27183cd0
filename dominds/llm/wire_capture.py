"""What a generation sent to its provider, as the bytes went out (issue 35: "what the model saw").

Every SDK client is built on an HTTP client with ``capture_hook`` among its request hooks
(``sdk_clients.py``). The driver opens ``capturing()`` around one generation; the hook, called by the
SDK's HTTP client inside that generation's task, keeps the request exactly as it is sent: method, URL
and body bytes, and tells the driver as it goes out. Each attempt of the retry window sends the request again, so the capture also counts
attempts. A context variable carries the capture: SDK clients are shared by every dialog of the
engine, and each generation runs in its own task.

Never kept: headers (the API key travels there), and the URL's query and user info (some gateways
take a key in the query string).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx2


@dataclass(frozen=True)
class SentRequest:
    method: str
    url: str
    """Scheme, host, port and path: no query, no user info."""
    body: bytes


@dataclass
class WireCapture:
    """The requests one generation sent: the last one, and how many attempts there were."""

    on_sent: Callable[[SentRequest, int], None] | None = None
    """Told of each attempt as it goes out (the request and the attempt's number, from 1): the driver records
    it then, so a generation cut by a crash still shows what it sent."""
    last: SentRequest | None = None
    attempts: int = 0

    def note(self, sent: SentRequest) -> None:
        self.last = sent
        self.attempts += 1
        if self.on_sent is not None:
            self.on_sent(sent, self.attempts)


_current: ContextVar[WireCapture | None] = ContextVar("dominds_wire_capture", default=None)


@contextlib.contextmanager
def capturing(on_sent: Callable[[SentRequest, int], None] | None = None) -> Iterator[WireCapture]:
    """Capture what the provider calls made in this task (and the tasks it starts) send."""
    capture = WireCapture(on_sent)
    token = _current.set(capture)
    try:
        yield capture
    finally:
        _current.reset(token)


def note_sent(method: str, url: str, body: bytes) -> None:
    """Record a request of a provider that is not an HTTP client's (the scripted provider)."""
    capture = _current.get()
    if capture is not None:
        capture.note(SentRequest(method, url, body))


async def capture_hook(request: httpx2.Request) -> None:
    """An HTTP client's request hook: keeps the request when a generation is capturing."""
    capture = _current.get()
    if capture is None:
        return
    body = await request.aread()
    url = request.url.copy_with(query=None, fragment=None, username=None, password=None)
    capture.note(SentRequest(request.method, str(url), bytes(body)))


def with_capture(client: httpx2.AsyncClient) -> httpx2.AsyncClient:
    """``client`` with ``capture_hook`` among its request hooks (once)."""
    hooks = client.event_hooks
    if capture_hook not in hooks["request"]:
        client.event_hooks = {**hooks, "request": [*hooks["request"], capture_hook]}
    return client
