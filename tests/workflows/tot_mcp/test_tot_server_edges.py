"""ToT MCP edge cases a real client hits, through the MCP SDK's client (in-process) and raw stdio.

The bugs: a missing required argument came back as raw pydantic text instead of INVALID_ARGUMENT;
both spellings of an argument (`minRoots` with `min_roots`, `sessionId` with `session_id`, `state`
with `newState`) were silently accepted, one of them dropped; ids with spaces around them were
silently trimmed; requests still in flight when stdin closed were never answered; empty prompts and
resources capabilities were advertised; `tot_status` echoed every findings text in full.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp_pipe import pipe_calls
from test_tot_server import REPO_ROOT, Tot, in_process, only_text, root


def _read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


async def invalid(t: Tot, tool: str, **args: Any) -> dict[str, Any]:
    """The single INVALID_ARGUMENT error of a refused call."""
    errors = await t.rejected(tool, **args)
    assert [e["code"] for e in errors] == ["INVALID_ARGUMENT"], errors
    return errors[0]


async def test_a_missing_required_argument_is_invalid_argument_not_pydantic_text(tmp_path: Path) -> None:
    async with in_process(tmp_path) as t:
        assert "query is missing" in (await invalid(t, "tot_start"))["message"]
        sid = await t.start(1)
        assert "nodes is missing" in (await invalid(t, "tot_propose", sessionId=sid))["message"]
        assert "sessionId is missing" in (await invalid(t, "tot_commit", results=[]))["message"]
        missing_field = await invalid(t, "tot_propose", sessionId=sid, nodes=[{"id": "R1.A", "parent": None, "title": "t"}])
        assert "nodes[0].plannedAction is missing" in missing_field["message"]
        for error in [await invalid(t, "tot_end")]:
            assert "validation error" not in error["message"].lower() and error["hint"]


@pytest.mark.parametrize(
    ("tool", "args", "names"),
    [
        ("tot_start", {"query": "q", "minRoots": 2, "min_roots": 3}, ("minRoots", "min_roots")),
        ("tot_start", {"query": "q", "minRoots": 2, "min_roots": 2}, ("minRoots", "min_roots")),
        ("tot_status", {"sessionId": "SID", "session_id": "SID"}, ("sessionId", "session_id")),
        ("tot_reclassify", {"sessionId": "SID", "nodeId": "R1.A", "state": "DRILL", "newState": "DEAD"}, ("state", "newState")),
        ("tot_reclassify", {"sessionId": "SID", "nodeId": "R1.A", "state": "DRILL", "new_state": "DRILL"}, ("state", "new_state")),
        ("tot_propose", {"sessionId": "SID", "nodes": [{**root("R1.B"), "planned_action": "y"}]}, ("plannedAction", "planned_action")),
    ],
)
async def test_two_spellings_of_one_argument_are_refused_naming_both(
    tmp_path: Path, tool: str, args: dict[str, Any], names: tuple[str, str]
) -> None:
    async with in_process(tmp_path) as t:
        sid = await t.start(1)
        await t.grow(sid, {"R1.A": (None, "DEAD")})
        args = json.loads(json.dumps(args).replace('"SID"', json.dumps(sid)))
        error = await invalid(t, tool, **args)
        assert names[0] in error["message"] and names[1] in error["message"], error
        assert (await t.ok("tot_status", sessionId=sid))["counts"]["DEAD"] == 1, "nothing changed"


async def test_unknown_arguments_are_refused_instead_of_ignored(tmp_path: Path) -> None:
    async with in_process(tmp_path) as t:
        error = await invalid(t, "tot_start", query="q", minRoot=5)  # a typo would silently give the default 3
        assert "minRoot" in error["message"] and "minRoots" in error["hint"]
        sid = await t.start(1)
        error = await invalid(t, "tot_propose", sessionId=sid, nodes=[{**root("R1.A"), "parentId": None}])
        assert "nodes[0]" in error["message"] and "parentId" in error["message"]


@pytest.mark.parametrize(
    ("tool", "where"),
    [("tot_status", "sessionId"), ("tot_propose-id", "nodes[0].id"), ("tot_commit", "results[0].nodeId"), ("tot_reclassify", "nodeId")],
)
async def test_ids_with_spaces_around_them_are_refused_not_trimmed(tmp_path: Path, tool: str, where: str) -> None:
    async with in_process(tmp_path) as t:
        sid = await t.start(1)
        await t.grow(sid, {"R1.A": (None, "DRILL")})
        await t.ok("tot_propose", sessionId=sid, nodes=[{"id": "R2.A1", "parent": "R1.A", "title": "t", "plannedAction": "a"}])
        calls = {
            "tot_status": ("tot_status", {"sessionId": f" {sid}"}),
            "tot_propose-id": ("tot_propose", {"sessionId": sid, "nodes": [{"id": "R2.A2 ", "parent": "R1.A", "title": "t", "plannedAction": "a"}]}),
            "tot_commit": ("tot_commit", {"sessionId": sid, "results": [{"nodeId": "\tR2.A1", "state": "DEAD", "findings": "f"}]}),
            "tot_reclassify": ("tot_reclassify", {"sessionId": sid, "nodeId": "R1.A\n", "state": "VERIFY"}),
        }
        name, args = calls[tool]
        error = await invalid(t, name, **args)
        assert where in error["message"] and "spaces" in error["message"]
        status = await t.ok("tot_status", sessionId=sid)
        assert status["pending"] == ["R2.A1"] and status["counts"]["DRILL"] == 1, "nothing changed"


async def test_tot_status_bounds_long_texts_and_tot_end_keeps_them(tmp_path: Path) -> None:
    async with in_process(tmp_path) as t:
        sid = await t.start(1)
        await t.ok("tot_propose", sessionId=sid, nodes=[root("R1.A")])
        findings = "evidence" + " evidence" * 999  # 8,999 characters
        await t.ok("tot_commit", sessionId=sid, results=[{"nodeId": "R1.A", "state": "DRILL", "findings": findings}])
        result = await t.client.call_tool("tot_status", {"sessionId": sid})
        text = only_text(result)
        assert len(text) < 3_000 and "evidence" in text and "(8,999 characters; tot_end returns the full text)" in text
        too_long = await invalid(t, "tot_start", query="q" * 20_001)
        assert "20,000" in too_long["message"]
        await t.ok("tot_propose", sessionId=sid, nodes=[{"id": "R2.A1", "parent": "R1.A", "title": "t", "plannedAction": "a"}])
        huge = await invalid(t, "tot_commit", sessionId=sid, results=[{"nodeId": "R2.A1", "state": "DEAD", "findings": "x" * 20_001}])
        assert "results[0].findings" in huge["message"]
        await t.ok("tot_commit", sessionId=sid, results=[{"nodeId": "R2.A1", "state": "DRILL", "findings": "f"}])
        await t.grow(sid, {"R3.A1a": ("R2.A1", "VALID"), "R3.A1b": ("R2.A1", "DEAD")})
        await t.grow(sid, {"R2.A2": ("R1.A", "DEAD")})
        report = await t.ok("tot_end", sessionId=sid)
        assert json.loads(_read(report["fullReport"]["json"]))["tree"][0]["findings"] == findings, "the full report keeps the full text"


async def test_tot_status_of_a_large_tree_stays_bounded_and_keeps_the_open_nodes(tmp_path: Path) -> None:
    """Clipping each text was not enough: a tree of many nodes still made every tot_status as long as
    the whole tree (80 nodes with long texts: over 40,000 characters), though a status is asked for after
    every step. The tree is now cut to a budget that says what was left out, and the open work (pending
    proposals, nodes that need children, what to do next) is always listed in full."""
    long, title = "detail " * 100, "title " * 80  # 700 and 480 characters, each clipped to 240 in a status
    async with in_process(tmp_path) as t:
        sid = await t.start(5)
        roots = [f"R1.{c}" for c in "ABCDE"]
        await t.ok("tot_propose", sessionId=sid, nodes=[{**root(r), "title": title} for r in roots])
        await t.ok("tot_commit", sessionId=sid, results=[{"nodeId": r, "state": "DRILL", "findings": long} for r in roots])
        children = [(f"R2.{r[-1]}{i}", r) for r in roots for i in range(1, 17)]  # 80 children, 16 per root
        for start in range(0, len(children), 5):
            batch = children[start : start + 5]
            nodes = [{"id": c, "parent": p, "title": title, "plannedAction": "look"} for c, p in batch]
            await t.ok("tot_propose", sessionId=sid, nodes=nodes)
            state = "DRILL" if start == 0 else "DEAD"  # R2.A1..R2.A5 stay open: each needs 2 children
            await t.ok("tot_commit", sessionId=sid, results=[{"nodeId": c, "state": state, "findings": long} for c, _ in batch])
        text = only_text(await t.client.call_tool("tot_status", {"sessionId": sid}))
        status = json.loads(text)
        assert len(text) < 20_000, len(text)
        assert "more nodes not shown" in status["tree"] and "tot_end" in status["tree"]
        assert status["nodes"] == 85 and status["counts"]["DEAD"] == 75
        assert [n["nodeId"] for n in status["childrenNeeded"]] == [f"R2.A{i}" for i in range(1, 6)]
        assert status["next"].startswith("tot_propose children for: R2.A1 (2 more)")


async def test_tot_status_without_an_id_lists_the_latest_sessions_and_counts_the_rest(tmp_path: Path) -> None:
    """The session list had no bound either: every session the workspace ever had, in every call."""
    async with in_process(tmp_path) as t:
        ids = [await t.start(1) for _ in range(55)]
        listing = await t.ok("tot_status")
        assert listing["total"] == 55 and len(listing["sessions"]) == 50
        assert {s["sessionId"] for s in listing["sessions"]} == set(ids[5:]), "the latest changed first"
        assert "5 older sessions not listed" in listing["more"]
        assert (await t.ok("tot_status", sessionId=ids[0]))["nodes"] == 0, "an older one is still there by its id"


async def test_no_empty_capability_is_advertised(tmp_path: Path) -> None:
    """Tools, and resources (the full reports tot_end writes, see test_tot_end_bounded); no prompts."""
    async with in_process(tmp_path) as t:
        caps = t.client.server_capabilities
        assert caps.tools is not None and caps.prompts is None and caps.resources is not None


def test_requests_in_flight_when_stdin_closes_are_all_answered(tmp_path: Path) -> None:
    """A client that writes its calls and closes stdin (a pipe, `mcp` in a script) gets every answer."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DOMINDS_FSYNC": "0"}
    calls = [("tot_start", {"query": f"q{i}"}) for i in range(1, 31)]
    replies = pipe_calls(["tot-mcp", "--sessions-dir", str(tmp_path / "s")], calls, cwd=tmp_path, env=env)
    assert all("result" in r and not r["result"].get("isError") for r in replies)
    assert len(list((tmp_path / "s").iterdir())) == 30
    assert set(replies[0]["result"]["capabilities"]) == {"tools", "resources"}
