"""Cut replies through the real CLI and daemon, against the fake Anthropic server (issue 16, issue 18 item 10).

A reply cut by ``max_tokens``, a stream that breaks after output began (an error event, a dropped
connection, a malformed SSE line) and a reply the user stopped must all be kept in the course files as
far as they streamed, marked, with their usage, and be shown by the API (the replay the panel renders
after a reload) and by ``dominds show``. Before, a ``max_tokens`` stop was recorded as ``status: ok``,
and the text of a broken or stopped stream was thrown away (shown live, missing after a reload).
"""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_cli_kit import Daemon, dominds, run_state, wait_until, write_provider_workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))  # tests/llm is not a package
from fake_servers import (
    FakeLlmServer,
    RecordedRequest,
    Reply,
    anthropic_event,
    anthropic_frames,
    fake_server_in_thread,
)

KEY_VAR = "FAKE_CUT_ANTHROPIC_KEY"
TEAM_YAML = """\
member_defaults:
  provider: fake-anthropic
  model: fake-model
  diligence_push_max: 0
default_responder: lead
members:
  lead: {name: Lead, gofor: [answers]}
  writer: {name: Writer, gofor: [writes long texts], continue_on_max_tokens: 1}
"""
LLM_YAML = """\
providers:
  fake-anthropic:
    apiType: anthropic
    baseUrl: {url}
    apiKeyEnvVar: FAKE_CUT_ANTHROPIC_KEY
    models:
      fake-model: {{context_length: 200000, pricing: {{input: 3.0, output: 15.0}}}}
"""
CUT_NOTE = "Your previous reply was cut off"
INPUT_TOKENS = 50


def last_user_text(request: RecordedRequest) -> str:
    content = request.body["messages"][-1]["content"]
    return "\n".join(block.get("text", "") for block in content if isinstance(block, dict))


def text_frames(text: str) -> list[str]:
    """message_start, a text block start, and the text as many one-character deltas (no end)."""
    frames = anthropic_frames([{"text": "x"}], input_tokens=INPUT_TOKENS)[:2]
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ""}}
    for char in text:
        delta["delta"]["text"] = char
        frames.append(anthropic_event(delta))
    return frames


