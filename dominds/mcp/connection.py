"""One live MCP session (official ``mcp`` SDK ``Client``) held open by its own task.

The SDK's client is an async context manager whose task group must be entered and left in the same
task, so each ``Connection`` runs a task that opens the client, signals that it is ready and waits
until asked to close.

Which protocol: the one on which the server can ask back (elicitation, sampling) whatever way it is
written. The 2026-07-28 protocol forbids server-initiated requests: there a server asks through an
``InputRequiredResult`` (FastMCP's ``Resolve(...)``/``Elicit``), and a server written with
``ctx.elicit``/``create_message`` fails with "no back-channel". The handshake-era protocol carries
both styles wherever it has a back-channel: over stdio always, over HTTP when the server keeps
sessions (``Mcp-Session-Id``) and answers on an event stream. So a connection first tries the
handshake; it goes on with ``auto`` (the newest protocol the server speaks) when the server refuses
the handshake, or over HTTP when that session has no back-channel (a stateless server, JSON answers).

Calls come from the dialogs' tasks. A server that dies (the process exits, the HTTP endpoint goes
away) makes the pending and every later call fail with ``ServerGone``; the pool (``pool.py``) then
starts a new connection after a back-off.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from dominds.background import BackgroundTasks
from dominds.mcp.config import SecretRef, ServerSpec, resolve

CONNECT_TIMEOUT_S = 30.0
CANCEL_GRACE_S = 2.0
"""How long a cancelled call gets to tell the server (``notifications/cancelled``) before it is left."""
IDLE_CHECK_S = 2.0
"""A call on a connection idle for longer first pings the server: one that died while idle (its
process exited, its endpoint went away) is then found before the call is sent, so the call runs on a
fresh connection instead of failing as one that "may or may not have run"."""
PING_TIMEOUT_S = 5.0


class ServerGone(Exception):
    """The server closed the connection or its process exited."""


class ServerUnreachable(Exception):
    """The server could not be started or connected to."""


class ServerGoneBeforeCall(ServerGone):
    """The server was found gone before the call was sent: the call did not run."""


class CallTimeout(Exception):
    """The server did not answer a call in time."""


def secret_values(spec: ServerSpec, environ: Any) -> list[str]:
    """The values of the server's ``{env: NAME}`` references (to redact them from what it says)."""
    values = []
    for _key, value in (*spec.env, *spec.headers):
        if isinstance(value, SecretRef) and value.env in environ and len(environ[value.env]) >= 4:
            values.append(environ[value.env])
    return sorted(set(values), key=len, reverse=True)


class _Handshake:
    """What the first HTTP answer said (the ``initialize`` one on a handshake-era connection)."""

    def __init__(self) -> None:
        self.seen = False
        self.back_channel = False

    async def on_response(self, response: Any) -> None:
        if self.seen or response.request.method != "POST":
            return
        self.seen = True
        kind = response.headers.get("content-type", "")
        self.back_channel = bool(response.headers.get("mcp-session-id")) and kind.startswith("text/event-stream")


def _transport(
    spec: ServerSpec, workspace: Path, environ: Any, stack: contextlib.AsyncExitStack, handshake: _Handshake
) -> Any:
    """What ``mcp.Client`` connects to; secrets are resolved here and kept only in the transport.

    An HTTP client made here is closed by ``stack``; ``handshake`` hears its first answer.
    """
    if spec.transport == "stdio":
        from mcp import StdioServerParameters

        env, missing = resolve(dict(spec.env), environ)
        if missing:
            raise ServerUnreachable(f"environment variable(s) not set: {', '.join(missing)}")
        cwd = (workspace / spec.cwd) if spec.cwd else workspace
        assert spec.command is not None
        return StdioServerParameters(command=spec.command, args=list(spec.args), env=env or None, cwd=str(cwd))
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from dominds.tls import shared_tls_context

    headers, missing = resolve(dict(spec.headers), environ)
    if missing:
        raise ServerUnreachable(f"environment variable(s) not set: {', '.join(missing)}")
    assert spec.url is not None
    http = httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(30.0, read=spec.timeout_s + 30),
        verify=shared_tls_context(),
        event_hooks={"response": [handshake.on_response]},
    )
    stack.push_async_callback(http.aclose)
    return streamable_http_client(spec.url, http_client=http)


Elicit = Callable[[Any, Any], Awaitable[Any]]
"""``(caller, ElicitRequestParams) -> ElicitResult``: the manager's answer to a server's elicitation."""

_caller: contextvars.ContextVar[Any] = contextvars.ContextVar("mcp_caller", default=None)
"""The caller of the request this task runs. On the 2026-07-28 protocol the SDK answers a server's
``InputRequiredResult`` inside the call's own task, so the asker is known even with several calls in
flight; a handshake-era request arrives on the session's reader task, where it is unset."""

HANDSHAKE = "legacy"
"""The SDK's name for the handshake-era protocol (``initialize``), tried first (see the module doc)."""


