"""Temp workspaces for tests: a three-member team (lead, coder, researcher) on the scripted provider.

A plain module (not a conftest) so any test can import it without conftest name clashes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dominds.rtws import Rtws

TEAM_YAML = """\
member_defaults:
  provider: scripted
  model: test
  diligence_push_max: 0
  fbr_effort: 2
default_responder: lead
members:
  lead: {name: Lead, gofor: [plans and delegates]}
  coder: {name: Coder, gofor: [writes code]}
  researcher: {name: Researcher, gofor: [finds facts]}
"""

LLM_YAML = """\
providers:
  scripted:
    name: Scripted
    apiType: scripted
    baseUrl: .minds/scripted
    apiKeyEnvVar: null
    models:
      test: {context_length: 200000, pricing: {input: 1.0, output: 2.0}}
"""


def team_yaml(members: dict[str, str], *, fbr_effort: int = 2, default_responder: str = "lead") -> str:
    """A team on the scripted provider: ``members`` maps id → what it is for."""
    lines = [f"  {mid}: {{name: {mid.title()}, gofor: [{gofor}]}}" for mid, gofor in members.items()]
    return (
        "member_defaults:\n  provider: scripted\n  model: test\n  diligence_push_max: 0\n"
        f"  fbr_effort: {fbr_effort}\ndefault_responder: {default_responder}\nmembers:\n" + "\n".join(lines) + "\n"
    )


def write_workspace(root: Path, responses: list[dict[str, Any]]) -> Rtws:
    rtws = Rtws(root)
    (root / ".minds" / "scripted").mkdir(parents=True, exist_ok=True)
    rtws.team_yaml.write_text(TEAM_YAML)
    rtws.llm_yaml.write_text(LLM_YAML)
    set_responses(rtws, responses)
    (root / "tasks" / "t.tsk").mkdir(parents=True, exist_ok=True)
    (root / "tasks" / "t.tsk" / "goals.md").write_text("Ship the feature.\n")
    rtws.ensure_layout()
    return rtws


def set_responses(rtws: Rtws, responses: list[dict[str, Any]]) -> None:
    path = rtws.minds_dir / "scripted" / "test.yaml"
    path.write_text(yaml.safe_dump({"responses": responses}, allow_unicode=True, sort_keys=False))
