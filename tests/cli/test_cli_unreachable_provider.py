"""A provider that cannot be reached, through the real ``dominds run``.

Bug: after its retries a run ended "unavailable after 5 attempts …; last error: connection failed:
Connection error." — the SDK's words, which hide the cause (a name that does not resolve, a refused
connection) that ``dominds check`` knew and the user needed. Now the cause and what to look at are in
the message. Nothing listens on the port here, so the cause is a refused connection.
"""

from __future__ import annotations

import socket
from pathlib import Path

from test_cli_kit import cli_env, dominds, write_provider_workspace

TEAM_YAML = """\
member_defaults: {provider: nowhere, model: m, diligence_push_max: 0}
default_responder: lead
members:
  lead: {name: Lead, gofor: [answers]}
"""
LLM_YAML = """\
providers:
  nowhere:
    apiType: {api_type}
    baseUrl: http://127.0.0.1:{port}{path}
    apiKeyEnvVar: null
    retry: {{window_s: 0.5, base_delay_s: 0.01, max_delay_s: 0.05}}
    models:
      m: {{context_length: 8000}}
"""


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when this returns: nothing listens there


def _run(tmp_path: Path, api_type: str, path: str) -> str:
    llm = LLM_YAML.format(api_type=api_type, port=_closed_port(), path=path)
    ws = write_provider_workspace(tmp_path / api_type, TEAM_YAML, llm)
    run = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "hello", env=cli_env())
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    return output


def test_a_refused_connection_names_its_cause_and_what_to_look_at(tmp_path: Path) -> None:
    for api_type, path in (("openai-compatible", "/v1"), ("anthropic", "")):
        output = _run(tmp_path, api_type, path)
        assert "unavailable after" in output, output
        assert "Connection error." in output and "Connect" in output.split("Connection error.", 1)[1], (
            "the cause follows the SDK's words: " + output
        )
        assert "is the server running? its address is baseUrl in .minds/llm.yaml" in output, output
