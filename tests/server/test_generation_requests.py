"""What the model saw (issue 35, item 2): each generation's request, recorded as the provider received it.

Before, nothing of a request was kept: no way to see the prompt, messages and tools a member was given.
The fake provider server keeps the bytes of every request body it received; what the daemon recorded for
each generation — ``GET /api/dialogs/{selfId}/requests/{genseq}/body``, the view's parsed ``body`` and
``dominds show DIALOG --request GENSEQ --raw`` — must equal them byte for byte, for every API the product
speaks, also after the engine restarted; the API key (sent in a header) is stored nowhere; a long dialog's
request log grows with what each request adds, not with the whole request (no quadratic growth).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from server_kit import TOKEN, ServeFactory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))  # tests/llm is not a package
from dialects import AnthropicDialect, Dialect, OpenAiChatDialect, OpenAiResponsesDialect, Script, Text, Tool
from fake_servers import FakeLlmServer, Reply, anthropic_error, anthropic_frames, running_fake_server

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.server import make_app
from dominds.store.request_log import request_log_name

SECRET = "sk-fake-request-test-0123456789"

TEAM_YAML = """\
member_defaults:
  provider: {provider}
  model: fake-model
  diligence_push_max: 0
default_responder: lead
members:
  lead: {{name: Lead, gofor: [plans and delegates]}}
"""

LLM_YAML = """\
providers:
  fake-anthropic:
    apiType: anthropic
    baseUrl: {url}
    apiKeyEnvVar: FAKE_REQUEST_KEY
    retry: {{base_delay_s: 0.01, max_delay_s: 0.02}}
    models:
      fake-model: {{context_length: 200000, pricing: {{input: 3.0, output: 15.0}}}}
  fake-openai:
    apiType: openai-compatible
    baseUrl: {url}/v1
    apiKeyEnvVar: FAKE_REQUEST_KEY
    models:
      fake-model: {{context_length: 128000, pricing: {{input: 1.0, output: 2.0}}}}
  fake-responses:
    apiType: openai-responses
    baseUrl: {url}/v1
    apiKeyEnvVar: FAKE_REQUEST_KEY
    models:
      fake-model: {{context_length: 1050000, pricing: {{input: 2.0, output: 10.0}}}}
