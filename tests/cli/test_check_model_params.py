"""`dominds check` validates a member's model_params against what its provider declares (issue 16).

Before, one global allow-list: the documented `anthropic.thinking` was "not a known anthropic
parameter" and `dominds check` exited 1; `output_config` / effort could not be written at all; values
were never checked, so a bad one surfaced as a 400 in the middle of a dialog.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_cli_kit import cli_env, dominds

LLM_YAML = """\
providers:
  claude:
    apiType: anthropic
    baseUrl: http://127.0.0.1:9
    apiKeyEnvVar: CHECK_ANTHROPIC_KEY
    models:
      old-claude: {context_length: 200000, thinking: extended, effort: []}
      new-claude: {context_length: 1000000, thinking: adaptive, sampling: false}
  gpt:
    apiType: openai-responses
    baseUrl: http://127.0.0.1:9/v1
    apiKeyEnvVar: CHECK_OPENAI_KEY
    models:
      gpt-x: {context_length: 1050000}
"""


def workspace(root: Path, team: str) -> Path:
    (root / ".minds").mkdir(parents=True)
    (root / ".minds" / "team.yaml").write_text(team)
    (root / ".minds" / "llm.yaml").write_text(LLM_YAML)
    return root


def check(ws: Path, **env: str) -> tuple[int, list[dict[str, Any]]]:
    done = dominds(ws, "check", "--json", "--no-connect", env=cli_env(CHECK_ANTHROPIC_KEY="k", CHECK_OPENAI_KEY="k", **env))
    return done.returncode, json.loads(done.stdout)


def test_documented_thinking_effort_and_caching_parameters_pass(tmp_path: Path) -> None:
    team = """\
member_defaults: {provider: claude, model: old-claude}
members:
  lead:
    name: Lead
    model_params:
      max_tokens: 16000
      anthropic: {thinking: {budget_tokens: 4096}, temperature: 0.5, stop_sequences: [END], prompt_caching: off, cache_ttl: 1h}
  writer:
    name: Writer
    model: new-claude
    model_params: {anthropic: {thinking: {type: adaptive, display: summarized}, effort: high, output_config: {effort: high}}}
  coder:
    name: Coder
    provider: gpt
    model_params: {openai: {reasoning_effort: xhigh, verbosity: low, reasoning_summary: detailed}}
"""
    code, problems = check(workspace(tmp_path / "ws", team))
    assert (code, problems) == (0, [])


def test_refused_values_are_errors_at_their_line_and_ignored_ones_warnings(tmp_path: Path) -> None:
    team = """\
member_defaults:
  provider: claude
  model: new-claude
  model_params: {anthropic: {thinking_budget: 4096}}
members:
  a: {name: A}
  b: {name: B}
  c:
    name: C
    model: old-claude
    model_params: {anthropic: {temperature: 3, thinking: {budget_tokens: 10}, effort: high}}
  d:
    name: D
    provider: gpt
    model_params: {openai: {frequency_penalty: 1, reasoning_effort: huge}}
"""
    code, problems = check(workspace(tmp_path / "ws", team))
    assert code == 1
    by_message = {p["message"]: p for p in problems}
    adaptive = [m for m in by_message if "thinks adaptively" in m]
    assert len(adaptive) == 1 and adaptive[0].startswith("member_defaults:"), "one report for the inherited default"
    assert by_message[adaptive[0]]["line"] == 4 and by_message[adaptive[0]]["severity"] == "error"
    c_line = [p for p in problems if p["message"].startswith("member 'c'")]
    assert {p["line"] for p in c_line} == {11}
    texts = " | ".join(p["message"] for p in c_line)
    assert "`anthropic.temperature` must be a number from 0 to 1" in texts
    assert "`budget_tokens` must be an integer ≥ 1024" in texts
    assert "takes effort none (the model has no effort setting), not 'high'" in texts
    d = {p["message"]: p["severity"] for p in problems if p["message"].startswith("member 'd'")}
    assert any("`openai.reasoning_effort` must be one of" in m and s == "error" for m, s in d.items())
    assert any("`openai.frequency_penalty` is not sent by apiType openai-responses" in m and s == "warning" for m, s in d.items())


def test_a_provider_chosen_by_the_keys_set_is_checked_too(tmp_path: Path) -> None:
    team = """\
members:
  lead:
    name: Lead
    model_params: {anthropic: {top_k: 0}}
"""
    llm = LLM_YAML.replace("CHECK_ANTHROPIC_KEY", "CHECK_AUTO_KEY")
    ws = workspace(tmp_path / "ws", team)
    (ws / ".minds" / "llm.yaml").write_text(llm)
    code, problems = check(ws, CHECK_AUTO_KEY="k")
    assert code == 1
    [problem] = [p for p in problems if "top_k" in p["message"]]
    assert "chosen by the keys set" in problem["message"] and problem["line"] == 4
