"""Temp workspaces for tests: a three-member team (lead, coder, researcher) on the scripted provider.

A plain module (not a conftest) so any test can import it without conftest name clashes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dominds.ids import new_dialog_id, now_iso
from dominds.rtws import Rtws
from dominds.store.course_records import CourseStartRecord
from dominds.store.dialog_store import DialogStore
from dominds.store.records import DialogMeta, LatestState

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


def write_idle_root(store: DialogStore, agent_id: str = "lead", task_doc_path: str = "tasks/t.tsk") -> str:
    """A root dialog at rest in ``run/``, written straight to disk (its meta, its state stamped now, an
    empty first course): many of them make a big listing in milliseconds. Returns its id."""
    root_id = new_dialog_id()
    files = store.files("run", root_id, root_id)
    files.write_meta(DialogMeta(id=root_id, root_id=root_id, agent_id=agent_id, task_doc_path=task_doc_path, created_at=now_iso()))
    files.write_latest(LatestState(last_modified=now_iso()))
    files.append(1, CourseStartRecord(ts=now_iso(), course=1))
    return root_id
