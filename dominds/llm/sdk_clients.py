"""One SDK client per provider endpoint and key, for the life of a generator (one per engine).

A client holds an HTTP connection pool: making one per generation paid a TCP and TLS handshake every
turn. The pool is keyed by base URL and key, so a key changed in the environment gets a new client
(keys are read at every generation), and is closed with the engine (``Providers.close``). Stop still
closes one generation's HTTP stream at once: cancelling a request closes its response, not the pool.

Tests inject the HTTP layer with ``http_client``: a factory of ``httpx2.AsyncClient`` (for example with
an ``httpx2.MockTransport``) that every client of the pool is built on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import httpx2

REQUEST_TIMEOUT = httpx2.Timeout(600.0, connect=10.0)
"""Long reads (a slow model thinking), but a server that does not answer the connect fails fast."""

HttpClientFactory = Callable[[], httpx2.AsyncClient]


class SdkClient(Protocol):
    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=SdkClient)


class ClientPool(Generic[ClientT]):
    """SDK clients by (base URL, key); ``make(base_url, key, http_client)`` builds one."""

    def __init__(
        self,
        make: Callable[[str, str, httpx2.AsyncClient | None], ClientT],
        http_client: HttpClientFactory | None = None,
    ) -> None:
        self._make = make
        self._http_client = http_client
        self._clients: dict[tuple[str, str, int], ClientT] = {}

    def get(self, base_url: str, api_key: str) -> ClientT:
        # Keyed by event loop too: a client's connections belong to the loop that opened them (tests
        # and `dominds run` may run several loops in one process, one after the other).
        key = (base_url, api_key, id(asyncio.get_running_loop()))
        client = self._clients.get(key)
        if client is None:
            http = self._http_client() if self._http_client is not None else None
            client = self._clients[key] = self._make(base_url, api_key, http)
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            with contextlib.suppress(Exception):  # closing must not fail a shutdown
                await client.close()
