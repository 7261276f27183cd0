"""Start-up as a user meets it: the first answer on the daemon's port is the full app's, with data.

The bug this pins: ``dominds serve`` answered its port from a second HTTP server (``server/starting.py``)
while the daemon loaded: ``GET /api/health`` said ``{"ready": false}`` and every other request was
relayed byte by byte to the full app once it served. The port "answered" at 0.1 s while the API served
data 1.3–1.6× later than the original's; a client had two servers to tell apart. Now one server, the
full app, serves the port from its first byte: a connection made while the daemon loads waits in the
kernel's accept queue and gets the full app's answer, data included, to its very first request.

The requests here are sent the moment the port accepts (it is bound within milliseconds of the spawn,
long before the app is imported), so the first answer is the one a user would meet while it starts.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from test_cli_kit import Daemon, cli_env, write_workspace


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _connect_when_listening(port: int, proc: subprocess.Popen[str], timeout: float = 30.0) -> socket.socket:
    """A connection made as soon as the port accepts (refused until the daemon binds it)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=60)
        except ConnectionRefusedError:
            assert proc.poll() is None, "serve exited before listening"
            assert time.monotonic() < deadline, "the port never accepted"
            time.sleep(0.002)  # polling a port that does not exist yet: nothing to wait on


def _request(conn: socket.socket, path: str, token: str) -> tuple[int, dict[str, str], bytes]:
    """One ``GET`` on a connection already open (made while the daemon starts), read to its end."""
    client = http.client.HTTPConnection("127.0.0.1", timeout=60)
    client.sock = conn  # the request goes on this very connection, not on a new one made later
    client.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    response = client.getresponse()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()


def test_the_first_answers_on_the_port_are_the_full_apps_with_data(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    with Daemon(ws) as earlier:  # a dialog to list, and the workspace's token
        request = urllib.request.Request(
            earlier.http + "/api/dialogs",
            data=json.dumps({"agentId": "lead", "taskDocPath": "tasks/t.tsk"}).encode(),
            headers={**earlier.headers(), "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            created = json.loads(response.read())
        token = earlier.token
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dominds", "-C", str(ws), "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    try:
        health_conn = _connect_when_listening(port, proc)
        listing_conn = socket.create_connection(("127.0.0.1", port), timeout=60)
        status, headers, body = _request(health_conn, "/api/health", token)
        health = json.loads(body)
        assert status == 200 and health["ok"] is True
        assert health.get("ready") is not False, "no starting phase: the first health answer is the full app's"
        assert "aiohttp" in headers.get("server", ""), f"answered by the full app, not a relay: {headers}"
        status, _headers, body = _request(listing_conn, "/api/dialogs", token)
        assert status == 200, body
        assert [d["rootId"] for d in json.loads(body)["dialogs"]] == [created["rootId"]], "data on the first request"
        health_conn.close()
        listing_conn.close()
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
