"""An outage waited out, as the user of ``dominds run`` sees it (issue 32): each wait of the provider's
retry window is a "retrying: attempt n, next in s, reason" line, then the answer.

Bug: after 5 attempts (≤ 7.5 s of backoff) the dialog was interrupted and the run ended waiting for a
human; nothing said it was retrying meanwhile."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cli_kit import cli_env, dominds, write_provider_workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))  # tests/llm is not a package
from fake_servers import FakeLlmServer, Reply, anthropic_error, anthropic_frames, fake_server_in_thread

KEY_VAR = "FAKE_RETRY_ANTHROPIC_KEY"
TEAM_YAML = """\
member_defaults: {provider: fake-anthropic, model: fake-claude, diligence_push_max: 0}
default_responder: lead
members:
  lead: {name: Lead, gofor: [answers]}
"""
LLM_YAML = """\
providers:
  fake-anthropic:
    apiType: anthropic
    baseUrl: {url}
    apiKeyEnvVar: FAKE_RETRY_ANTHROPIC_KEY
    retry: {{base_delay_s: 0.01, max_delay_s: 0.02}}
    models:
      fake-claude: {{context_length: 200000}}
"""


@pytest.fixture
def fake() -> Iterator[FakeLlmServer]:
    with fake_server_in_thread() as server:
        yield server


def test_run_shows_each_retry_and_then_the_answer(tmp_path: Path, fake: FakeLlmServer) -> None:
    ws = write_provider_workspace(tmp_path / "ws", TEAM_YAML, LLM_YAML.format(url=fake.url))
    storm = [anthropic_error(529, "overloaded_error", "Overloaded") for _ in range(7)]
    fake.queue(*storm, Reply(frames=anthropic_frames([{"text": "Back after the storm."}])))
    run = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "Status?", env={**cli_env(), KEY_VAR: "k"}, timeout=90)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "Back after the storm." in output and len(fake.requests) == 8
    for attempt in range(2, 9):
        assert f"retrying: attempt {attempt}, next in 0 s, HTTP 529: overloaded_error: Overloaded" in output, output
