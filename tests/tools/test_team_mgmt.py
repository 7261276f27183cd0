"""The read-only ``team-mgmt`` toolset (issue 32): the shadow member ``fuxi`` was given a toolset that did
not exist, ``access.py`` told refused models to use ``team_mgmt_*`` tools that did not exist, and
``dominds check`` reported no problem."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from workspace_kit import write_workspace

from dominds.access import AccessDenied, check_access
from dominds.driver.engine import Engine
from dominds.store.course_records import FuncResultRecord
from dominds.team import load_team
from dominds.tools.base import Toolsets
from dominds.tools.builtin import builtin_toolsets


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    responses: list[dict[str, Any]] = [
        {"agent": "fuxi", "message": "show the team", "stream": [
            {"func_call": {"name": "team_mgmt_list_files", "arguments": {}}},
            {"func_call": {"name": "team_mgmt_read_file", "arguments": {"path": "team.yaml"}}},
            {"func_call": {"name": "team_mgmt_read_file", "arguments": {"path": "../tasks/t.tsk/goals.md"}}},
            {"func_call": {"name": "team_mgmt_check", "arguments": {}}},
        ]},
        {"agent": "fuxi", "role": "tool", "contains": "problem", "response": "Here is the team."},
    ]  # fmt: skip
    rtws = write_workspace(tmp_path / "ws", responses)
    with rtws.team_yaml.open("a") as f:
        f.write("  coder2: {name: Coder2, toolsets: [no_such_toolset]}\n")
    engine = Engine(rtws)
    await engine.start()
    yield engine
    await engine.close()


async def test_fuxi_reads_and_validates_minds_but_nothing_outside(engine: Engine) -> None:
    root = engine.create_dialog("fuxi", "tasks/t.tsk")
    engine.submit_user_message(root, "show the team")
    await engine.wait_idle()
    course = root.files.read_course(root.latest.current_course)
    results = [r for r in course if isinstance(r, FuncResultRecord)]  # in the order the tools finished
    [listed] = [r for r in results if r.name == "team_mgmt_list_files"]
    [check] = [r for r in results if r.name == "team_mgmt_check"]
    [outside] = [r for r in results if r.name == "team_mgmt_read_file" and r.is_error]
    [team_yaml] = [r for r in results if r.name == "team_mgmt_read_file" and not r.is_error]
    assert not listed.is_error and "team.yaml" in listed.content and "llm.yaml" in listed.content
    assert not team_yaml.is_error and "default_responder: lead" in team_yaml.content
    assert outside.is_error and "without `..`" in outside.content, "confined to .minds/"
    assert not check.is_error and "no_such_toolset" in check.content and "team.yaml" in check.content


def test_the_toolset_the_runtime_gives_fuxi_exists_and_the_access_hint_names_real_tools(tmp_path: Path) -> None:
    toolsets = builtin_toolsets()
    tools = {t.name for t in toolsets.get("team-mgmt") or []}
    assert tools == {"team_mgmt_list_files", "team_mgmt_read_file", "team_mgmt_check"}
    rtws = write_workspace(tmp_path / "ws", [])
    with pytest.raises(AccessDenied) as refused:
        check_access(rtws.root, ".minds/team.yaml", write=False)
    named = set(re.findall(r"team_mgmt_\w+", refused.value.render()))
    assert named and named <= tools, "the refusal names only tools that exist"
    team, problems = load_team(rtws, toolsets)
    assert not problems and "team-mgmt" in team.members["fuxi"].toolsets


def test_check_reports_a_shadow_toolset_the_daemon_does_not_offer(tmp_path: Path) -> None:
    """``dominds check`` must not report fine while the runtime's own reference is broken."""
    rtws = write_workspace(tmp_path / "ws", [])
    without = Toolsets({name: tuple(builtin_toolsets().get(name) or ()) for name in ("control", "ws_read")})
    _, problems = load_team(rtws, without)
    assert any("'team-mgmt'" in p.message and p.severity == "error" for p in problems), problems
