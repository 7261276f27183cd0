"""Security checks of issue 7, end to end. Each names the promise it pins (docs/reliability.md §Security)."""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import signal
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from workspace_kit import write_workspace

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.server import auth
from dominds.store.course_records import FuncCallRecord, FuncResultRecord

SECRET = "sk-ant-SECRET-0123456789abcdef"


def _serve(rtws: Rtws, *flags: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "dominds", "-C", str(rtws.root), "serve", "--port", "0", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    for line in proc.stdout:
        found = re.search(r"(http://127\.0\.0\.1:\d+)/(\?auth=(\S+))?", line)
        if found:
            return proc, found.group(0)
        assert time.monotonic() < deadline
    raise AssertionError("daemon did not start")


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)


def _status(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


async def test_auth_is_on_by_default_and_daemon_json_is_private(tmp_path: Path) -> None:
    rtws = write_workspace(tmp_path / "ws", [])
    proc, url = _serve(rtws)
    try:
        assert "?auth=" in url, "the printed URL carries the token"
        base, token = url.split("/?auth=")
        assert _status(f"{base}/api/dialogs") == 401
        assert _status(f"{base}/api/dialogs", {"Authorization": "Bearer wrong"}) == 401
        assert _status(f"{base}/api/dialogs", {"Authorization": f"Bearer {token}"}) == 200
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(f"{base}/ws") as ws:
                await ws.receive()
                assert ws.close_code == 4401
            headers = {"Origin": "http://evil.example"}
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(f"{base}/ws", headers=headers, protocols=("dominds", f"dominds-auth.{token}"))
            assert refused.value.status == 403, "a foreign Origin is refused even with the token"
        mode = stat.S_IMODE(rtws.daemon_json.stat().st_mode)
        assert mode == 0o600
        assert json.loads(rtws.daemon_json.read_text())["token"] == token
    finally:
        _stop(proc)
    assert not rtws.daemon_json.exists(), "removed on exit"


def test_token_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    assert auth.tokens_match("abc", "abc") and not auth.tokens_match("abd", "abc")
    assert not auth.tokens_match("a", "abc"), "a length mismatch also goes through compare_digest"
    assert len(seen) == 3


def test_no_auth_is_refused_off_loopback(tmp_path: Path) -> None:
    rtws = write_workspace(tmp_path / "ws", [])
    result = subprocess.run(
        [sys.executable, "-m", "dominds", "-C", str(rtws.root), "serve", "--host", "0.0.0.0", "--port", "0", "--no-auth"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert result.returncode != 0 and "loopback" in result.stderr


TOOL_CALLS = [
    ("read_file", {"path": "../outside.txt"}),
    ("read_file", {"path": "tasks/t.tsk/goals.md"}),
    ("read_file", {"path": ".dialogs/run"}),
    ("list_dir", {"path": "/etc"}),
    ("create_new_file", {"path": "link/escape.txt", "content": "x"}),
    ("shell_cmd", {"command": "echo hi"}),
]


async def test_agent_tools_are_confined_and_shell_is_for_specialists(tmp_path: Path) -> None:
    responses: list[dict[str, Any]] = [
        {"agent": "researcher", "message": "probe", "stream": [{"func_call": {"name": n, "arguments": a}} for n, a in TOOL_CALLS]},
        {"agent": "researcher", "role": "tool", "response": "done"},
    ]
    rtws = write_workspace(tmp_path / "ws", responses)
    (tmp_path / "outside.txt").write_text("secret outside")
    (rtws.root / "link").symlink_to(tmp_path)
    team = rtws.team_yaml.read_text().replace(
        "  researcher: {name: Researcher, gofor: [finds facts]}",
        "  researcher: {name: Researcher, gofor: [finds facts], toolsets: [ws_mod, os]}",
    )
    rtws.team_yaml.write_text(team + "shell_specialists: [coder]\n")
    engine = Engine(rtws)
    await engine.start()
    try:
        root = engine.create_dialog("researcher", "tasks/t.tsk")
        engine.submit_user_message(root, "probe")
        await engine.wait_idle()
        course = root.files.read_course(1)
        # Calls run at once and each result is recorded when its call ends: put them back in call order.
        call_order = [r.id for r in course if isinstance(r, FuncCallRecord)]
        by_call = {r.id: r for r in course if isinstance(r, FuncResultRecord)}
        results = [by_call[call_id] for call_id in call_order if call_id in by_call]
        assert len(results) == len(TOOL_CALLS) and all(r.is_error for r in results)
        for result in results[:5]:
            assert "ACCESS_DENIED" in result.content, result.content
        assert "secret outside" not in json.dumps([r.content for r in results])
        assert not (tmp_path / "escape.txt").exists()
        assert results[5].name == "shell_cmd" and "Tool 'shell_cmd' not found" in results[5].content, (
            "non-specialists never get shell tools"
        )
    finally:
        await engine.close()


async def test_api_keys_never_reach_events_or_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llm_fakes import anthropic_error, running_fake_server

    async with running_fake_server() as fake:
        fake.queue(anthropic_error(401, "authentication_error", f"invalid x-api-key {SECRET}"))
        rtws = write_workspace(tmp_path / "ws", [])
        llm = rtws.llm_yaml.read_text() + (
            f"  fake:\n    name: Fake\n    apiType: anthropic\n    baseUrl: {fake.url}\n"
            "    apiKeyEnvVar: FAKE_ANTHROPIC_KEY\n    models: {claude-x: {context_length: 200000}}\n"
        )
        rtws.llm_yaml.write_text(llm)
        rtws.team_yaml.write_text(rtws.team_yaml.read_text().replace("provider: scripted\n  model: test", "provider: fake\n  model: claude-x"))
        monkeypatch.setenv("FAKE_ANTHROPIC_KEY", SECRET)
        events: list[dict[str, Any]] = []
        engine = Engine(rtws)
        engine.pubchan.subscribe(events.append, wants_all=True)
        caplog.set_level(logging.DEBUG)
        await engine.start()
        try:
            root = engine.create_dialog("lead", "tasks/t.tsk")
            engine.submit_user_message(root, "hello")
            # The first generation imports the Anthropic SDK and builds its client inside this wait,
            # which takes seconds on a loaded machine: wait for idle longer than the default.
            await engine.wait_idle(60)
            errors = [e for e in events if e["type"] == "stream_error_evt"]
            assert errors and "FAKE_ANTHROPIC_KEY" in errors[0]["error"], "the message names the variable to fix"
            everything = json.dumps(events) + caplog.text + json.dumps(engine.problems_payload())
            everything += "".join(p.read_text(errors="replace") for p in rtws.dialogs_dir.rglob("*") if p.is_file())
            assert SECRET not in everything
        finally:
            await engine.close()


async def test_shell_output_with_an_api_key_is_redacted_before_it_is_stored_or_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug: `shell_cmd` output containing an API key was stored and published unredacted (the security table
    says never). Every configured provider key is replaced by `[redacted: NAME]` in tool results."""
    responses: list[dict[str, Any]] = [
        {"agent": "coder", "message": "env", "stream": [{"func_call": {"name": "shell_cmd", "arguments": {"command": "env"}}}]},
        {"agent": "coder", "role": "tool", "response": "done"},
    ]
    rtws = write_workspace(tmp_path / "ws", responses)
    rtws.llm_yaml.write_text(
        rtws.llm_yaml.read_text()
        + "  other:\n    name: Other\n    apiType: openai\n    baseUrl: http://127.0.0.1:9\n"
        "    apiKeyEnvVar: OTHER_PROVIDER_KEY\n    models: {m: {context_length: 1000}}\n"
    )
    team = rtws.team_yaml.read_text().replace(
        "  coder: {name: Coder, gofor: [writes code]}", "  coder: {name: Coder, gofor: [writes code], toolsets: [os]}"
    )
    rtws.team_yaml.write_text(team + "shell_specialists: [coder]\n")
    monkeypatch.setenv("OTHER_PROVIDER_KEY", SECRET)
    events: list[dict[str, Any]] = []
    engine = Engine(rtws)
    engine.pubchan.subscribe(events.append, wants_all=True)
    await engine.start()
    try:
        root = engine.create_dialog("coder", "tasks/t.tsk")
        engine.submit_user_message(root, "env")
        await engine.wait_idle()
        [result] = [r for r in root.files.read_course(1) if isinstance(r, FuncResultRecord)]
        assert "[redacted: OTHER_PROVIDER_KEY]" in result.content and not result.is_error
        everything = json.dumps(events) + "".join(p.read_text(errors="replace") for p in rtws.dialogs_dir.rglob("*") if p.is_file())
        assert SECRET not in everything
    finally:
        await engine.close()
