"""Toolsets and workflow members belong to an engine, never to the process.

The bug these pin: toolsets (``tools/base.py``) and workflow members and personas (``team.py``) were
process-wide registries filled at import time, so whether a team had the debate's members depended on
which modules some earlier code had imported, and a test or a second engine in the same process saw
another's members (the Plan & Solve tests had to monkeypatch the registry back after each test).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from workspace_kit import write_workspace

from dominds.driver.engine import Engine
from dominds.driver.extensions import Extensions, with_builtins
from dominds.team import WorkflowMembers
from dominds.tools.base import FuncTool, ToolCallContext, Toolsets, object_schema
from dominds.workflows.debate.members import debate_extensions, ensure_members
from dominds.workflows.mount import workflow_extensions


def test_importing_every_workflow_and_tool_module_changes_no_team() -> None:
    code = (
        "import dominds.workflows.mount, dominds.workflows.debate, dominds.workflows.debate.web, "
        "dominds.workflows.plan_solve.web, dominds.workflows.tot.web, dominds.tools.builtin, dominds.cli.main\n"
        "from dominds.team import bootstrap_team\n"
        "print(sorted(bootstrap_team().members))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "['fuxi', 'pangu']"


async def test_two_engines_in_one_process_keep_their_own_members_and_toolsets(tmp_path: Path) -> None:
    plain = Engine(write_workspace(tmp_path / "a", []), take_lock=False)
    served = Engine(write_workspace(tmp_path / "b", []), take_lock=False, extensions=workflow_extensions())
    try:
        plain_config, served_config = plain.config.get(), served.config.get()
        assert served_config.team.member("debate-planner") is not None
        assert served_config.team.member("tot-evaluator") is not None
        assert "debate-time" in served_config.toolsets.names()
        assert plain_config.team.member("debate-planner") is None
        assert "debate-time" not in plain_config.toolsets.names()
        # every engine has the built-in toolsets
        assert set(with_builtins().toolsets.names()) <= set(plain_config.toolsets.names())
        # a workflow entry point gives a plain engine its members; the team reloads once, not again
        ensure_members(plain)
        extended = plain.config.get()
        assert extended.team.member("debate-planner") is not None and extended.generation == 2
        ensure_members(plain)
        assert plain.config.get().generation == 2
        assert served.config.persona("debate-planner") == plain.config.persona("debate-planner") is not None
        # and nothing leaked to a third engine
        third = Engine(write_workspace(tmp_path / "c", []), take_lock=False)
        assert third.config.get().team.member("debate-planner") is None
    finally:
        await plain.close()
        await served.close()


async def test_a_workflow_toolset_belongs_to_its_engine_and_is_validated_in_team_yaml(tmp_path: Path) -> None:
    async def echo(ctx: ToolCallContext, args: dict[str, object]) -> str:
        return "echo"

    tool = FuncTool("echo_x", "echo", object_schema({}), echo)
    extension = Extensions(
        toolsets=Toolsets.of({"echoes": [tool]}),
        members=WorkflowMembers(specs={"echoer": {"name": "Echoer", "toolsets": ("echoes",)}}),
    )
    rtws = write_workspace(tmp_path / "ws", [])
    rtws.team_yaml.write_text(rtws.team_yaml.read_text() + "  typo: {toolsets: [echoes]}\n")
    with_it = Engine(rtws, take_lock=False, extensions=extension)
    without = Engine(rtws, take_lock=False)
    try:
        config = with_it.config.get()
        assert config.toolsets.get("echoes") == [tool]
        assert config.team.member("echoer") is not None and config.team.member("echoer").hidden  # type: ignore[union-attr]
        assert not [p for p in config.problems if "echoes" in p.message]
        # the same team.yaml on an engine without the extension names the unknown toolset
        assert [p for p in without.config.get().problems if "unknown toolset 'echoes'" in p.message]
    finally:
        await with_it.close()
        await without.close()


def test_debate_extensions_are_a_value() -> None:
    first, second = debate_extensions(), debate_extensions()
    assert first == second and first.covers(second) and not Extensions().covers(first)