class Connection:
    """A started session to one server; ``label`` names it in messages (``server 'x'``).

    Elicitation: the client declares the capability; a server's request during a call goes to
    ``on_elicit`` with the caller of that call (``request(caller=…)``): on the 2026-07-28 protocol the
    call's own, on a handshake-era session the one call in flight. With no call, or several at once on
    a handshake-era session, nobody can be told apart: declined. While a person is being asked, the
    call's own timeout does not run (it starts afresh once the question is settled).

    ``mode`` is the protocol to try first (``HANDSHAKE`` or ``auto``; what an earlier connection to
    the server settled on); once started it is the one in use."""

    def __init__(self, spec: ServerSpec, workspace: Path, environ: Any = None, mode: str = HANDSHAKE) -> None:
        self.spec = spec
        self.workspace = workspace
        self.environ = os.environ if environ is None else environ
        self.client: Any = None
        self.error: str | None = None
        self._ready = asyncio.Event()
        self._close = asyncio.Event()
        self._gone = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._secrets = secret_values(spec, self.environ)
        self._used_at = time.monotonic()
        self._in_flight = 0
        self._callers: list[Any] = []
        self._asking = 0
        self.on_elicit: Elicit | None = None
        self.on_sample: Elicit | None = None
        """``(caller, CreateMessageRequestParams) -> CreateMessageResult | ErrorData`` (sampling)."""
        self.mode = mode
        self._leftovers = BackgroundTasks(f"mcp {spec.id}")
        """Requests cancelled for a stopped caller that outlived their grace: ``close`` awaits them."""

    def redact(self, text: str) -> str:
        """``text`` with the values of the server's secrets replaced, so they never reach records or logs."""
        for value in self._secrets:
            text = text.replace(value, "[secret]")
        return text

    @property
    def alive(self) -> bool:
        return self.client is not None and not self._gone.is_set()

    async def start(self) -> None:
        """Connect; raises ``ServerUnreachable`` with the reason (secrets never appear in it)."""
        self._task = asyncio.create_task(self._hold(), name=f"mcp-{self.spec.id}")
        try:
            await asyncio.wait_for(self._ready.wait(), CONNECT_TIMEOUT_S)
        except TimeoutError:
            await self.close()
            raise ServerUnreachable(f"no answer within {CONNECT_TIMEOUT_S:g}s") from None
        except asyncio.CancelledError:  # the caller was stopped while connecting: no session is left behind
            self._close.set()
            if not await _cancel_and_wait(self._task, CANCEL_GRACE_S):
                self._leftovers.adopt(self._task)
            raise
        if not self.alive:
            await self.close()
            raise ServerUnreachable(self.error or "the connection closed at once")

    async def _hold(self) -> None:
        from mcp import Client

        modes = [HANDSHAKE, "auto"] if self.mode == HANDSHAKE else ["auto"]
        try:
            for mode in modes:
                async with contextlib.AsyncExitStack() as stack:
                    handshake = _Handshake()
                    transport = _transport(self.spec, self.workspace, self.environ, stack, handshake)
                    try:
                        client = await stack.enter_async_context(
                            Client(
                                transport,
                                mode=mode,
                                elicitation_callback=self._elicited,
                                sampling_callback=self._sampled,
                            )
                        )
                    except Exception as exc:
                        if mode == HANDSHAKE and _is_refusal(exc):
                            continue  # a server of the newest protocol only: go on with it
                        raise
                    if mode == HANDSHAKE and self.spec.transport != "stdio" and not handshake.back_channel:
                        continue  # leaving the stack ends this session; the newest protocol can ask back
                    self.mode, self.client = mode, client
                    self._ready.set()
                    await self._close.wait()
                    return
        except ServerUnreachable as exc:
            self.error = self.redact(str(exc))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self.error = self.redact(_describe(exc))
        finally:
            self._gone.set()
            self._ready.set()

    async def list_tools(self) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(100):
            page = await self._guarded(self.client.list_tools(cursor=cursor), CONNECT_TIMEOUT_S)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout_s: float, caller: Any = None) -> Any:
        return await self.request(lambda client: client.call_tool(name, arguments), timeout_s, caller)

    async def request(self, op: Callable[[Any], Awaitable[Any]], timeout_s: float, caller: Any = None) -> Any:
        """``op(client)`` (a tool call, a resource read…) with the idle check, the caller known to
        elicitation and the guard against a server that goes away or takes too long."""
        if not self._in_flight and time.monotonic() - self._used_at > IDLE_CHECK_S:
            await self._check_alive()
        self._in_flight += 1
        self._callers.append(caller)
        token = _caller.set(caller)
        try:
            return await self._guarded(op(self.client), timeout_s)
        finally:
            _caller.reset(token)
            self._in_flight -= 1
            self._callers.remove(caller)
            self._used_at = time.monotonic()

    async def _elicited(self, context: Any, params: Any) -> Any:
        import mcp_types

        decline = mcp_types.ElicitResult(action="decline")
        return await self._asked_back(self.on_elicit, params, decline, decline)

    async def _sampled(self, context: Any, params: Any) -> Any:
        import mcp_types

        refused = mcp_types.ErrorData(
            code=mcp_types.INVALID_REQUEST, message="sampling refused: no call of a dialog is waiting on it"
        )
        return await self._asked_back(self.on_sample, params, refused, None)

    async def _asked_back(self, handler: Elicit | None, params: Any, nobody: Any, on_failure: Any) -> Any:
        """``handler(caller, params)`` for a request the server sends during a call (elicitation,
        sampling); ``nobody`` when the call cannot be told; ``on_failure`` (or an error naming the
        failure) when the handler fails. The call's own clock stops meanwhile."""
        import mcp_types

        caller = _caller.get() or (self._callers[0] if len(self._callers) == 1 else None)
        if handler is None or caller is None:
            return nobody
        self._asking += 1
        try:
            return await handler(caller, params)
        except Exception as exc:  # whatever went wrong on our side, the server hears an answer, never a hang
            if on_failure is not None:
                return on_failure
            return mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR, message=f"{type(exc).__name__}: {exc}")
        finally:
            self._asking -= 1

    async def _check_alive(self) -> None:
        """Ping; ``ServerGoneBeforeCall`` when the connection is closed. A slow answer, or a server that
        refuses pings, counts as alive: the call then goes on as before."""
        from mcp.shared.exceptions import MCPError

        try:
            with warnings.catch_warnings():  # ping is legacy-mode only; a modern server says "Method not found"
                warnings.simplefilter("ignore")
                await self._guarded(self.client.send_ping(), PING_TIMEOUT_S)
        except ServerGone as exc:
            self._mark_gone(str(exc))
            raise ServerGoneBeforeCall(str(exc)) from exc
        except (CallTimeout, MCPError):
            return
        except Exception as exc:  # the transport failed: nothing answers there any more
            reason = self.redact(_describe(exc))
            self._mark_gone(reason)
            raise ServerGoneBeforeCall(reason) from exc
        self._used_at = time.monotonic()

    async def _guarded(self, coro: Any, timeout_s: float) -> Any:
        """Await ``coro``, but give up when the server goes away or time is up."""
        if not self.alive:
            coro.close()
            raise ServerGone(self.error or "the server is not running")
        call = asyncio.ensure_future(coro)
        gone = asyncio.ensure_future(self._gone.wait())
        try:
            while True:
                done, _ = await asyncio.wait({call, gone}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
                if done or not self._asking:
                    break  # while a person is asked (elicitation), the call's clock does not run
        except asyncio.CancelledError:
            # The caller was cancelled (its dialog was stopped): the call must not outlive it. Cancelling
            # the SDK's request sends the protocol's ``notifications/cancelled`` to the server.
            if not await _cancel_and_wait(call, CANCEL_GRACE_S):
                self._leftovers.adopt(call)  # still ending after the grace: ``close`` awaits it
            raise
        finally:
            gone.cancel()
        if call in done:
            try:
                return call.result()
            except Exception as exc:
                if _is_connection_closed(exc):
                    self._mark_gone(self.redact(_describe(exc)))
                    raise ServerGone(self.redact(_describe(exc))) from exc
                raise
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await call
        if gone in done or self._gone.is_set():
            raise ServerGone(self.error or "the server went away")
        raise CallTimeout(f"no answer within {timeout_s:g}s")

    def _mark_gone(self, reason: str) -> None:
        self.error = self.error or reason
        self._gone.set()
        self._close.set()

    async def close(self) -> None:
        self._close.set()
        if self._task is not None and not self._task.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            except (TimeoutError, Exception):
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._task
        await self._leftovers.aclose()


async def _cancel_and_wait(task: asyncio.Future[Any], grace_s: float) -> bool:
    """Cancel ``task`` and give it ``grace_s`` to end (it may send a cancellation on its way out); False
    when it is still running after that (its owner must then keep and await it)."""
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=grace_s)
    if task in done and not task.cancelled():
        task.exception()  # retrieved: whatever it ended with is of no interest to a cancelled caller
    return task in done


def _is_refusal(exc: BaseException) -> bool:
    """The server answered the handshake with an error (it speaks only a newer protocol), as opposed to
    not answering at all (no process, nothing listening), where trying again is of no use."""
    from mcp.shared.exceptions import MCPError

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return isinstance(exc, MCPError) and not _is_connection_closed(exc)


def _is_connection_closed(exc: BaseException) -> bool:
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, MCPError):
        from mcp_types import CONNECTION_CLOSED

        return bool(getattr(exc, "code", None) == CONNECTION_CLOSED or "closed" in str(exc).lower())
    return isinstance(exc, (ConnectionError, EOFError, BrokenPipeError))


def _describe(exc: BaseException) -> str:
    """One line for a failure; exception groups are unwrapped to their first leaf."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
