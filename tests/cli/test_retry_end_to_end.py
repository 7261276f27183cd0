"""An outage waited out, as the user of ``dominds run`` sees it (issue 32): each wait of the provider's
retry window is a "retrying: attempt n, next in s, reason" line, then the answer.

Bug: after 5 attempts (≤ 7.5 s of backoff) the dialog was interrupted and the run ended waiting for a
human; nothing said it was retrying meanwhile."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from test_cli_kit import Daemon, cli_env, dominds, run_state, wait_until, write_provider_workspace

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
    run = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "Status?", env={**cli_env(), KEY_VAR: "k"})
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "Back after the storm." in output and len(fake.requests) == 8
    for attempt in range(2, 9):
        assert f"retrying: attempt {attempt}, next in 0 s, HTTP 529: overloaded_error: Overloaded" in output, output


OVERLOADED = "retrying: attempt 2, next in 600 s, HTTP 529: overloaded_error: Overloaded"
"""The run state while the first wait runs: the server asked for 600 s (``retry-after``), within the window."""


def _latest_run_state(ws: Path, root_id: str) -> dict[str, str]:
    return dict(yaml.safe_load((ws / ".dialogs" / "run" / root_id / "latest.yaml").read_text())["runState"])


def test_status_shows_a_daemons_dialog_retrying_and_stop_ends_the_wait(tmp_path: Path, fake: FakeLlmServer) -> None:
    """``dominds status`` against a real daemon while a dialog waits out a 529 storm: the tree line says
    "retrying: attempt n, next in s, reason" (text and --json), as does the header of ``dominds show
    --follow``; Stop ends the wait at once (no further attempt), the follow ends saying so, and status then
    says interrupted. Before, these had only been checked offline or through ``dominds run``."""
    ws = write_provider_workspace(tmp_path / "ws", TEAM_YAML, LLM_YAML.format(url=fake.url).replace(
        "retry: {base_delay_s: 0.01, max_delay_s: 0.02}", "retry: {max_retry_after_s: 600}"))  # fmt: skip
    fake.responder = lambda _request: anthropic_error(529, "overloaded_error", "Overloaded", {"retry-after": "600"})
    env = {**cli_env(), KEY_VAR: "k"}
    with Daemon(ws, env=env) as daemon:
        new = dominds(ws, "new", "--taskdoc", "tasks/t.tsk", "Status?", "--json", env=env)
        assert new.returncode == 0, new.stderr
        root_id = json.loads(new.stdout)["rootId"]
        wait_until(lambda: _latest_run_state(ws, root_id).get("reason") == "retrying")

        status = dominds(ws, "status", env=env)
        assert status.returncode == 0, status.stderr
        [line] = [line for line in status.stdout.splitlines() if line.startswith(root_id)]
        assert OVERLOADED in line, status.stdout
        report = json.loads(dominds(ws, "status", "--json", env=env).stdout)
        [root] = report["roots"]
        assert root["runState"] == {"kind": "proceeding", "reason": "retrying", "detail": OVERLOADED.removeprefix("retrying: ")}
        assert report["daemon"] is not None, "read through the running daemon"
        follow = subprocess.Popen([sys.executable, "-m", "dominds", "show", root_id, "--follow"], cwd=ws, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        followed: list[str] = []
        reader = threading.Thread(target=lambda: followed.extend(follow.stdout or ()), daemon=True)
        reader.start()
        wait_until(lambda: any(OVERLOADED in line for line in followed))

        stop = urllib.request.Request(f"{daemon.http}/api/dialogs/{root_id}/stop", method="POST", headers=daemon.headers())
        with urllib.request.urlopen(stop, timeout=10) as answer:
            assert answer.status == 200
        wait_until(lambda: run_state(ws, root_id) == "interrupted")  # not the 600 s of the wait
        after = dominds(ws, "status", env=env)
        [line] = [line for line in after.stdout.splitlines() if line.startswith(root_id)]
        assert "interrupted" in line and "retrying" not in line, after.stdout
        assert len(fake.requests) == 1, "Stop ended the wait: no attempt after it"
        assert follow.wait(timeout=30) == 1, "show --follow ends with the interruption"
        reader.join(timeout=10)
        assert followed[0].startswith(root_id) and OVERLOADED in followed[0], "the followed dialog's header says it"
        assert followed[-2].startswith(f"✗ dialog {root_id} was stopped"), followed


def test_a_daemon_shut_down_mid_wait_exits_and_leaves_the_dialog_interrupted(tmp_path: Path, fake: FakeLlmServer) -> None:
    """The sibling of Stop: a SIGINT while a dialog waits out an outage ends the wait (the daemon does not sit
    out the 600 s), and the dialog is left interrupted, to be resumed by the next daemon."""
    ws = write_provider_workspace(tmp_path / "ws", TEAM_YAML, LLM_YAML.format(url=fake.url))
    fake.responder = lambda _request: anthropic_error(529, "overloaded_error", "Overloaded", {"retry-after": "600"})
    env = {**cli_env(), KEY_VAR: "k"}
    daemon = Daemon(ws, env=env)
    new = dominds(ws, "new", "--taskdoc", "tasks/t.tsk", "Status?", "--json", env=env)
    assert new.returncode == 0, new.stderr
    root_id = json.loads(new.stdout)["rootId"]
    wait_until(lambda: _latest_run_state(ws, root_id).get("reason") == "retrying", timeout=90)
    code, _out, err = daemon.stop()
    assert code == 0, err
    assert run_state(ws, root_id) == "interrupted" and len(fake.requests) == 1
