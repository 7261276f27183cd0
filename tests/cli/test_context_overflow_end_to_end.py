"""A course that outgrows the model's context window, through the real ``dominds run`` against the fake
Anthropic server.

Bug: the provider's "prompt is too long" 400 interrupted the dialog with a hint about ``model_params``;
a resume sent the same context and failed the same way, so the dialog was stuck for good (the runtime
only started a new course itself when context health had been critical for five generations, which a
single big tool result skips). Now the runtime starts a new course, carrying the prompt the failed
generation was answering, and tells the model why; a prompt that does not fit even a fresh course stops
with that reason instead of looping.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cli_kit import cli_env, dominds, write_provider_workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))  # tests/llm is not a package
from fake_servers import (
    FakeLlmServer,
    RecordedRequest,
    Reply,
    anthropic_error,
    anthropic_frames,
    fake_server_in_thread,
)

KEY_VAR = "FAKE_OVERFLOW_ANTHROPIC_KEY"
TEAM_YAML = """\
member_defaults: {provider: fake-anthropic, model: fake-claude, diligence_push_max: 0}
default_responder: lead
members:
  lead: {name: Lead, gofor: [answers], toolsets: [ws_read]}
"""
LLM_YAML = """\
providers:
  fake-anthropic:
    apiType: anthropic
    baseUrl: {url}
    apiKeyEnvVar: FAKE_OVERFLOW_ANTHROPIC_KEY
    models:
      fake-claude: {{context_length: 200000}}
"""
TOO_LONG = "prompt is too long: 215023 tokens > 200000 maximum"


@pytest.fixture
def fake() -> Iterator[FakeLlmServer]:
    with fake_server_in_thread() as server:
        yield server


def workspace(root: Path, url: str) -> Path:
    return write_provider_workspace(root / "ws", TEAM_YAML, LLM_YAML.format(url=url))


def texts_of(request: RecordedRequest) -> str:
    """Every text the request carries (system prompt and messages), for looking things up."""
    return json.dumps(request.body.get("system")) + json.dumps(request.body["messages"])


def test_a_course_that_overflows_the_context_goes_on_in_a_new_course(tmp_path: Path, fake: FakeLlmServer) -> None:
    ws = workspace(tmp_path, fake.url)
    fake.queue(
        Reply(frames=anthropic_frames([{"tool_use": {"id": "toolu_1", "name": "list_dir", "input": {}}}])),
        anthropic_error(400, "invalid_request_error", TOO_LONG),
        Reply(frames=anthropic_frames([{"text": "Answered in a fresh course."}])),
    )
    run = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "What is in the workspace?", env={**cli_env(), KEY_VAR: "k"})
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert len(fake.requests) == 3, "one new course, not a loop of resends"
    fresh = texts_of(fake.requests[2])
    assert "What is in the workspace?" in fresh, "the question the failed generation answered is carried over"
    assert "context window" in fresh, "the model is told why its earlier messages are gone"
    assert "toolu_1" not in fresh, "the new course does not resend what overflowed"
    root = next((ws / ".dialogs" / "run").iterdir())
    assert (root / "course-002.jsonl").exists()
    shown = dominds(ws, "show", root.name)
    assert shown.returncode == 0 and "Answered in a fresh course." in shown.stdout, shown.stdout + shown.stderr
    assert "context window" in shown.stdout, "the user sees why a new course began"


def test_a_prompt_that_does_not_fit_a_fresh_course_stops_with_the_reason(tmp_path: Path, fake: FakeLlmServer) -> None:
    ws = workspace(tmp_path, fake.url)
    fake.responder = lambda _request: anthropic_error(400, "invalid_request_error", TOO_LONG)
    run = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "x" * 2000, env={**cli_env(), KEY_VAR: "k"})
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    assert len(fake.requests) == 1, "a fresh course that does not fit is not started again and again"
    assert "context window" in output and "model_params" not in output, output


