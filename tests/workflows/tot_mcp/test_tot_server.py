"""The ToT MCP server, driven by the MCP SDK's own clients: in-process for every rule, over stdio for the CLI."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult, TextContent

from dominds.rtws import Rtws
from dominds.tools.tot.machine import HINTS
from dominds.tools.tot.sessions import SessionStore
from dominds.workflows.tot_mcp.server import build_server

REPO_ROOT = Path(__file__).resolve().parents[3]
Batch = Mapping[str, tuple[str | None, str]]


def only_text(result: CallToolResult) -> str:
    """Every tool answers with exactly one text block."""
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return result.content[0].text


class Tot:
    """A thin driver over an MCP client that decodes the JSON each tool returns."""

    def __init__(self, client: Client, store: SessionStore) -> None:
        self.client = client
        self.store = store

    async def ok(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        assert not result.is_error, only_text(result)
        body: dict[str, Any] = json.loads(only_text(result))
        assert result.structured_content == body
        return body

    async def rejected(self, tool: str, **args: Any) -> list[dict[str, Any]]:
        result = await self.client.call_tool(tool, args)
        assert result.is_error, only_text(result)
        body = json.loads(only_text(result))
        assert body["status"] == "REJECTED"
        errors: list[dict[str, Any]] = body["errors"]
        return errors

    async def start(self, min_roots: int = 2) -> str:
        return str((await self.ok("tot_start", query="Why is CI flaky?", minRoots=min_roots))["sessionId"])

    async def grow(self, sid: str, batch: Batch) -> dict[str, Any]:
        nodes = [{"id": i, "parent": p, "title": f"idea {i}", "plannedAction": f"check {i}"} for i, (p, _) in batch.items()]
        await self.ok("tot_propose", sessionId=sid, nodes=nodes)
        results = [{"nodeId": i, "state": state, "findings": f"found {i}"} for i, (_, state) in batch.items()]
        return await self.ok("tot_commit", sessionId=sid, results=results)


def root(node_id: str) -> dict[str, Any]:
    return {"id": node_id, "parent": None, "title": node_id, "plannedAction": "look"}


@asynccontextmanager
async def in_process(tmp_path: Path) -> AsyncIterator[Tot]:
    # a context manager, not an async fixture: the client's task group must open and close in the test's task
    store = SessionStore(tmp_path / "tot")
    async with Client(build_server(store)) as client:
        yield Tot(client, store)


# ---- every rule and error code, in-process ------------------------------------------------------
# Each scenario sets a session up and makes the call that breaks the rule named by its key.

Scenario = Callable[[Tot], Awaitable[list[dict[str, Any]]]]


async def _invalid_id(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(1)
    return await t.rejected("tot_propose", sessionId=sid, nodes=[root("R1.A.1")])


async def _not_proposed(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(1)
    return await t.rejected("tot_commit", sessionId=sid, results=[{"nodeId": "R1.A", "state": "DRILL", "findings": "x"}])


async def _parent_not_found(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(1)
    await t.grow(sid, {"R1.A": (None, "DRILL")})
    child = {"id": "R2.Z1", "parent": "R1.Z", "title": "t", "plannedAction": "a"}
    return await t.rejected("tot_propose", sessionId=sid, nodes=[child])


async def _terminal_parent(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(2)
    await t.grow(sid, {"R1.A": (None, "VALID"), "R1.B": (None, "DRILL")})
    child = {"id": "R2.A1", "parent": "R1.A", "title": "t", "plannedAction": "a"}
    return await t.rejected("tot_propose", sessionId=sid, nodes=[child])


async def _insufficient_roots(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(3)
    return await t.rejected("tot_propose", sessionId=sid, nodes=[root("R1.A"), root("R1.B")])


async def _batch_overflow(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(1)
    return await t.rejected("tot_propose", sessionId=sid, nodes=[root(f"R1.{c}") for c in "ABCDEF"])


async def _recovery_required(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(2)
    committed = await t.grow(sid, {"R1.A": (None, "DEAD"), "R1.B": (None, "SPEC")})
    assert committed["recoveryRequired"] is True
    return await t.rejected("tot_end", sessionId=sid)


async def _open_round_one(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(1)
    await t.grow(sid, {"R1.A": (None, "DRILL")})
    return await t.rejected("tot_end", sessionId=sid)


async def _pending(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(1)
    await t.ok("tot_propose", sessionId=sid, nodes=[root("R1.A")])
    return await t.rejected("tot_end", sessionId=sid)


async def _duplicate_id(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(1)
    await t.grow(sid, {"R1.A": (None, "DRILL")})
    return await t.rejected("tot_propose", sessionId=sid, nodes=[root("R1.A")])


async def _duplicate_in_batch(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(1)
    return await t.rejected("tot_propose", sessionId=sid, nodes=[root("R1.A"), root("R1.A")])


async def _has_children(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(1)
    await t.grow(sid, {"R1.A": (None, "VERIFY")})
    await t.grow(sid, {"R2.A1": ("R1.A", "DRILL")})
    return await t.rejected("tot_reclassify", sessionId=sid, nodeId="R1.A", state="DEAD")


async def _node_not_found(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(1)
    return await t.rejected("tot_reclassify", sessionId=sid, nodeId="R1.Q", state="DRILL")


async def _invalid_state(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(1)
    await t.ok("tot_propose", sessionId=sid, nodes=[root("R1.A")])
    return await t.rejected("tot_commit", sessionId=sid, results=[{"nodeId": "R1.A", "state": "MAYBE", "findings": "x"}])


async def _invalid_argument(t: Tot) -> list[dict[str, Any]]:
    return await t.rejected("tot_start", query="q", minRoots=9)


async def _session_ended(t: Tot) -> list[dict[str, Any]]:
    sid = await run_seed_session(t)
    await t.ok("tot_end", sessionId=sid)
    return await t.rejected("tot_propose", sessionId=sid, nodes=[root("R1.F")])


async def _session_not_found(t: Tot) -> list[dict[str, Any]]:
    return await t.rejected("tot_status", sessionId="no-such-session")


async def _session_corrupt(t: Tot) -> list[dict[str, Any]]:
    sid = await t.start(1)
    t.store.path_for(sid).write_text('{"version": 1, "sessionId": ', encoding="utf-8")
    return await t.rejected("tot_propose", sessionId=sid, nodes=[root("R1.A")])


async def _storage_error(t: Tot) -> list[dict[str, Any]]:
    blocker = t.store.directory.parent / "a-file"
    blocker.write_text("")
    t.store.directory = blocker / "tot"
    return await t.rejected("tot_start", query="q")


SCENARIOS: dict[str, Scenario] = {
    "INVALID_ID_FORMAT": _invalid_id,
    "NOT_PROPOSED": _not_proposed,
    "PARENT_NOT_FOUND": _parent_not_found,
    "TERMINAL_PARENT": _terminal_parent,
    "INSUFFICIENT_ROOTS": _insufficient_roots,
    "BATCH_OVERFLOW": _batch_overflow,
    "RECOVERY_REQUIRED": _recovery_required,
    "MIN_ROUNDS": _open_round_one,
    "CHILDREN_MISSING": _open_round_one,
    "PROPOSALS_PENDING": _pending,
    "DUPLICATE_ID": _duplicate_id,
    "DUPLICATE_IN_BATCH": _duplicate_in_batch,
    "HAS_CHILDREN": _has_children,
    "NODE_NOT_FOUND": _node_not_found,
    "INVALID_STATE": _invalid_state,
    "INVALID_ARGUMENT": _invalid_argument,
    "SESSION_ENDED": _session_ended,
    "SESSION_NOT_FOUND": _session_not_found,
    "SESSION_CORRUPT": _session_corrupt,
    "STORAGE_ERROR": _storage_error,
}


def test_every_error_code_has_a_scenario() -> None:
    assert set(SCENARIOS) == set(HINTS)


@pytest.mark.parametrize("code", list(SCENARIOS))
async def test_each_rule_is_a_tool_error_with_its_code_and_hint(tmp_path: Path, code: str) -> None:
    async with in_process(tmp_path) as tot:
        errors = await SCENARIOS[code](tot)
    matching = [e for e in errors if e["code"] == code]
    assert matching, errors
    # argument errors carry a hint specific to the argument; rule violations carry the rule's hint
    expected_hint = "minRoots is a whole number from 1 to 5 (default 3)." if code == "INVALID_ARGUMENT" else HINTS[code]
    assert matching[0]["hint"] == expected_hint
    assert matching[0]["message"]


# ---- the seed's example session ------------------------------------------------------------------


async def run_seed_session(t: Tot) -> str:
    """The seed's example: 5 roots, drill R1.A, two R2 children, resolve round 3, end."""
    sid = str((await t.ok("tot_start", query="Why does the service leak memory?", minRoots=5))["sessionId"])
    first = await t.grow(sid, {"R1.A": (None, "DRILL")} | {f"R1.{c}": (None, "DEAD") for c in "BCDE"})
    assert first["childrenNeeded"] == [{"nodeId": "R1.A", "state": "DRILL", "children": 0, "required": 2}]
    await t.grow(sid, {"R2.A1": ("R1.A", "DRILL"), "R2.A2": ("R1.A", "DRILL")})
    early = await t.rejected("tot_end", sessionId=sid)
    assert [e["code"] for e in early] == ["MIN_ROUNDS", "CHILDREN_MISSING", "CHILDREN_MISSING"]
    last = await t.grow(
        sid,
        {
            "R3.A1a": ("R2.A1", "VALID"),
            "R3.A1b": ("R2.A1", "DEAD"),
            "R3.A2a": ("R2.A2", "SPEC"),
            "R3.A2b": ("R2.A2", "VALID"),
        },
    )
    assert last["round"] == 3 and last["canEnd"] is True
    return sid


