"""`dominds show DIALOG --request GENSEQ` across a real daemon killed mid-stream (issue 35, item 2).

A generation's request is recorded as it goes out, so one cut by a SIGKILL still shows what it sent; the
next daemon goes on appending to the same request log. Each generation's `--raw` output, and the daemon's
`/body` answer, equal byte for byte the body the fake provider server received.
"""

from __future__ import annotations

import json
import signal
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cli_kit import Daemon, cli_env, dominds, wait_until, write_provider_workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))  # tests/llm is not a package
from dialects import AnthropicDialect, Script, Text
from fake_servers import FakeLlmServer, RecordedRequest, Reply, anthropic_frames, fake_server_in_thread

KEY_VAR = "FAKE_SHOW_REQUEST_KEY"
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
    apiKeyEnvVar: FAKE_SHOW_REQUEST_KEY
    models:
      fake-claude: {{context_length: 200000}}
"""


@pytest.fixture
def fake() -> Iterator[FakeLlmServer]:
    with fake_server_in_thread() as server:
        yield server


@pytest.mark.slow
def test_a_generation_cut_by_a_kill_and_the_next_daemons_show_what_they_sent(tmp_path: Path, fake: FakeLlmServer) -> None:
    ws = write_provider_workspace(tmp_path / "ws", TEAM_YAML, LLM_YAML.format(url=fake.url))
    frames = anthropic_frames([{"text": "." * 400}])

    def player(request: RecordedRequest) -> Reply:
        if len(fake.requests) == 1:  # the first reply streams for minutes: the daemon is killed during it
            return Reply(frames=frames[:3] + frames[3:4] * 2000, delay_s=0.05)
        return AnthropicDialect().reply(Script((Text("Done."),)))

    fake.responder = player
    env = {**cli_env(), KEY_VAR: "sk-show-request-secret"}
    daemon = Daemon(ws, env=env)
    try:
        new = dominds(ws, "new", "--taskdoc", "tasks/t.tsk", "Talk for a long time.", "--json", env=env)
        assert new.returncode == 0, new.stderr
        root_id = json.loads(new.stdout)["rootId"]
        wait_until(lambda: fake.disconnects or len(fake.requests) == 1)
        log = ws / ".dialogs" / "run" / root_id / "requests-001.jsonl"
        wait_until(log.exists)
    finally:
        daemon.stop(signal.SIGKILL)
    cut = dominds(ws, "show", root_id, "--request", "1", "--raw", env=env)
    assert cut.returncode == 0, cut.stderr
    assert cut.stdout == fake.requests[0].raw.decode(), "the generation cut by the kill shows what it sent"

    with Daemon(ws, env=env) as again:
        told = dominds(ws, "tell", root_id, "Once more, briefly.", "--follow", env=env)
        assert told.returncode == 0, told.stderr
        for genseq, request in enumerate(fake.requests, start=1):
            shown = dominds(ws, "show", root_id, "--request", str(genseq), "--raw", env=env)
            assert shown.returncode == 0, shown.stderr
            assert shown.stdout == request.raw.decode(), f"generation {genseq}"
            url = f"{again.http}/api/dialogs/{root_id}/requests/{genseq}/body"
            with urllib.request.urlopen(urllib.request.Request(url, headers=again.headers()), timeout=10) as answer:
                assert answer.read() == request.raw
    assert len(fake.requests) >= 2
    assert b"sk-show-request-secret" not in log.read_bytes()
