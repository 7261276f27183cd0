"""`dominds tot-mcp --http`: streamable HTTP with the same auth rules as `dominds serve` (token,
loopback without one, foreign Origin refused), driven by the SDK's real client."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_kit import HttpCommand

INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}  # fmt: skip
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_tot_mcp_over_http_needs_the_token_and_keeps_sessions_in_the_user_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with HttpCommand(tmp_path, "tot-mcp", "--http", "--port", "0", env={"XDG_DATA_HOME": str(data)}) as served:
        assert served.token
        async with httpx2.AsyncClient(headers=served.headers(), timeout=30) as http:
            async with Client(streamable_http_client(served.url, http_client=http)) as client:
                started = await client.call_tool("tot_start", {"query": "why is the sky blue?", "minRoots": 2})
                session_id = json.loads(started.content[0].text)["sessionId"]
        assert (data / "dominds" / "tot" / f"{session_id}.json").is_file()
        async with httpx2.AsyncClient(timeout=30) as http:
            assert (await http.post(served.url, json=INIT, headers=ACCEPT)).status_code == 401
            wrong = {**ACCEPT, "Authorization": "Bearer nope"}
            assert (await http.post(served.url, json=INIT, headers=wrong)).status_code == 401
            foreign = {**ACCEPT, **served.headers(), "Origin": "http://evil.example"}
            assert (await http.post(served.url, json=INIT, headers=foreign)).status_code == 403
            good = {**ACCEPT, **served.headers()}
            assert (await http.post(served.url, json=INIT, headers=good)).status_code == 200


async def test_no_auth_answers_only_loopback_host_names(tmp_path: Path) -> None:
    with HttpCommand(tmp_path, "tot-mcp", "--http", "--port", "0", "--no-auth", "--sessions-dir", str(tmp_path / "s")) as served:
        assert served.token is None
        async with httpx2.AsyncClient(timeout=30) as http:
            assert (await http.post(served.url, json=INIT, headers=ACCEPT)).status_code == 200
            rebinding = {**ACCEPT, "Host": "attacker.example"}
            assert (await http.post(served.url, json=INIT, headers=rebinding)).status_code == 403


def test_no_auth_is_refused_on_a_non_loopback_address(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "dominds", "tot-mcp", "--http", "--host", "0.0.0.0", "--port", "0", "--no-auth"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode != 0 and "only allowed on a loopback address" in done.stderr
