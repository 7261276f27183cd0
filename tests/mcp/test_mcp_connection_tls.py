"""Sessions to an HTTP MCP server are made on the process's one TLS context (``dominds/tls.py``).

Bug pinned here: each session's ``httpx2`` client built a TLS context of its own, parsing the
system's CA certificates again (~0.8 MiB and a few milliseconds each), and a stateful server keeps a
session per dialog that uses it, for up to half an hour idle: memory grew with the dialogs that had
called the server, even once they were not being driven.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import httpcore2
import pytest
from mcp_kit import after_tool, call, fake_http_server, http_server_yaml, mcp_workspace

from dominds.driver.engine import Engine


async def test_every_session_to_an_http_server_shares_one_tls_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    responses = [call("keep", "remember", {"value": "apple"}), after_tool("remembered", "Kept.")]
    with fake_http_server(stateless=False) as url:
        rtws = mcp_workspace(tmp_path / "ws", responses, http_server_yaml("st", url, stateful="true"), "st")
        engine = Engine(rtws)
        await engine.start()
        try:
            first = engine.create_dialog("lead", "tasks/t.tsk")
            engine.submit_user_message(first, "keep")
            await engine.wait_idle(timeout=60)
            # the first session made what a process makes once (the shared context); count what follows
            made: list[ssl.SSLContext] = []
            default_context = httpcore2.default_ssl_context

            def counted(*args: Any, **kwargs: Any) -> ssl.SSLContext:
                made.append(default_context(*args, **kwargs))
                return made[-1]

            monkeypatch.setattr(httpcore2, "default_ssl_context", counted)
            more = [engine.create_dialog("lead", "tasks/t.tsk") for _ in range(3)]
            for dialog in more:
                engine.submit_user_message(dialog, "keep")
            await engine.wait_idle(timeout=60)
            assert set(engine.config.mcp.servers["st"].leases) == {d.self_id for d in [first, *more]}, "a session each"
            assert made == [], "three more sessions, no more TLS contexts"
        finally:
            await engine.close()