"""

DIALECTS: dict[str, Dialect] = {
    "fake-anthropic": AnthropicDialect(),
    "fake-openai": OpenAiChatDialect(),
    "fake-responses": OpenAiResponsesDialect(),
}


def write_workspace(root: Path, url: str, provider: str) -> Rtws:
    rtws = Rtws(root)
    rtws.minds_dir.mkdir(parents=True)
    rtws.team_yaml.write_text(TEAM_YAML.format(provider=provider))
    rtws.llm_yaml.write_text(LLM_YAML.format(url=url))
    (root / "tasks" / "t.tsk").mkdir(parents=True)
    (root / "tasks" / "t.tsk" / "goals.md").write_text("Ship the parser.\n")
    rtws.ensure_layout()
    return rtws


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeLlmServer]:
    monkeypatch.setenv("FAKE_REQUEST_KEY", SECRET)
    async with running_fake_server() as server:
        yield server


async def served(engine: Engine, aiohttp_client: Any) -> Any:
    return await aiohttp_client(make_app(engine, token=TOKEN))


AUTH = {"Authorization": f"Bearer {TOKEN}"}


def show_request(ws: Path, dialog_id: str, genseq: int, *extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "dominds", "-C", str(ws), "show", dialog_id, "--request", str(genseq), *extra],
        capture_output=True, timeout=60, check=False,
    )


async def assert_recorded_as_received(
    client: Any, ws: Path, dialog_id: str, received: list[bytes], *, cli: bool = False
) -> None:
    for genseq, body in enumerate(received, start=1):
        exact = await client.get(f"/api/dialogs/{dialog_id}/requests/{genseq}/body", headers=AUTH)
        assert exact.status == 200
        assert await exact.read() == body, f"generation {genseq}: the body served is the body received"
        view_response = await client.get(f"/api/dialogs/{dialog_id}/requests/{genseq}", headers=AUTH)
        view = await view_response.json()
        assert view_response.status == 200, view
        assert view["body"] == json.loads(body) and view["size"] == len(body) and view["genseq"] == genseq
        if cli:
            shown = show_request(ws, dialog_id, genseq, "--raw")
            assert shown.returncode == 0, shown.stderr
            assert shown.stdout == body, f"generation {genseq}: `show --request --raw` prints the body received"


@pytest.mark.parametrize("provider", ["fake-anthropic", "fake-openai", "fake-responses"])
async def test_each_generations_request_is_recorded_as_the_provider_received_it(
    tmp_path: Path, fake: FakeLlmServer, aiohttp_client: Any, provider: str
) -> None:
    dialect = DIALECTS[provider]
    ws = tmp_path / "ws"
    rtws = write_workspace(ws, fake.url, provider)
    engine = Engine(rtws)
    await engine.start()
    try:
        client = await served(engine, aiohttp_client)
        root = engine.create_dialog("lead", "tasks/t.tsk")
        fake.queue(
            dialect.reply(Script((Text("Noting it."), Tool("call_1", "add_reminder", {"content": "check the parser"})))),
            dialect.reply(Script((Text("Noted."),))),
        )
        engine.submit_user_message(root, "Remember to check the parser.")
        await engine.wait_idle(timeout=20)
        assert len(fake.requests) == 2
        await assert_recorded_as_received(client, ws, root.self_id, [r.raw for r in fake.requests])

        view = await (await client.get(f"/api/dialogs/{root.self_id}/requests/1", headers=AUTH)).json()
        assert view["provider"] == provider and view["model"] == "fake-model" and view["attempts"] == 1
        assert view["url"] == fake.url + fake.requests[0].path and view["method"] == "POST"
        assert view["generation"]["status"] == "ok" and view["generation"]["usage"]["outputTokens"] == 9
        assert view["generation"]["costUsd"] > 0 and view["totalMs"] >= view["firstOutputMs"] >= 0
        summary = show_request(ws, root.self_id, 2)
        assert summary.returncode == 0, summary.stderr
        assert b"generation #2 of course 1" in summary.stdout and b"1 attempt (0 retries)" in summary.stdout
    finally:
        await engine.close()

    # A restart: the new engine appends to the same request log (what it already holds is not stored again).
    engine = Engine(rtws)
    await engine.start()
    try:
        client = await served(engine, aiohttp_client)
        again = engine.get_dialog(root.root_id)
        fake.queue(dialect.reply(Script((Text("Checked."),))))
        engine.submit_user_message(again, "Did you check it?")
        await engine.wait_idle(timeout=20)
        assert len(fake.requests) == 3
        await assert_recorded_as_received(client, ws, again.self_id, [r.raw for r in fake.requests], cli=True)
    finally:
        await engine.close()

    sent_key = fake.requests[0].headers.get("x-api-key") or fake.requests[0].headers.get("authorization", "")
    assert SECRET in sent_key, "the key went in a header"
    for path in rtws.dialogs_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), f"{path.name} holds the API key"


async def test_retries_and_a_generation_still_streaming_or_stopped_show_their_request(
    tmp_path: Path, fake: FakeLlmServer, aiohttp_client: Any
) -> None:
    """The request is recorded as it goes out: a generation still streaming (or cut by a crash) shows it;
    the attempts of the retry window are counted."""
    engine = Engine(write_workspace(tmp_path / "ws", fake.url, "fake-anthropic"))
    await engine.start()
    try:
        client = await served(engine, aiohttp_client)
        root = engine.create_dialog("lead", "tasks/t.tsk")
        fake.queue(anthropic_error(529, "overloaded_error", "Overloaded"), AnthropicDialect().reply(Script((Text("Done."),))))
        engine.submit_user_message(root, "Try again if you must.")
        await engine.wait_idle(timeout=20)
        assert len(fake.requests) == 2 and fake.requests[0].raw == fake.requests[1].raw
        view = await (await client.get(f"/api/dialogs/{root.self_id}/requests/1", headers=AUTH)).json()
        assert (view["attempts"], view["retries"]) == (2, 1) and view["generation"]["status"] == "ok"

        frames = anthropic_frames([{"text": "." * 400}])
        fake.queue(Reply(frames=frames[:3] + frames[3:4] * 200, delay_s=0.05))
        engine.submit_user_message(root, "Talk for a long time.")
        for _ in range(500):
            if root.streaming_text.get("saying"):
                break
            await asyncio.sleep(0.01)
        assert root.streaming_text.get("saying"), "the stream started"
        streaming = await client.get(f"/api/dialogs/{root.self_id}/requests/2", headers=AUTH)
        view = await streaming.json()
        assert streaming.status == 200 and "generation" not in view, "the generation has not ended"
        exact = await client.get(f"/api/dialogs/{root.self_id}/requests/2/body", headers=AUTH)
        assert await exact.read() == fake.requests[-1].raw
        assert engine.stop(root)
        await engine.wait_idle(timeout=10)
        view = await (await client.get(f"/api/dialogs/{root.self_id}/requests/2", headers=AUTH)).json()
        assert view["generation"]["status"] == "interrupted" and view["attempts"] == 1 and view["totalMs"] >= 0
    finally:
        await engine.close()


async def test_an_unknown_generation_is_a_clear_404(tmp_path: Path, fake: FakeLlmServer, aiohttp_client: Any) -> None:
    ws = tmp_path / "ws"
    engine = Engine(write_workspace(ws, fake.url, "fake-openai"))
    await engine.start()
    try:
        client = await served(engine, aiohttp_client)
        root = engine.create_dialog("lead", "tasks/t.tsk")
        response = await client.get(f"/api/dialogs/{root.self_id}/requests/7", headers=AUTH)
        assert response.status == 404 and "no request is recorded for generation 7" in (await response.json())["error"]
        response = await client.get(f"/api/dialogs/{root.self_id}/requests/1?course=9", headers=AUTH)
        assert response.status == 404 and "courses 1..1" in (await response.json())["error"]
        response = await client.get(f"/api/dialogs/{root.self_id}/requests/1?course=x", headers=AUTH)
        assert response.status == 400
        shown = show_request(ws, root.self_id, 7)
        assert shown.returncode != 0 and b"no request is recorded for generation 7" in shown.stderr
    finally:
        await engine.close()


@pytest.mark.parametrize("provider", ["fake-anthropic", "fake-openai", "fake-responses"])
async def test_a_long_dialogs_requests_grow_linearly(tmp_path: Path, fake: FakeLlmServer, provider: str) -> None:
    """Each request repeats the whole conversation: stored whole, a dialog of n turns would take ~n²/2
    conversations' worth of bytes. Each line must cost about what its request added."""
    dialect = DIALECTS[provider]
    turns = 16
    engine = Engine(write_workspace(tmp_path / "ws", fake.url, provider))
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        for turn in range(turns):
            fake.queue(dialect.reply(Script((Text(f"Reply {turn}: " + "ok " * 100),))))
            engine.submit_user_message(root, f"Message {turn}: " + f"word{turn} " * 400)
            await engine.wait_idle(timeout=20)
        assert len(fake.requests) == turns
        log = root.files.dir / request_log_name(1)
        per_generation = [0] * turns  # each generation's two lines: its request, and its attempts and timing
        for line in log.read_bytes().splitlines():
            per_generation[json.loads(line)["genseq"] - 1] += len(line) + 1
        lines = per_generation
        assert all(lines)
        stored, last, whole = log.stat().st_size, len(fake.requests[-1].raw), sum(len(r.raw) for r in fake.requests)
        assert stored < 3 * last, f"{stored} bytes stored for a last request of {last} bytes"
        assert whole > 6 * stored, f"stored whole: {whole} bytes; stored as chunks: {stored}"
        quarter = turns // 4
        early, late = sum(lines[quarter : 2 * quarter]) / quarter, sum(lines[-quarter:]) / quarter
        assert late < 1.5 * early, f"a line costs {early:.0f} bytes early and {late:.0f} late: it grows with the dialog"
        client_view = fake.requests[-1].raw
        from dominds.store.request_log import read_request

        rebuilt = read_request(log, turns)
        assert rebuilt is not None and rebuilt.body == client_view
    finally:
        await engine.close()


