"""One live MCP session (official ``mcp`` SDK ``Client``) held open by its own task.

The SDK's client is an async context manager whose task group must be entered and left in the same
task, so each ``Connection`` runs a task that opens the client, signals that it is ready and waits
until asked to close. Calls come from the dialogs' tasks. A server that dies (the process exits, the
HTTP endpoint goes away) makes the pending and every later call fail with ``ServerGone``; the
supervisor in ``manager.py`` then starts a new connection after a back-off.
"""

from __future__ import annotations

import asyncio
import contextlib
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


def _transport(spec: ServerSpec, workspace: Path, environ: Any, stack: contextlib.AsyncExitStack) -> Any:
    """What ``mcp.Client`` connects to; secrets are resolved here and kept only in the transport.

    An HTTP client made here is closed by ``stack``.
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
        headers=headers, timeout=httpx2.Timeout(30.0, read=spec.timeout_s + 30), verify=shared_tls_context()
    )
    stack.push_async_callback(http.aclose)
    return streamable_http_client(spec.url, http_client=http)


Elicit = Callable[[Any, Any], Awaitable[Any]]
"""``(caller, ElicitRequestParams) -> ElicitResult``: the manager's answer to a server's elicitation."""


class Connection:
    """A started session to one server; ``label`` names it in messages (``server 'x'``).

    Elicitation: the client declares the capability; a server's request during a call goes to
    ``on_elicit`` with the caller of the one call in flight (``call_tool(caller=…)``). With no call or
    several at once on the session, nobody can be told apart: declined. While a person is being asked,
    the call's own timeout does not run (it starts afresh once the question is settled)."""

    def __init__(self, spec: ServerSpec, workspace: Path, environ: Any = None) -> None:
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

        try:
            async with contextlib.AsyncExitStack() as stack:
                transport = _transport(self.spec, self.workspace, self.environ, stack)
                # A stateful server keeps state per session, which only the handshake-era protocol has
                # (Mcp-Session-Id); from 2026-07-28 on the protocol is sessionless.
                mode = "legacy" if self.spec.stateful else "auto"
                client = await stack.enter_async_context(Client(transport, mode=mode, elicitation_callback=self._elicited))
                self.client = client
                self._ready.set()
                await self._close.wait()
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
        try:
            return await self._guarded(op(self.client), timeout_s)
        finally:
            self._in_flight -= 1
            self._callers.remove(caller)
            self._used_at = time.monotonic()

    async def _elicited(self, context: Any, params: Any) -> Any:
        import mcp_types

        if self.on_elicit is None or len(self._callers) != 1 or self._callers[0] is None:
            return mcp_types.ElicitResult(action="decline")
        self._asking += 1
        try:
            return await self.on_elicit(self._callers[0], params)
        except Exception:  # whatever went wrong on our side, the server hears a decline, never a hang
            return mcp_types.ElicitResult(action="decline")
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
