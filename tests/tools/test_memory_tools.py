"""memory / team_memory: notes confined to the caller's memory directory, loaded into context by the driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dominds.driver.config import ConfigCache
from dominds.driver.context import memory_messages
from dominds.rtws import Rtws
from dominds.tools.base import FuncTool, ToolCallContext, ToolError
from dominds.tools.builtin import builtin_toolsets
from dominds.tools.memory import MAX_MEMORY_BYTES, MEMORY_TOOLS, TEAM_MEMORY_TOOLS

TOOLS: dict[str, FuncTool] = {t.name: t for t in [*MEMORY_TOOLS, *TEAM_MEMORY_TOOLS]}


def make_ctx(rtws: Rtws, agent: str = "lead") -> ToolCallContext:
    return ToolCallContext(rtws=rtws, root_id="d1", self_id="d1", agent_id=agent)


async def call(ctx: ToolCallContext, name: str, **args: Any) -> str:
    jsonschema.validate(args, TOOLS[name].parameters)
    return await TOOLS[name].handler(ctx, args)


async def refused(ctx: ToolCallContext, name: str, **args: Any) -> str:
    with pytest.raises(ToolError) as info:
        await call(ctx, name, **args)
    return str(info.value)


def personal(rtws: Rtws, agent: str = "lead") -> Path:
    return rtws.minds_dir / "memory" / "individual" / agent


def test_memory_toolsets_are_built_in() -> None:
    memory, team = builtin_toolsets().get("memory"), builtin_toolsets().get("team_memory")
    assert memory is not None and team is not None
    assert [t.name for t in memory] == ["add_memory", "replace_memory", "drop_memory", "list_memory"]
    assert [t.name for t in team] == ["add_team_memory", "replace_team_memory", "drop_team_memory"]


async def test_personal_memory_lifecycle_reaches_the_context(tmp_rtws: Rtws) -> None:
    ctx = make_ctx(tmp_rtws)
    assert "no personal memory" in await call(ctx, "list_memory")
    await call(ctx, "add_memory", path="project/conventions.md", content="Use ruff.")
    note = personal(tmp_rtws) / "project" / "conventions.md"
    assert note.read_text() == "Use ruff.\n"
    assert "already exists" in await refused(ctx, "add_memory", path="project/conventions.md", content="x")
    await call(ctx, "replace_memory", path="project/conventions.md", content="Use ruff and mypy.")
    assert "project/conventions.md (19 bytes)" in await call(ctx, "list_memory")
    [message] = memory_messages(ConfigCache(tmp_rtws), "lead")
    assert message.content == "[personal memory: individual/lead/project/conventions.md]\nUse ruff and mypy."
    assert memory_messages(ConfigCache(tmp_rtws), "coder") == []  # personal means personal
    await call(ctx, "drop_memory", path="project/conventions.md")
    assert not note.exists() and not note.parent.exists()  # the emptied directory went too
    assert "does not exist" in await refused(ctx, "drop_memory", path="project/conventions.md")
    assert "use add_memory" in await refused(ctx, "replace_memory", path="gone.md", content="x")


async def test_team_memory_is_shared(tmp_rtws: Rtws) -> None:
    await call(make_ctx(tmp_rtws, "lead"), "add_team_memory", path="glossary.md", content="TSK = Taskdoc")
    assert (tmp_rtws.minds_dir / "memory" / "team_shared" / "glossary.md").read_text() == "TSK = Taskdoc\n"
    await call(make_ctx(tmp_rtws, "coder"), "replace_team_memory", path="glossary.md", content="TSK: Taskdoc")
    for member in ("lead", "coder"):
        [message] = memory_messages(ConfigCache(tmp_rtws), member)
        assert message.content.endswith("TSK: Taskdoc")
    await call(make_ctx(tmp_rtws, "coder"), "drop_team_memory", path="glossary.md")
    assert memory_messages(ConfigCache(tmp_rtws), "lead") == []


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../coder/notes.md", "`..`"),
        ("a/../../../team.yaml.md", "`..`"),
        ("/etc/passwd.md", "relative"),
        ("C:/notes.md", "relative"),
        ("notes.txt", "`.md`"),
        ("notes", "`.md`"),
        ("", "relative"),
        ("plan.tsk/goals.md", "ACCESS_DENIED"),
    ],
)
@pytest.mark.parametrize("tool", ["add_memory", "replace_memory", "drop_memory", "add_team_memory"])
async def test_memory_paths_are_confined(tmp_rtws: Rtws, tool: str, path: str, why: str) -> None:
    args = {"path": path} if tool.startswith("drop") else {"path": path, "content": "x"}
    assert why in await refused(make_ctx(tmp_rtws), tool, **args)
    written = [p for p in tmp_rtws.root.rglob("*") if p.is_file() and ".dialogs" not in p.parts]
    assert written == []


async def test_a_symlink_cannot_lead_memory_elsewhere(tmp_rtws: Rtws, tmp_path: Path) -> None:
    base = personal(tmp_rtws)
    base.mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (base / "out").symlink_to(tmp_path / "outside", target_is_directory=True)
    (base / "minds").symlink_to(tmp_rtws.minds_dir, target_is_directory=True)
    ctx = make_ctx(tmp_rtws)
    assert "ACCESS_DENIED" in await refused(ctx, "add_memory", path="out/x.md", content="x")
    # inside the workspace, but outside this member's memory: the tools' own prefix check refuses
    assert "leads outside `.minds/memory/individual/lead/`" in await refused(
        ctx, "add_memory", path="minds/team.md", content="x"
    )
    assert list((tmp_path / "outside").iterdir()) == [] and not (tmp_rtws.minds_dir / "team.md").exists()


async def test_agent_id_cannot_escape_and_size_is_bounded(tmp_rtws: Rtws) -> None:
    assert "cannot name a memory directory" in await refused(
        make_ctx(tmp_rtws, ".."), "add_memory", path="a.md", content="x"
    )
    big = "x" * MAX_MEMORY_BYTES
    assert "the limit is" in await refused(make_ctx(tmp_rtws), "add_memory", path="big.md", content=big)
    assert not personal(tmp_rtws).exists()