FORK_RESPONSES: list[dict[str, Any]] = [
    {"agent": "lead", "message": "first", "response": "First answer."},
    {"agent": "lead", "message": "second", "response": "Second answer."},
    {"agent": "lead", "message": "third", "response": "Third answer."},
]


async def test_a_fork_keeps_the_requests_of_the_generations_it_copied(serve: ServeFactory) -> None:
    """The replies a fork copied keep their Request view; the generation it runs anew records its own."""
    served = await serve(FORK_RESPONSES)
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    root_id = created["rootId"]
    for text in ("first", "second", "third"):
        await served.post(f"/api/dialogs/{root_id}/messages", {"content": text})
        await served.engine.wait_idle()
    original_log = served.engine.get_dialog(root_id).files.dir / request_log_name(1)
    before = original_log.read_bytes()
    status, forked = await served.post(f"/api/dialogs/{root_id}/fork", {"genseq": 3})
    assert status == 201
    await served.engine.wait_idle()
    fork_id = forked["rootId"]

    async def body(dialog_id: str, genseq: int) -> bytes:
        response = await served.client.get(f"/api/dialogs/{dialog_id}/requests/{genseq}/body", headers=served.auth())
        assert response.status == 200, await response.text()
        return bytes(await response.read())

    for genseq in (1, 2):
        assert await body(fork_id, genseq) == await body(root_id, genseq)
    assert b'"third"' in await body(fork_id, 3), "the generation run anew answers the same message"
    assert original_log.read_bytes() == before, "the original's request log is untouched"
