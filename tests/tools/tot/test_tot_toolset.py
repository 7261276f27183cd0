"""The `tot` toolset (function tools for agents) and the session files it shares with the MCP server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dominds.rtws import Rtws
from dominds.tools.base import FuncTool, ToolCallContext, ToolError
from dominds.tools.builtin import builtin_toolsets
from dominds.tools.tot import machine
from dominds.tools.tot.machine import CommitResult, NodeState, ProposedNode
from dominds.tools.tot.sessions import SessionStore, TotService
from dominds.tools.tot.toolset import TOT_TOOLS, call_tool

TOOL_NAMES = ["tot_start", "tot_propose", "tot_commit", "tot_reclassify", "tot_status", "tot_end"]


@pytest.fixture
def ctx(tmp_rtws: Rtws) -> ToolCallContext:
    return ToolCallContext(rtws=tmp_rtws, root_id="d1", self_id="d1", agent_id="researcher")


def tool(name: str) -> FuncTool:
    return next(t for t in TOT_TOOLS if t.name == name)


async def call(ctx: ToolCallContext, name: str, **args: Any) -> dict[str, Any]:
    jsonschema.validate(args, tool(name).parameters)  # what the driver checks before the handler runs
    result: dict[str, Any] = json.loads(await tool(name).handler(ctx, args))
    return result


def roots(*suffixes: str) -> list[dict[str, Any]]:
    return [{"id": f"R1.{s}", "parent": None, "title": f"idea {s}", "plannedAction": "look"} for s in suffixes]


def test_the_toolset_is_built_in_with_six_closed_schemas() -> None:
    registered = builtin_toolsets().get("tot")
    assert registered is not None
    assert [t.name for t in registered] == TOOL_NAMES
    for t in registered:
        jsonschema.Draft202012Validator.check_schema(t.parameters)
        assert t.parameters["additionalProperties"] is False
    assert tool("tot_propose").parameters["required"] == ["sessionId", "nodes"]
    assert tool("tot_propose").parameters["properties"]["nodes"]["maxItems"] == machine.MAX_BATCH
    assert tool("tot_status").parameters["required"] == []
    assert "R[round].[suffix]" in tool("tot_start").description


async def test_a_session_runs_through_the_toolset_and_lands_in_the_workspace(ctx: ToolCallContext) -> None:
    started = await call(ctx, "tot_start", query="Why do builds time out?", minRoots=2)
    sid = started["sessionId"]
    assert (ctx.rtws.state_dir / "tot" / f"{sid}.json").is_file()
    await call(ctx, "tot_propose", sessionId=sid, nodes=roots("A", "B"))
    committed = await call(
        ctx,
        "tot_commit",
        sessionId=sid,
        results=[
            {"nodeId": "R1.A", "state": "DRILL", "findings": "cache misses"},
            {"nodeId": "R1.B", "state": "DEAD", "findings": "network is fine"},
        ],
    )
    assert committed["childrenNeeded"] == [{"nodeId": "R1.A", "state": "DRILL", "children": 0, "required": 2}]
    status = await call(ctx, "tot_status", sessionId=sid)
    assert status["round"] == 1 and "- **R1.A** `DRILL` idea A: cache misses" in status["tree"]
    assert [s["sessionId"] for s in (await call(ctx, "tot_status"))["sessions"]] == [sid]


async def test_a_rule_violation_is_a_tool_error_with_code_and_hint(ctx: ToolCallContext) -> None:
    sid = (await call(ctx, "tot_start", query="q", minRoots=1))["sessionId"]
    with pytest.raises(ToolError) as info:
        await call(ctx, "tot_commit", sessionId=sid, results=[{"nodeId": "R1.A", "state": "DRILL", "findings": "x"}])
    assert "NOT_PROPOSED [R1.A]" in str(info.value)
    assert machine.HINTS["NOT_PROPOSED"] in str(info.value)


async def test_strings_and_snake_case_are_accepted_by_the_handlers(ctx: ToolCallContext) -> None:
    # the driver's schema sees camelCase; the handler itself tolerates what lenient hosts send
    start = tool("tot_start").handler
    sid = json.loads(await start(ctx, {"query": "q", "min_roots": "2"}))["sessionId"]
    nodes = json.dumps(
        [{"id": f"R1.{s}", "parent": "null", "title": s, "planned_action": "look"} for s in ("A", "B")]
    )
    proposed = json.loads(await tool("tot_propose").handler(ctx, {"session_id": sid, "nodes": nodes}))
    assert proposed["approved"] == ["R1.A", "R1.B"]
    results = [{"node_id": "R1.A", "state": "drill", "findings": "f"}, {"node_id": "R1.B", "state": " Dead ", "findings": "f"}]
    committed = json.loads(await tool("tot_commit").handler(ctx, {"session_id": sid, "results": results}))
    assert committed["counts"]["DRILL"] == 1 and committed["counts"]["DEAD"] == 1


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"query": "q", "minRoots": 0}, "minRoots 0 is out of range"),
        ({"query": "q", "minRoots": "6"}, "minRoots 6 is out of range"),
        ({"query": "q", "minRoots": "many"}, "minRoots must be a number"),
        ({"query": "q", "minRoots": 2, "min_roots": 3}, "both minRoots and min_roots"),
        ({"query": "  "}, "query must be a non-empty string"),
        ({}, "query is missing"),
    ],
)
async def test_bad_arguments_are_invalid_argument(ctx: ToolCallContext, args: dict[str, Any], expected: str) -> None:
    with pytest.raises(ToolError) as info:
        await tool("tot_start").handler(ctx, args)
    assert "INVALID_ARGUMENT" in str(info.value) and expected in str(info.value)


async def test_min_roots_defaults_to_three(ctx: ToolCallContext) -> None:
    assert (await call(ctx, "tot_start", query="q"))["minRoots"] == machine.DEFAULT_MIN_ROOTS == 3


async def test_a_rejected_call_does_not_touch_the_session_file(ctx: ToolCallContext) -> None:
    sid = (await call(ctx, "tot_start", query="q", minRoots=2))["sessionId"]
    path = ctx.rtws.state_dir / "tot" / f"{sid}.json"
    before = path.read_bytes()
    with pytest.raises(ToolError, match="INSUFFICIENT_ROOTS"):
        await call(ctx, "tot_propose", sessionId=sid, nodes=roots("A"))
    assert path.read_bytes() == before


# ---- the session store ----------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "tot")


def start(store: SessionStore, query: str = "q") -> str:
    return str(TotService(store).start(query, 1)["sessionId"])


def test_a_corrupt_file_is_named_in_the_error_and_skipped_by_listing(store: SessionStore) -> None:
    good = start(store, "good")
    (store.directory / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(machine.TotError) as info:
        store.load("broken")
    assert info.value.code == "SESSION_CORRUPT" and str(store.directory / "broken.json") in str(info.value)
    listing = TotService(store).status(None)
    assert [s["sessionId"] for s in listing["sessions"]] == [good]
    assert listing["unreadable"][0]["file"] == str(store.directory / "broken.json")


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d | {"version": 2}, "format version 2; this dominds reads version 1"),
        (lambda d: d | {"minRoots": "lots"}, "minRoots"),
        (lambda d: d | {"sessionId": "other"}, "holds session 'other'"),
        (lambda d: [d], "is not a ToT session"),
    ],
)
def test_unusable_records_are_session_corrupt(store: SessionStore, mutate: Any, expected: str) -> None:
    sid = start(store)
    path = store.path_for(sid)
    path.write_text(json.dumps(mutate(json.loads(path.read_text()))), encoding="utf-8")
    with pytest.raises(machine.TotError, match=expected) as info:
        store.load(sid)
    assert info.value.code == "SESSION_CORRUPT"


def _with_child(store: SessionStore) -> tuple[str, Path]:
    service = TotService(store)
    sid = start(store)
    service.propose(sid, [ProposedNode("R1.A", None, "a", "look")])
    service.commit(sid, [CommitResult("R1.A", NodeState.DRILL, "lead")])
    service.propose(sid, [ProposedNode("R2.A1", "R1.A", "a1", "look")])
    service.commit(sid, [CommitResult("R2.A1", NodeState.DRILL, "lead")])
    return sid, store.path_for(sid)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda nodes: nodes["R1.A"].update(parent="R2.A1"), "R1.A has no committed parent R2.A1 one round up"),
        (lambda nodes: nodes["R1.A"].update(children=[]), "R2.A1 is missing from the children of R1.A"),
        (lambda nodes: nodes["R1.A"]["children"].append("R2.A9"), "R1.A lists 'R2.A9'"),
        (lambda nodes: nodes.update(R9=nodes.pop("R2.A1")), "entry 'R9' holds node 'R2.A1'"),
    ],
)
def test_a_tree_whose_links_do_not_hang_together_is_session_corrupt(store: SessionStore, edit: Any, expected: str) -> None:
    sid, path = _with_child(store)
    data = json.loads(path.read_text())
    edit(data["nodes"])
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(machine.TotError, match=expected) as info:
        TotService(store).status(sid)
    assert info.value.code == "SESSION_CORRUPT" and str(path) in str(info.value)


def test_an_unknown_tool_name_is_an_invalid_argument(store: SessionStore) -> None:
    with pytest.raises(machine.TotError, match="unknown tool tot_fly") as info:
        call_tool(TotService(store), "tot_fly", {"sessionId": "x"})
    assert info.value.code == "INVALID_ARGUMENT"


@pytest.mark.parametrize("session_id", ["nope", "../etc/passwd", "a/b", "-x"])
def test_unknown_or_unsafe_ids_are_session_not_found(store: SessionStore, session_id: str) -> None:
    with pytest.raises(machine.TotError) as info:
        TotService(store).status(session_id)
    assert info.value.code == "SESSION_NOT_FOUND"


def test_listing_a_missing_directory_is_empty(store: SessionStore) -> None:
    assert TotService(store).status(None)["sessions"] == []


def test_a_failed_write_is_a_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(machine.TotError) as info:
        start(SessionStore(blocker / "tot"))
    assert info.value.code == "STORAGE_ERROR" and str(blocker) in str(info.value)


def test_a_saved_session_reloads_equal(store: SessionStore) -> None:
    service = TotService(store)
    sid = start(store)
    service.propose(sid, [ProposedNode("R1.A", None, "idea", "look")])
    service.commit(sid, [CommitResult("R1.A", NodeState.VERIFY, "hm")])
    reloaded = SessionStore(store.directory).load(sid)
    assert reloaded.nodes["R1.A"].state is machine.NodeState.VERIFY
    assert reloaded == store.load(sid)
    assert not list(store.directory.glob(".*.tmp"))  # write_atomic left no temp files
