"""`dominds check` asks each provider the team uses whether it takes its key, now, with the key set now.

Bug: `check` said "no problems" while the chosen provider could not work (its key missing, or set but
refused), and its verdict on a key could be an old one. A key that is set but wrong was only found out
by a failed run. Here a local fake of the Anthropic and OpenAI model lists stands for the providers.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from test_cli_kit import cli_env, dominds, write_workspace

GOOD = "sk-the-right-key"


class _Providers(BaseHTTPRequestHandler):
    asked: list[tuple[str, str]] = []

    def do_GET(self) -> None:
        key = self.headers.get("x-api-key") or self.headers.get("authorization", "").removeprefix("Bearer ")
        self.asked.append((self.path.split("?")[0], key))
        if self.path.startswith("/v1/models") and key == GOOD:
            body, status = {"data": [], "has_more": False, "first_id": None, "last_id": None, "object": "list"}, 200
        elif self.path.startswith("/v1/models"):
            body, status = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}, 401
        else:
            body, status = {"error": {"message": "no such route"}}, 404
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def providers() -> Iterator[tuple[str, list[tuple[str, str]]]]:
    asked: list[tuple[str, str]] = []
    handler = type("Handler", (_Providers,), {"asked": asked})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", asked
    server.shutdown()
    server.server_close()


def _workspace(tmp_path: Path, url: str, dead_url: str) -> Path:
    ws = write_workspace(tmp_path / "ws")
    (ws / ".minds" / "team.yaml").write_text(
        "member_defaults: {provider: anthropic, model: claude-sonnet-4-6, diligence_push_max: 0}\n"
        "default_responder: lead\n"
        "members:\n"
        "  lead: {name: Lead}\n"
        "  coder: {name: Coder, provider: local, model: small}\n"
    )
    (ws / ".minds" / "llm.yaml").write_text(
        "providers:\n"
        f"  anthropic: {{name: Anthropic, apiType: anthropic, baseUrl: '{url}', apiKeyEnvVar: ANTHROPIC_API_KEY,"
        " models: {claude-sonnet-4-6: {context_length: 200000}}}\n"
        f"  local: {{name: Local, apiType: openai-compatible, baseUrl: '{url}/v1', apiKeyEnvVar: LOCAL_KEY,"
        " models: {small: {context_length: 8000}}}\n"
        f"  spare: {{name: Spare, apiType: anthropic, baseUrl: '{dead_url}', apiKeyEnvVar: SPARE_KEY,"
        " models: {m: {context_length: 8000}}}\n"
    )
    return ws


def _line(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


def _env(**keys: str) -> dict[str, str]:
    env = cli_env(**keys)
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LOCAL_KEY", "SPARE_KEY"):
        if name not in keys:
            env.pop(name, None)
    return env


def test_check_asks_each_provider_used_whether_it_takes_the_key_set_now(
    tmp_path: Path, providers: tuple[str, list[tuple[str, str]]]
) -> None:
    url, asked = providers
    ws = _workspace(tmp_path, url, "http://127.0.0.1:9")  # nothing listens on port 9: never asked, never used

    wrong = dominds(ws, "check", env=_env(ANTHROPIC_API_KEY="sk-wrong", LOCAL_KEY=GOOD))
    assert wrong.returncode == 1, wrong.stdout
    refused = _line(wrong.stdout, "provider anthropic: error:")
    assert refused.startswith(
        "provider anthropic: error: the provider refused the key in ANTHROPIC_API_KEY (HTTP 401: invalid x-api-key), "
        "and @lead, "  # and the workflow roles that inherit member_defaults
    ), refused
    assert refused.endswith("workflow roles use it: export ANTHROPIC_API_KEY=<the right key> before `dominds serve` or `run`")
    assert "local" not in "".join(line for line in wrong.stdout.splitlines() if "error" in line), "LOCAL_KEY is taken"
    assert "spare" not in wrong.stdout and "SPARE_KEY" not in wrong.stdout, "a provider nobody uses is not judged"
    assert sorted(asked) == [("/v1/models", GOOD), ("/v1/models", "sk-wrong")], asked

    fixed = dominds(ws, "check", env=_env(ANTHROPIC_API_KEY=GOOD, LOCAL_KEY=GOOD))
    assert fixed.returncode == 0 and fixed.stdout.endswith("no problems\n"), fixed.stdout

    missing = dominds(ws, "check", env=_env(LOCAL_KEY=GOOD))
    assert missing.returncode == 1 and missing.stdout.count("ANTHROPIC_API_KEY is not set in this environment") == 1
    assert "refused" not in missing.stdout, "a missing key is not asked about"

    asked.clear()
    offline = dominds(ws, "check", "--no-connect", env=_env(ANTHROPIC_API_KEY="sk-wrong", LOCAL_KEY=GOOD))
    assert offline.returncode == 0 and asked == [], "--no-connect asks nobody"


def test_a_provider_that_does_not_answer_is_a_warning_naming_its_address(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, "http://127.0.0.1:9", "http://127.0.0.1:9")
    down = dominds(ws, "check", env=_env(ANTHROPIC_API_KEY=GOOD, LOCAL_KEY=GOOD))
    assert down.returncode == 0, "warnings alone do not fail `check`: " + down.stdout
    assert "0 error(s), 2 warning(s)" in down.stdout, down.stdout
    assert "provider anthropic: warning: could not ask whether it takes the key: no answer from http://127.0.0.1:9" in down.stdout
    assert "provider local: warning: could not ask whether it takes the key: no answer from http://127.0.0.1:9/v1" in down.stdout
    assert "(is the server running? its address is baseUrl in .minds/llm.yaml)" in down.stdout
    assert "(Connection refused)" in down.stdout or "Connect call failed" in down.stdout, "the cause, not only 'Connection error.'"


def test_warnings_fail_check_only_with_strict(tmp_path: Path) -> None:
    """Bug: `check` exited 1 on warnings alone, so `dominds check && dominds serve` refused to start a
    workspace whose only flaw was a provider that could not be asked. ``--strict`` keeps CI's old rule."""
    ws = _workspace(tmp_path, "http://127.0.0.1:9", "http://127.0.0.1:9")
    strict = dominds(ws, "check", "--strict", env=_env(ANTHROPIC_API_KEY=GOOD, LOCAL_KEY=GOOD))
    assert strict.returncode == 1 and "0 error(s), 2 warning(s)" in strict.stdout, strict.stdout