async def test_the_seed_example_session_ends_with_its_valid_paths(tmp_path: Path) -> None:
    async with in_process(tmp_path) as tot:
        sid = await run_seed_session(tot)
        report = await tot.ok("tot_end", sessionId=sid)
        assert [p["path"] for p in report["validPaths"]] == [["R1.A", "R2.A1", "R3.A1a"], ["R1.A", "R2.A2", "R3.A2b"]]
        assert [t["nodeId"] for t in report["theories"]] == ["R3.A2a"]
        assert (report["rounds"], report["totalNodes"], report["deadEnds"]) == (3, 11, 5)
        markdown = (await tot.client.read_resource(f"tot://reports/{sid}.md")).contents[0].text
        assert markdown.startswith("# Tree of Thoughts: Why does the service leak memory?")
        assert "## Valid paths" in markdown and "R3.A2b idea R3.A2b" in markdown
        tree = json.loads((await tot.client.read_resource(f"tot://reports/{sid}.json")).contents[0].text)["tree"]
        assert [n["id"] for n in tree] == ["R1.A", "R1.B", "R1.C", "R1.D", "R1.E"]
        assert [line.split("**")[1] for line in report["tree"].splitlines() if line.startswith("- ")] == [n["id"] for n in tree]
        assert await tot.ok("tot_end", sessionId=sid) == report  # ending again repeats the report


