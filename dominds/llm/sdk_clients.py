"""The shared shape of the SDK generators, and one SDK client per endpoint and key for their life.

``SdkGenerator`` is what every network generator does for a generation: resolve where it goes and with
which key (refusing before any request when the key is missing or the parameters would be refused),
take the endpoint's client, stream (or, with ``streaming: false``, make one request), and let the
one retry policy (``retry.py``) decide what a failure means. A provider supplies the five parts that
differ: its client, its request, its streamed and its whole reply, and how its SDK's errors read.

One SDK client per provider endpoint and key, for the life of a generator (one per engine):
A client holds an HTTP connection pool: making one per generation paid a TCP and TLS handshake every
turn. The pool is keyed by base URL and key, so a key changed in the environment gets a new client
(keys are read at every generation), and is closed with the engine (``Providers.close``). Stop still
closes one generation's HTTP stream at once: cancelling a request closes its response, not the pool.

Every SDK client is built on the process's one TLS context (``dominds/tls.py``): a daemon whose
members use several providers, endpoints or keys held the same certificates once per client.

Tests inject the HTTP layer with ``http_client``: a factory of ``httpx2.AsyncClient`` (for example with
an ``httpx2.MockTransport``) that every client of the pool is built on.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import httpx2

from dominds.llm.base import GenerationReceiver, GenerationRequest, GenerationResult
from dominds.llm.message_reuse import encoded
from dominds.llm.retry import (
    AttemptFailure,
    EmptyReply,
    RetryPolicy,
    empty_reply_overflow,
    generate_with_retries,
    resolve_target,
)
from dominds.llm.wire_capture import with_capture
from dominds.tls import shared_tls_context

REQUEST_TIMEOUT = httpx2.Timeout(600.0, connect=10.0)
"""Long reads (a slow model thinking), but a server that does not answer the connect fails fast."""

HttpClientFactory = Callable[[], httpx2.AsyncClient]


def body_around(kwargs: dict[str, Any], name: str) -> tuple[bytes, bytes]:
    """The JSON of a request body made of an SDK call's keyword arguments (``extra_body`` merged in) with
    ``name`` last, but the value of ``name``: what goes before it and what after. Its value is the JSON of
    the conversation, encoded per message and kept (``message_reuse.py``) and joined into the body once,
    when the generation's request is prepared (``message_reuse.json_array``).

    Each generator posts its body through the client's ``post`` as content, not through the typed
    method: both SDKs walk every value of a typed request before sending it (the ``openai`` SDK matches
    each message against its TypedDicts, ~1,400 Python calls a message; the ``anthropic`` SDK copies the
    whole tree, ``extra_body`` included), so a turn of a dialog at 5,000 turns spent 5.5 s on the event
    loop before its request left (``tests/llm/test_long_requests.py``). Our bodies are plain JSON
    already, what the walk gives back: none of these types renames a key or formats a value.
    """
    body = {key: value for key, value in kwargs.items() if key != "extra_body"}
    extra = kwargs.get("extra_body")
    if isinstance(extra, dict):
        body.update(extra)
    body.pop(name, None)
    head = encoded(body)
    return head[:-1] + (b"," if body else b"") + encoded(name) + b":", b"}"


def sdk_http_client(sdk: Any, **options: Any) -> Any:
    """``sdk``'s (``openai``'s or ``anthropic``'s) own default HTTP client, with its limits, redirects and
    keep-alive, on the process's one TLS context; ``options`` (a ``timeout``) go to it as they are. Its
    requests are captured for the generation that sends them (``wire_capture.py``)."""
    return with_capture(sdk.DefaultAsyncHttpxClient(verify=shared_tls_context(), **options))


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
            http = with_capture(self._http_client()) if self._http_client is not None else None
            client = self._clients[key] = self._make(base_url, api_key, http)
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            with contextlib.suppress(Exception):  # closing must not fail a shutdown
                await client.close()


PreparedT = TypeVar("PreparedT")


class SdkGenerator(ABC, Generic[ClientT, PreparedT]):
    """A generator over an official SDK; subclasses say how their API differs (see the module docstring)."""

    default_base_url = ""
    keyless_api_key = ""
    """Sent when ``apiKeyEnvVar`` is null (a local server): the SDKs refuse to run without a key."""

    def __init__(self, retry_policy: RetryPolicy | None = None, http_client: HttpClientFactory | None = None) -> None:
        self.retry_policy = retry_policy or RetryPolicy()
        self.clients: ClientPool[ClientT] = ClientPool(self.make_client, http_client)

    async def generate(self, request: GenerationRequest, receiver: GenerationReceiver) -> GenerationResult:
        target = resolve_target(request, self.default_base_url)
        prepared = self.prepare(request, target.base_url)
        client = self.clients.get(target.base_url, target.secret or self.keyless_api_key)

        async def attempt(tracked: GenerationReceiver) -> GenerationResult:
            try:
                if request.streaming:
                    return await self.stream_once(client, prepared, tracked)
                return await self.create_once(client, prepared, tracked)
            except EmptyReply:
                overflow = empty_reply_overflow(request)
                if overflow is not None:  # not retried: the same prompt gets the same empty answer
                    raise overflow from None
                raise

        return await generate_with_retries(
            attempt,
            receiver,
            classify=self.classify,
            target=target,
            policy=self.retry_policy.configured(request.provider_config.get("retry")),
            on_retry=request.on_retry,
        )

    async def aclose(self) -> None:
        await self.clients.aclose()

    @abstractmethod
    def make_client(self, base_url: str, api_key: str, http_client: httpx2.AsyncClient | None) -> ClientT: ...

    @abstractmethod
    def prepare(self, request: GenerationRequest, base_url: str) -> PreparedT:
        """The request of one generation (raises ``ProviderRejected`` for parameters it would refuse)."""

    @abstractmethod
    async def stream_once(self, client: ClientT, prepared: PreparedT, receiver: GenerationReceiver) -> GenerationResult:
        """One streamed attempt."""

    @abstractmethod
    async def create_once(self, client: ClientT, prepared: PreparedT, receiver: GenerationReceiver) -> GenerationResult:
        """One attempt that does not stream (``streaming: false``); the reply is replayed to the receiver."""

    @abstractmethod
    def classify(self, exc: Exception) -> AttemptFailure | None:
        """A failed attempt in provider-neutral terms; ``None`` for what retrying cannot help."""