def test_each_probe_is_announced_on_stderr_while_it_runs(tmp_path: Path) -> None:
    """Bug: `check` ran 20 s and more (MCP servers started, providers asked) with no output at all. Here
    the fake provider holds its answer until the test has read, on the live stderr, the line that
    announces the question: the line comes while the probe runs, not in the final report."""
    import subprocess
    import sys

    release = threading.Event()
    asked: list[tuple[str, str]] = []

    class Held(_Providers):
        def do_GET(self) -> None:
            release.wait(30)
            super().do_GET()

    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (Held,), {"asked": asked}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        ws = _workspace(tmp_path, url, url)
        proc = subprocess.Popen(
            [sys.executable, "-m", "dominds", "check"], cwd=ws, env=_env(ANTHROPIC_API_KEY=GOOD, LOCAL_KEY=GOOD),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert proc.stderr is not None
        before = [proc.stderr.readline() for _ in range(2)]  # both providers are asked at once
        assert all(line.startswith("asking provider ") and line.endswith(" …\n") for line in before), before
        assert {line.split()[2] for line in before} == {"anthropic", "local"}, before
        assert proc.poll() is None and asked == [], "announced before the provider has answered"
        release.set()
        out, err = proc.communicate(timeout=60)
    finally:
        release.set()
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0 and out.endswith("no problems\n"), out + err
    assert "provider anthropic: key accepted (" in err and "provider local: key accepted (" in err, err
    assert "asking provider" not in out, "progress stays off stdout (the report, or --json's JSON)"