async def test_tools_are_listed_with_camel_case_schemas_and_honest_annotations(tmp_path: Path) -> None:
    async with in_process(tmp_path) as tot:
        listed = {t.name: t for t in (await tot.client.list_tools()).tools}
        assert sorted(listed) == sorted(["tot_start", "tot_propose", "tot_commit", "tot_reclassify", "tot_status", "tot_end"])
        assert listed["tot_propose"].input_schema["required"] == ["sessionId", "nodes"]
        assert listed["tot_start"].input_schema["properties"]["minRoots"]["maximum"] == 5
        status_hints, commit_hints = listed["tot_status"].annotations, listed["tot_commit"].annotations
        assert status_hints is not None and status_hints.read_only_hint is True
        assert commit_hints is not None and commit_hints.read_only_hint is False
        assert "R[round].[suffix]" in (tot.client.instructions or "")


async def test_strings_json_text_and_snake_case_arguments_are_accepted(tmp_path: Path) -> None:
    async with in_process(tmp_path) as tot:
        sid = (await tot.ok("tot_start", query="q", min_roots="2"))["sessionId"]
        nodes = json.dumps([{"id": "R1.A", "parent": None, "title": "a", "planned_action": "x"}, root("R1.B")])
        assert (await tot.ok("tot_propose", session_id=sid, nodes=nodes))["approved"] == ["R1.A", "R1.B"]
        results = [{"node_id": "R1.A", "state": "drill", "findings": "f"}, {"nodeId": "R1.B", "state": "DEAD", "findings": "f"}]
        await tot.ok("tot_commit", session_id=sid, results=results)
        # the origin named reclassify's argument newState
        revived = await tot.ok("tot_reclassify", session_id=sid, node_id="R1.B", newState="verify")
        assert (revived["previous"], revived["state"]) == ("DEAD", "VERIFY")


