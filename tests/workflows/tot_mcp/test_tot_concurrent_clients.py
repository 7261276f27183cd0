"""Two MCP clients on one ToT session at once: two `dominds tot-mcp` processes over stdio, one sessions dir.

The bug: two clients proposing to one session at once both got OK and one proposal was silently lost
(7 of 10 races): each process loaded the session file, added its node and wrote the file back, the
last write winning. Changes now hold the session's lock from load to save.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from test_tot_server import REPO_ROOT

from dominds.tools.tot.sessions import SessionStore, TotService

CALLS = 30


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def test_two_clients_proposing_at_once_lose_nothing(tmp_path: Path) -> None:
    sessions = tmp_path / "s"
    sid = TotService(SessionStore(sessions)).start("Why is CI flaky?", 1)["sessionId"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DOMINDS_FSYNC": "0"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "dominds", "tot-mcp", "--sessions-dir", str(sessions)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path,
        )  # fmt: skip
        for _ in range(2)
    ]
    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "race", "version": "0"}}
        for proc in procs:  # both servers up and initialised before either proposes: the calls overlap
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(_line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
            proc.stdin.flush()
        for proc in procs:
            assert proc.stdout is not None and json.loads(proc.stdout.readline())["id"] == 0
        for n, proc in enumerate(procs):
            assert proc.stdin is not None
            batch = [_line({"jsonrpc": "2.0", "method": "notifications/initialized"})]
            for i in range(1, CALLS + 1):
                node = {"id": f"R1.{'PQ'[n]}{i}", "parent": None, "title": "t", "plannedAction": "a"}
                params = {"name": "tot_propose", "arguments": {"sessionId": sid, "nodes": [node]}}
                batch.append(_line({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}))
            proc.stdin.write(b"".join(batch))
            proc.stdin.flush()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.close()
        replies = [[json.loads(line) for line in proc.stdout.read().splitlines() if line.strip()] for proc in procs if proc.stdout]
        for proc in procs:
            proc.wait(60)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for answered in replies:
        assert sorted(r["id"] for r in answered) == list(range(1, CALLS + 1))
        assert not any(r["result"].get("isError") for r in answered), answered
    pending = sorted(SessionStore(sessions).load(sid).pending)
    assert len(pending) == 2 * CALLS, f"{2 * CALLS - len(pending)} accepted proposals were lost"
