"""A model's context-health thresholds overridden in ``.minds/llm.yaml`` (issue 32), through the real CLI.

Bug: a built-in model's thresholds could only be changed by copying its whole provider into
``llm.yaml``. Now ``context_health:`` overrides them per model: ``dominds check`` names each mistake
in it (and exits 1), and a real ``dominds run`` measures its generations against the override.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from test_cli_kit import dominds, dominds_json, write_provider_workspace

TEAM_YAML = """\
member_defaults: {provider: scripted, model: demo, diligence_push_max: 0}
default_responder: lead
members:
  lead: {name: Lead, gofor: [answers]}
"""


def _workspace(tmp_path: Path, llm_yaml: str) -> Path:
    ws = write_provider_workspace(tmp_path / "ws", TEAM_YAML, llm_yaml)
    responses = [{"agent": "lead", "message": "step", "response": "Stepped.", "usage": {"input_tokens": 60_000, "output_tokens": 5}}]
    (ws / ".minds" / "scripted").mkdir()
    (ws / ".minds" / "scripted" / "demo.yaml").write_text(yaml.safe_dump({"responses": responses}))
    return ws


def test_check_names_each_mistake_of_an_override_and_exits_1(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, "context_health:\n  scripted:\n    demo: {critical_max_tokns: 50000}\n    dem: {}\n"
                              "  anthropic:\n    claude-sonnet-4-6: {critical_max_tokens: 5000000}\n")  # fmt: skip
    check = dominds(ws, "check")
    output = check.stdout + check.stderr
    assert check.returncode == 1, output
    assert "Traceback" not in output
    assert ".minds/llm.yaml:3: warning: `context_health`.scripted.demo: unknown key 'critical_max_tokns' ignored " \
           "(did you mean 'critical_max_tokens'?)" in output, output  # fmt: skip
    assert ".minds/llm.yaml:4: error: `context_health`: provider 'scripted' has no model 'dem' (did you mean 'demo'?)" in output
    assert ".minds/llm.yaml:6: error: `context_health`.anthropic.claude-sonnet-4-6: `critical_max_tokens` 5000000 is " \
           "beyond the model's window of" in output, output  # fmt: skip


def test_a_real_run_is_measured_against_the_overridden_thresholds(tmp_path: Path) -> None:
    """60,000 prompt tokens are healthy for the built-in ``scripted/demo`` (200,000-token window: caution
    above 100,000, critical above 180,000); with the override they are critical and the model is told."""
    ws = _workspace(tmp_path, "context_health:\n  scripted:\n    demo: {optimal_max_tokens: 20000, critical_max_tokens: 50000}\n")
    assert dominds(ws, "check").returncode == 0
    run = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "step", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    [root] = dominds_json(ws, "status")["roots"]
    shown = dominds_json(ws, "show", root["selfId"])
    [health] = [e["contextHealth"] for e in shown["events"] if e["type"] == "context_health_evt"]
    assert (health["level"], health["effectiveOptimalMaxTokens"], health["effectiveCriticalMaxTokens"]) == ("critical", 20_000, 50_000)
    [told] = [e["content"] for e in shown["events"] if e["type"] == "end_of_user_saying_evt" and e["origin"] == "system"]
    assert told.startswith("[Context critical: 4 generation(s) left] Your context is 30% full (60000 of 200000 tokens; "
                           "critical above 50000)"), told  # fmt: skip