# ---- over stdio: `python -m dominds tot-mcp` -----------------------------------------------------


def stdio(cwd: Path, *extra: str, env: dict[str, str] | None = None) -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "dominds", "tot-mcp", *extra],
        cwd=cwd,
        env={"PYTHONPATH": str(REPO_ROOT), "DOMINDS_FSYNC": "0", **(env or {})},
    )
    return Client(params, read_timeout_seconds=30)


async def test_stdio_server_outside_a_workspace_keeps_sessions_in_the_user_data_dir(tmp_path: Path) -> None:
    """Issue 17: outside a workspace, sessions went to a `.dominds/` folder of whatever directory the MCP
    client started the server in; they now go to the per-user data directory."""
    plain, data = tmp_path / "plain", tmp_path / "xdg-data"
    plain.mkdir()
    async with stdio(plain, env={"XDG_DATA_HOME": str(data)}) as client:
        t = Tot(client, SessionStore(data / "dominds" / "tot"))
        sid = await t.start(1)
        errors = await t.rejected("tot_propose", sessionId=sid, nodes=[root(f"R1.{c}") for c in "ABCDEF"])
        assert errors[0]["code"] == "BATCH_OVERFLOW"
    assert (data / "dominds" / "tot" / f"{sid}.json").is_file()
    assert not (plain / ".dominds").exists()


async def test_stdio_sessions_dir_option(tmp_path: Path) -> None:
    async with stdio(tmp_path, "--sessions-dir", "custom") as client:
        sid = await Tot(client, SessionStore(tmp_path / "custom")).start(1)
    assert [p.name for p in (tmp_path / "custom").iterdir()] == [f"{sid}.json"]


async def test_sessions_survive_a_restart_of_the_stdio_server(tmp_rtws: Rtws) -> None:
    cwd = tmp_rtws.root / "src" / "deep"
    cwd.mkdir(parents=True)
    store = SessionStore.for_rtws(tmp_rtws)  # found from the subdirectory
    async with stdio(cwd) as client:
        t = Tot(client, store)
        sid = await t.start(2)
        await t.grow(sid, {"R1.A": (None, "DRILL"), "R1.B": (None, "DEAD")})
        await t.ok("tot_propose", sessionId=sid, nodes=[{"id": "R2.A1", "parent": "R1.A", "title": "t", "plannedAction": "a"}])
    assert store.path_for(sid).is_file()
    async with stdio(cwd) as client:
        t = Tot(client, store)
        listed = (await t.ok("tot_status"))["sessions"]
        assert [(s["sessionId"], s["round"], s["nodes"]) for s in listed] == [(sid, 1, 2)]
        status = await t.ok("tot_status", sessionId=sid)
        assert status["pending"] == ["R2.A1"]  # the proposal survived too
        committed = await t.ok("tot_commit", sessionId=sid, results=[{"nodeId": "R2.A1", "state": "DRILL", "findings": "f"}])
        assert committed["round"] == 2