def responder(request: RecordedRequest) -> Reply:
    last = last_user_text(request)
    if CUT_NOTE in last and "# You are @writer" in request.body["system"][0]["text"]:
        return Reply(frames=anthropic_frames([{"text": " The end."}], input_tokens=INPUT_TOKENS))
    if last.endswith("essay"):
        frames = anthropic_frames(
            [{"text": "Once upon a time"}], input_tokens=INPUT_TOKENS, output_tokens=9, stop_reason="max_tokens"
        )
        return Reply(frames=frames)
    if last.endswith("break"):
        error = anthropic_event({"type": "error", "error": {"type": "api_error", "message": "boom"}}, "error")
        return Reply(frames=[*text_frames("Partial answer"), error])
    if last.endswith("drop"):
        frames = text_frames("Dropped answer")
        return Reply(frames=frames, drop_after=len(frames))
    if last.endswith("garble"):
        return Reply(frames=[*text_frames("Garbled answer"), "event: content_block_delta\ndata: {not json\n\n"])
    if last.endswith("ponder"):  # the stream breaks inside a thinking block, before its signature came
        frames = anthropic_frames([{"thinking": "x", "signature": "s"}], input_tokens=INPUT_TOKENS)[:2]
        for char in "Half a thought":
            frames.append(anthropic_event({"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "thinking_delta", "thinking": char}}))  # fmt: skip
        return Reply(frames=frames, drop_after=len(frames))
    if last.endswith("slow"):
        return Reply(frames=text_frames("." * 400), delay_s=0.05)
    return Reply(frames=anthropic_frames([{"text": "Noted."}], input_tokens=INPUT_TOKENS))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLlmServer]:
    monkeypatch.setenv(KEY_VAR, "sk-ant-cut-not-a-real-key")
    with fake_server_in_thread() as server:
        server.responder = responder
        yield server


def workspace(root: Path, url: str) -> Path:
    return write_provider_workspace(root, TEAM_YAML, LLM_YAML.format(url=url), goals="Write things.\n")


def course_lines(ws: Path, root_id: str) -> list[dict[str, Any]]:
    [course] = (ws / ".dialogs").glob(f"*/{root_id}/course-001.jsonl")
    return [json.loads(line) for line in course.read_text().splitlines() if line.strip()]


def of_type(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["type"] == kind]


class Api:
    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **self.daemon.headers()}
        request = urllib.request.Request(self.daemon.http + path, data=data, headers=headers, method=method)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def new_dialog(self, agent: str, message: str) -> str:
        root_id = str(self.call("POST", "/api/dialogs", {"agentId": agent, "taskDocPath": "tasks/t.tsk"})["rootId"])
        self.call("POST", f"/api/dialogs/{root_id}/messages", {"content": message})
        return root_id

    def events(self, root_id: str) -> list[dict[str, Any]]:
        return list(self.call("GET", f"/api/dialogs/{root_id}")["events"])


def test_a_reply_cut_by_max_tokens_is_recorded_shown_and_told_to_the_model(tmp_path: Path, fake: FakeLlmServer) -> None:
    ws = workspace(tmp_path / "ws", fake.url)
    run = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "write an essay")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Once upon a time" in run.stdout
    assert "✂ reply cut off: the output limit (max_tokens) was reached" in run.stdout
    root_id = next(p.name for p in (ws / ".dialogs" / "run").iterdir() if p.is_dir())
    [finish] = of_type(course_lines(ws, root_id), "gen_finish_record")
    assert (finish["status"], finish["finishReason"], finish["partial"]) == ("truncated", "max_tokens", True)
    assert finish["usage"]["inputTokens"] == INPUT_TOKENS and finish["usage"]["outputTokens"] == 9
    shown = dominds(ws, "show", root_id)
    assert "Once upon a time" in shown.stdout and "✂ reply cut off: the output limit" in shown.stdout

    with Daemon(ws) as daemon:
        api = Api(daemon)
        api.call("POST", f"/api/dialogs/{root_id}/messages", {"content": "thanks"})
        wait_until(lambda: len(fake.requests) == 2)
        wait_until(lambda: run_state(ws, root_id) == "idle")
        told = fake.requests[1].body["messages"]
        assert told[-2]["content"][-1] == {"type": "text", "text": "Once upon a time"}
        assert CUT_NOTE in last_user_text(fake.requests[1]) and "max_tokens" in last_user_text(fake.requests[1])
        finishes = [e for e in api.events(root_id) if e["type"] == "generating_finish_evt"]
        assert [(e["status"], e.get("finishReason")) for e in finishes] == [
            ("truncated", "max_tokens"),
            ("ok", "end_turn"),
        ]

        # A member with `continue_on_max_tokens: 1` continues at once, and only once in a row.
        writer_id = api.new_dialog("writer", "an essay")
        wait_until(lambda: run_state(ws, writer_id) == "idle" and len(fake.requests) == 4)
        assert CUT_NOTE in last_user_text(fake.requests[3])
        statuses = [line["status"] for line in of_type(course_lines(ws, writer_id), "gen_finish_record")]
        assert statuses == ["truncated", "ok"]
        words = [line["content"] for line in of_type(course_lines(ws, writer_id), "agent_words_record")]
        assert words == ["Once upon a time", " The end."]


