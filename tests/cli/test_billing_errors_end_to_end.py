"""An account out of credit, through the real ``dominds run`` against the fake OpenAI server.

Bug: OpenAI answers an exhausted account with HTTP 429 ``insufficient_quota`` (Anthropic its spend
limits with a 429 ``rate_limit_error``); both were retried like a rate limit, so the user waited through
the whole backoff to read "unavailable after 5 attempts" — a wait cannot fix billing. Now the run stops
after the one request, saying the account is out of credit and where to fix it. (Every provider's form
of the error is held by ``tests/llm/test_provider_contract.py``.)
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cli_kit import cli_env, dominds, write_provider_workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))  # tests/llm is not a package
from fake_servers import FakeLlmServer, Reply, fake_server_in_thread

KEY_VAR = "FAKE_QUOTA_OPENAI_KEY"
TEAM_YAML = """\
member_defaults: {provider: fake-openai, model: fake-model, diligence_push_max: 0}
default_responder: lead
members:
  lead: {name: Lead, gofor: [answers]}
"""
LLM_YAML = """\
providers:
  fake-openai:
    apiType: openai-responses
    baseUrl: {url}/v1
    apiKeyEnvVar: FAKE_QUOTA_OPENAI_KEY
    models:
      fake-model: {{context_length: 200000}}
"""
QUOTA = {
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "type": "insufficient_quota",
    "param": None,
    "code": "insufficient_quota",
}


@pytest.fixture
def fake() -> Iterator[FakeLlmServer]:
    with fake_server_in_thread() as server:
        server.responder = lambda _request: Reply(status=429, headers={"retry-after": "20"}, body={"error": QUOTA})
        yield server


def test_an_exhausted_openai_account_stops_the_run_at_once_with_the_reason(tmp_path: Path, fake: FakeLlmServer) -> None:
    ws = write_provider_workspace(tmp_path / "ws", TEAM_YAML, LLM_YAML.format(url=fake.url))
    env = {**cli_env(), KEY_VAR: "sk-quota-not-a-real-key-0123"}
    run = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "hello", env=env)
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    assert len(fake.requests) == 1, "an exhausted account is not retried"
    assert "out of credit or over its spend limit" in output and "billing settings" in output, output
    assert "sk-quota-not-a-real-key" not in output
