"""`dominds serve` as a real process: daemon.json, one daemon per workspace, stale files, graceful stop."""

from __future__ import annotations

import json
import signal
import stat
import urllib.request
from pathlib import Path

from test_cli_kit import Daemon, dominds, every_state_file_parses, run_state, wait_until, write_workspace


def _health(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2) as response:
            return bool(json.load(response)["ok"])
    except OSError:
        return False


def test_serve_writes_daemon_json_and_refuses_a_second_daemon(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    daemon_json = ws / ".dialogs" / "daemon.json"
    with Daemon(ws) as daemon:
        assert daemon.token and daemon.url == f"http://127.0.0.1:{daemon.port}/?auth={daemon.token}"
        info = json.loads(daemon_json.read_text())
        assert (info["pid"], info["port"], info["token"]) == (daemon.pid, daemon.port, daemon.token)
        assert stat.S_IMODE(daemon_json.stat().st_mode) == 0o600
        assert _health(daemon.port)

        second = dominds(ws, "serve", "--port", "0")
        assert second.returncode == 1
        assert second.stderr.strip() == (
            f"dominds: already served by pid {daemon.pid} on port {daemon.port}: the panel is {daemon.url}"
        )
        assert "Traceback" not in second.stderr and second.stdout == ""
        code, out, _err = daemon.stop(signal.SIGTERM)
    assert code == 0 and "Dominds stopped" in out
    assert not daemon_json.exists(), "removed on exit (SIGTERM)"


def test_a_stale_daemon_json_from_a_killed_daemon_does_not_block_serve(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    killed = Daemon(ws)
    killed.stop(signal.SIGKILL)
    stale = json.loads((ws / ".dialogs" / "daemon.json").read_text())
    assert stale["pid"] == killed.pid, "SIGKILL left the file behind"

    status = dominds(ws, "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["daemon"] is None, "the lock shows it is stale"
    with Daemon(ws) as fresh:
        assert json.loads((ws / ".dialogs" / "daemon.json").read_text())["pid"] == fresh.pid
        assert _health(fresh.port)


def test_ctrl_c_while_streaming_leaves_every_file_parseable(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    with Daemon(ws) as daemon:
        new = dominds(ws, "new", "--taskdoc", "tasks/t.tsk", "slow", "--json")
        assert new.returncode == 0, new.stderr
        root = json.loads(new.stdout)["rootId"]
        course = ws / ".dialogs" / "run" / root / "course-001.jsonl"
        wait_until(lambda: course.exists() and "gen_start_record" in course.read_text())
        code, out, err = daemon.stop(signal.SIGINT)
    assert code == 0, err
    assert "Dominds stopped" in out and "Traceback" not in err
    assert not (ws / ".dialogs" / "daemon.json").exists()
    assert every_state_file_parses(ws / ".dialogs") >= 3
    latest = (ws / ".dialogs" / "run" / root / "latest.yaml").read_text()
    assert "generating: false" in latest and '"interrupted"' in latest, "stopped mid-stream, resumable"

    shown = dominds(ws, "show", root)
    assert shown.returncode == 0 and "── interrupted (daemon stopped) ──" in shown.stdout

    with Daemon(ws):  # the next serve resumes what the shutdown interrupted (3 s of paced reply)
        wait_until(lambda: run_state(ws, root) == "idle")
    shown = dominds(ws, "show", root)
    assert "── resumed ──" in shown.stdout and shown.stdout.count("x" * 30) >= 1


def test_no_auth_is_refused_off_loopback_and_a_bad_port_is_one_line(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    refused = dominds(ws, "serve", "--no-auth", "--host", "0.0.0.0")
    assert refused.returncode == 1 and "only allowed on a loopback address" in refused.stderr
    assert refused.stderr.count("\n") == 1
    bad = dominds(ws, "serve", "--port", "70000")
    assert bad.returncode == 1 and "--port must be between 0 and 65535" in bad.stderr
    # an address of no interface here (TEST-NET-1): the port is bound before anything else, and refused plainly
    unbindable = dominds(ws, "serve", "--host", "192.0.2.1", "--port", "0")
    assert unbindable.returncode == 1 and unbindable.stderr.startswith("dominds: cannot listen on 192.0.2.1:0: ")
    assert unbindable.stderr.count("\n") == 1 and not (ws / ".dialogs" / "daemon.json").exists()


def test_a_client_that_calls_the_api_as_soon_as_the_port_accepts_gets_real_answers(tmp_path: Path) -> None:
    """Bug: while the engine loaded, the port already accepted and answered every API call 503 "starting";
    a client that waits for the port (or for /api/health) and then creates a dialog got that 503. Now
    the call waits for the engine and gets its real answer."""
    import socket
    import subprocess
    import sys
    import time

    from test_cli_kit import cli_env

    ws = write_workspace(tmp_path / "ws")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "dominds", "serve", "--port", str(port), "--no-auth"], cwd=ws,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=cli_env())
    try:
        deadline = time.monotonic() + 30
        while True:  # as a client that only knows the port does: until it accepts
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, proc.stderr and proc.stderr.read()
                time.sleep(0.005)
        body = json.dumps({"taskDocPath": "tasks/t.tsk"}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/dialogs", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 201 and json.load(response)["rootId"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/dialogs", timeout=30) as response:
            assert len(json.load(response)["dialogs"]) == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