@pytest.mark.parametrize(
    ("message", "text"),
    [("break", "Partial answer"), ("drop", "Dropped answer"), ("garble", "Garbled answer")],
)
def test_a_stream_broken_after_output_keeps_its_text_and_usage(
    tmp_path: Path, fake: FakeLlmServer, message: str, text: str
) -> None:
    ws = workspace(tmp_path / "ws", fake.url)
    with Daemon(ws) as daemon:
        api = Api(daemon)
        root_id = api.new_dialog("lead", message)
        wait_until(lambda: run_state(ws, root_id) == "interrupted")
        assert len(fake.requests) == 1, "a stream that broke after output began is not retried"
        events = api.events(root_id)
        [saying] = [e for e in events if e["type"] == "saying_finish_evt"]
        assert (saying["content"], saying["incomplete"]) == (text, "broken")
        [finish] = [e for e in events if e["type"] == "generating_finish_evt"]
        assert (finish["status"], finish["finishReason"], finish["partial"]) == ("error", "broken", True)
        assert any(e["type"] == "stream_error_evt" and "broke after output began" in e["error"] for e in events)
    lines = course_lines(ws, root_id)
    [words] = of_type(lines, "agent_words_record")
    assert (words["content"], words["incomplete"]) == (text, "broken")
    [finish_line] = of_type(lines, "gen_finish_record")
    usage = finish_line["usage"]
    assert usage["inputTokens"] == INPUT_TOKENS and usage["partial"] is True, "input tokens came with the first event"
    shown = dominds(ws, "show", root_id)
    assert f"{text}\n  ⋯ [incomplete: the stream broke]" in shown.stdout


def test_thinking_broken_before_its_signature_is_kept_and_not_sent_back(tmp_path: Path, fake: FakeLlmServer) -> None:
    """A stream that breaks inside a thinking block keeps the thinking so far, marked incomplete, with the
    usage; the next request leaves that unsigned thinking out (the API refuses a thinking block without
    its signature) and tells the model its reply was cut."""
    ws = workspace(tmp_path / "ws", fake.url)
    with Daemon(ws) as daemon:
        api = Api(daemon)
        root_id = api.new_dialog("lead", "ponder")
        wait_until(lambda: run_state(ws, root_id) == "interrupted")
        [thinking] = [e for e in api.events(root_id) if e["type"] == "thinking_finish_evt"]
        assert thinking["incomplete"] == "broken"
        api.call("POST", f"/api/dialogs/{root_id}/messages", {"content": "go on"})
        wait_until(lambda: len(fake.requests) == 2)
        wait_until(lambda: run_state(ws, root_id) == "idle")
    sent = fake.requests[1].body["messages"]
    assert not any(b.get("type") == "thinking" for m in sent if isinstance(m["content"], list) for b in m["content"])
    assert "connection to the model broke" in json.dumps(sent)
    lines = course_lines(ws, root_id)
    [thought] = of_type(lines, "agent_thought_record")
    assert (thought["content"], thought["incomplete"]) == ("Half a thought", "broken")
    first_finish = of_type(lines, "gen_finish_record")[0]
    assert first_finish["usage"]["inputTokens"] == INPUT_TOKENS and first_finish["usage"]["partial"] is True


def test_a_stopped_reply_survives_a_reload_and_shows_in_dominds_show(tmp_path: Path, fake: FakeLlmServer) -> None:
    ws = workspace(tmp_path / "ws", fake.url)
    with Daemon(ws) as daemon:
        api = Api(daemon)
        root_id = api.new_dialog("lead", "slow")

        def streamed_dots() -> bool:
            chunks = [e for e in api.events(root_id) if e["type"] == "markdown_chunk_evt"]
            return any("..." in e["chunk"] for e in chunks)

        wait_until(streamed_dots)
        assert api.call("POST", f"/api/dialogs/{root_id}/stop")["stopped"] is True
        wait_until(lambda: run_state(ws, root_id) == "interrupted")
    with Daemon(ws) as daemon:  # a reload: the transcript is rebuilt from the course files
        events = Api(daemon).events(root_id)
        [saying] = [e for e in events if e["type"] == "saying_finish_evt"]
        assert saying["incomplete"] == "stopped" and set(saying["content"]) == {"."}
        assert 3 <= len(saying["content"]) < 400
        [finish] = [e for e in events if e["type"] == "generating_finish_evt"]
        assert (finish["status"], finish["finishReason"], finish["partial"]) == ("interrupted", "stopped", True)
    [words] = of_type(course_lines(ws, root_id), "agent_words_record")
    assert words["incomplete"] == "stopped" and words["content"] == saying["content"]
    shown = dominds(ws, "show", root_id)
    assert f"{saying['content']}\n  ⋯ [incomplete: stopped by the user]" in shown.stdout
