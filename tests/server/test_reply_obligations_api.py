"""Issue 14 through the public interfaces: the HTTP API of a served engine, and a real `dominds serve`
process SIGKILLed while the root answers an ask-back. Each test's docstring names the failure it pins."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import yaml
from server_kit import ServeFactory
from soak.soak_driver import Daemon
from workspace_kit import set_responses, write_workspace


async def _start(served: Any, message: str) -> str:
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    status, _ = await served.post(f"/api/dialogs/{created['rootId']}/messages", {"content": message})
    assert status == 202
    await served.engine.wait_idle(timeout=30)
    return str(created["rootId"])


async def _tree(served: Any, root_id: str) -> dict[str, Any]:
    status, listing = await served.get("/api/dialogs")
    assert status == 200
    [tree] = [d for d in listing["dialogs"] if d["rootId"] == root_id]
    return tree


async def _events(served: Any, self_id: str, kind: str) -> list[dict[str, Any]]:
    status, shown = await served.get(f"/api/dialogs/{self_id}")
    assert status == 200
    return [e for e in shown["events"] if e["type"] == kind]


async def _answers_received(served: Any, self_id: str) -> list[str]:
    return [e["response"] for e in await _events(served, self_id, "teammate_response_evt")]


async def _last_saying(served: Any, self_id: str) -> str:
    return str((await _events(served, self_id, "saying_finish_evt"))[-1]["content"])


def _subs(tree: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    stack = list(tree["subdialogs"])
    while stack:
        node = stack.pop()
        out.setdefault(node["agentId"], node)
        stack.extend(node["subdialogs"])
    return out


async def test_item1_the_asker_gets_the_final_answer_not_an_intermediate_tellask(serve: ServeFactory) -> None:
    """Item 1: the asker received the caller's intermediate `!?@tester …` line instead of its answer."""
    served = await serve(
        [
            {"agent": "lead", "message": "delegate", "response": "!?@coder write the parser\n"},
            {"agent": "coder", "contains": "write the parser", "response": "!?@tellasker Which language?\n"},
            {"agent": "lead", "contains": "Which language?", "response": "Checking.\n!?@tester what do we code in?\n"},
            {"agent": "tester", "contains": "what do we code in", "response": "We use Rust."},
            {"agent": "lead", "contains": "We use Rust", "response": "Use Rust."},
            {"agent": "coder", "contains": "Use Rust.", "response": "Parser written in Rust."},
            {"agent": "lead", "contains": "Parser written", "response": "Done."},
        ]
    )
    root_id = await _start(served, "delegate")
    coder = _subs(await _tree(served, root_id))["coder"]
    assert await _answers_received(served, coder["selfId"]) == ["Use Rust."]
    assert await _last_saying(served, root_id) == "Done."


async def test_item2_two_ask_backs_at_once_each_get_their_own_answer(serve: ServeFactory) -> None:
    """Item 2: two subdialogs asked the root back at once; both received the answer meant for the second."""
    served = await serve(
        [
            {"agent": "lead", "message": "split", "response": "!?@coder part one\n\n!?@tester part two\n"},
            {"agent": "coder", "contains": "part one", "response": "!?@tellasker Question one?\n"},
            {"agent": "tester", "contains": "part two", "response": "!?@tellasker Question two?\n"},
            {"agent": "lead", "contains": "Question one?", "response": "Answer one."},
            {"agent": "lead", "contains": "Question two?", "response": "Answer two."},
            {"agent": "coder", "contains": "Answer one.", "response": "Coder done."},
            {"agent": "tester", "contains": "Answer two.", "response": "Researcher done."},
            {"agent": "lead", "contains": "done.", "response": "All done."},
        ]
    )
    root_id = await _start(served, "split")
    subs = _subs(await _tree(served, root_id))
    assert await _answers_received(served, subs["coder"]["selfId"]) == ["Answer one."]
    assert await _answers_received(served, subs["tester"]["selfId"]) == ["Answer two."]


async def test_item3_a_user_message_while_answering_an_ask_back_waits_its_turn(serve: ServeFactory) -> None:
    """Item 3: a user message sent while the root answered an ask-back became the asker's answer."""
    served = await serve(
        [
            {"agent": "lead", "message": "delegate", "response": "!?@coder write the parser\n"},
            {"agent": "coder", "contains": "write the parser", "response": "!?@tellasker Which language?\n"},
            {"agent": "lead", "contains": "Which language?", "response": "Use Python.", "delay_ms": 30, "chunk_chars": 2},
            {"agent": "lead", "message": "how is it going?", "response": "Coder is on it."},
            {"agent": "coder", "contains": "Use Python.", "response": "Parser written."},
        ]
    )
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    root_id = created["rootId"]
    await served.post(f"/api/dialogs/{root_id}/messages", {"content": "delegate"})
    root = served.engine.get_dialog(root_id)
    deadline = time.monotonic() + 20
    while not (root.latest.generating and root.latest.inbound_tellask_backs):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    status, _ = await served.post(f"/api/dialogs/{root_id}/messages", {"content": "how is it going?"})
    assert status == 202
    await served.engine.wait_idle(timeout=30)
    coder = _subs(await _tree(served, root_id))["coder"]
    assert await _answers_received(served, coder["selfId"]) == ["Use Python."]


async def test_items5_6_self_is_one_capable_subdialog_and_a_session_key_is_agent_bang_session(serve: ServeFactory) -> None:
    """Items 5 and 6: a `!?@self` subdialog that called a tool left its caller blocked forever, `!?@self`
    made fbr_effort subdialogs, and `!?@self !tellaskSession fs` registered `lead!fs.fbr-1..3`."""
    served = await serve(
        [
            {"agent": "lead", "message": "think", "response": "!?@self !tellaskSession fs weigh the options\n"},
            {
                "agent": "lead",
                "contains": "weigh the options",
                "stream": [{"func_call": {"name": "add_reminder", "arguments": {"content": "options"}}}],
            },
            {"agent": "lead", "role": "tool", "contains": "", "response": "Option B."},
            {"agent": "lead", "contains": "Option B.", "response": "Going with B."},
        ]
    )
    root_id = await _start(served, "think")
    tree = await _tree(served, root_id)
    assert tree["subdialogCount"] == 1 and tree["subdialogs"][0]["tellaskSession"] == "fs"
    registry = yaml.safe_load((served.engine.rtws.dialogs_dir / "run" / root_id / "registry.yaml").read_text())
    assert list(registry) == ["lead!fs"]
    assert await _last_saying(served, root_id) == "Going with B."
    assert tree["runState"]["kind"] == "idle"


async def test_items8_9_duplicate_session_calls_and_latest_status(serve: ServeFactory) -> None:
    """Item 8: of two identical TYPE B calls in one message the first never got a response. Item 9:
    latest.yaml had no `status`."""
    call = "!?@coder !tellaskSession fin do the books\n"
    served = await serve(
        [
            {"agent": "lead", "message": "twice", "response": f"{call}\n{call}"},
            {"agent": "coder", "contains": "do the books", "response": "Books done."},
            {"agent": "lead", "contains": "provided response", "response": "Noted."},
        ]
    )
    root_id = await _start(served, "twice")
    created = await _events(served, root_id, "subdialog_created_evt")
    responses = await _events(served, root_id, "teammate_response_evt")
    assert len(created) == 2 and sorted(e["callId"] for e in responses) == sorted(e["callId"] for e in created)
    latest = yaml.safe_load((served.engine.rtws.dialogs_dir / "run" / root_id / "latest.yaml").read_text())
    assert latest["status"] == "running"
    await served.post("/api/dialogs/move", {"rootId": root_id, "toStatus": "done"})
    latest = yaml.safe_load((served.engine.rtws.dialogs_dir / "done" / root_id / "latest.yaml").read_text())
    assert latest["status"] == "completed"


def test_item4_sigkill_while_the_root_answers_an_ask_back_then_the_tree_completes(tmp_path: Path) -> None:
    """Item 4: `dominds serve` SIGKILLed while the root generated its answer to an ask-back; after a restart
    the tree was deadlocked for good and `resume` answered 409."""
    slow = {"agent": "lead", "contains": "Which language?", "response": "tick " * 600, "chunk_chars": 5, "delay_ms": 5}
    rest: list[dict[str, Any]] = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder write the parser\n"},
        {"agent": "coder", "contains": "write the parser", "response": "!?@tellasker Which language?\n"},
        {"agent": "coder", "contains": "Use Rust.", "response": "Parser written."},
        {"agent": "lead", "contains": "Parser written", "response": "Done."},
    ]
    rtws = write_workspace(tmp_path / "ws", [slow, *rest])
    daemon = Daemon(rtws)
    try:
        status, created = daemon.call("POST", "/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
        root_id = created["rootId"]
        assert daemon.call("POST", f"/api/dialogs/{root_id}/messages", {"content": "delegate"})[0] == 202
        latest_file = rtws.dialogs_dir / "run" / root_id / "latest.yaml"
        deadline = time.monotonic() + 30
        while True:
            latest = yaml.safe_load(latest_file.read_text()) or {}
            serving = [i for i in latest.get("inboundTellaskBacks", []) if i.get("servingSince")]
            if serving and latest.get("generating"):
                break
            assert time.monotonic() < deadline, "the root never started answering the ask-back"
            time.sleep(0.02)
        daemon.kill()
    finally:
        if daemon.proc.poll() is None:
            daemon.kill()
    set_responses(rtws, [{**slow, "response": "Use Rust.", "delay_ms": 0}, *rest])
    daemon = Daemon(rtws)
    try:
        deadline = time.monotonic() + 30
        while True:
            status, shown = daemon.call("GET", f"/api/dialogs/{root_id}")
            said = [e["content"] for e in shown["events"] if e["type"] == "saying_finish_evt"]
            if said and said[-1] == "Done.":
                break
            assert time.monotonic() < deadline, f"the tree did not complete: {shown['runState']}"
            time.sleep(0.05)
        status, listing = daemon.call("GET", f"/api/dialogs/{root_id}/hierarchy")
        coder_id = listing["hierarchy"]["subdialogs"][0]["selfId"]
        status, coder = daemon.call("GET", f"/api/dialogs/{coder_id}")
        assert [e["response"] for e in coder["events"] if e["type"] == "teammate_response_evt"] == ["Use Rust."]
    finally:
        daemon.terminate()


def _wait_said(daemon: Daemon, root_id: str, text: str, times: int = 1) -> dict[str, Any]:
    """Wait until the root's last saying is ``text`` and it has said it ``times`` times in all."""
    deadline = time.monotonic() + 30
    while True:
        status, shown = daemon.call("GET", f"/api/dialogs/{root_id}")
        assert status == 200, shown
        said = [e["content"] for e in shown["events"] if e["type"] == "saying_finish_evt"]
        idle = shown["runState"]["kind"] == "idle"
        if said and said[-1] == text and said.count(text) == times and idle:
            return dict(shown)
        assert time.monotonic() < deadline, f"the root never said {text!r}: {said[-3:]} {shown['runState']}"
        time.sleep(0.05)


def _coder_sessions(daemon: Daemon, root_id: str) -> list[str]:
    status, listing = daemon.call("GET", f"/api/dialogs/{root_id}/hierarchy")
    assert status == 200, listing
    return [s["selfId"] for s in listing["hierarchy"]["subdialogs"] if s["agentId"] == "coder"]


def test_item7_a_lost_or_corrupt_registry_is_rebuilt_and_locked_shows_the_drive(tmp_path: Path) -> None:
    """Item 7: after `registry.yaml` was deleted the next `!?@coder !tellaskSession fin` created a second
    subdialog for `coder!fin`; a corrupt one made the whole root refused (409); `locked` was never true."""
    call = {"agent": "lead", "contains": "", "response": "!?@coder !tellaskSession fin do the books\n"}
    responses: list[dict[str, Any]] = [
        {"agent": "coder", "contains": "do the books", "response": "Books done.", "chunk_chars": 2, "delay_ms": 40},
        *({**call, "message": m} for m in ("first", "second", "third", "fourth")),
        {"agent": "lead", "contains": "Books done", "response": "Noted."},
    ]
    rtws = write_workspace(tmp_path / "ws", responses)
    registry = lambda root_id: rtws.dialogs_dir / "run" / root_id / "registry.yaml"  # noqa: E731
    daemon = Daemon(rtws)
    try:
        _, created = daemon.call("POST", "/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
        root_id = created["rootId"]
        assert daemon.call("POST", f"/api/dialogs/{root_id}/messages", {"content": "first"})[0] == 202
        seen_locked = False
        deadline = time.monotonic() + 30
        while not seen_locked:  # the coder answers slowly: its entry says locked while it is driven
            if registry(root_id).exists():
                entry = (yaml.safe_load(registry(root_id).read_text()) or {}).get("coder!fin") or {}
                seen_locked = entry.get("locked") is True
            assert time.monotonic() < deadline, "registry entry never showed locked: true while driven"
            time.sleep(0.01)
        _wait_said(daemon, root_id, "Noted.")
        [coder_id] = _coder_sessions(daemon, root_id)
        assert yaml.safe_load(registry(root_id).read_text())["coder!fin"]["locked"] is False
        registry(root_id).unlink()  # deleted under a running daemon
        assert daemon.call("POST", f"/api/dialogs/{root_id}/messages", {"content": "second"})[0] == 202
        _wait_said(daemon, root_id, "Noted.", 2)
        assert _coder_sessions(daemon, root_id) == [coder_id]
    finally:
        daemon.terminate()
    registry(root_id).unlink()  # deleted while no daemon runs
    daemon = Daemon(rtws)
    try:
        status, shown = daemon.call("GET", f"/api/dialogs/{root_id}")
        assert status == 200 and any("rebuilt" in n for n in shown.get("notices", [])), shown.get("notices")
        assert daemon.call("POST", f"/api/dialogs/{root_id}/messages", {"content": "third"})[0] == 202
        _wait_said(daemon, root_id, "Noted.", 3)
        assert _coder_sessions(daemon, root_id) == [coder_id]
        assert yaml.safe_load(registry(root_id).read_text())["coder!fin"]["subdialogId"] == coder_id
    finally:
        daemon.terminate()
    registry(root_id).write_text("coder!fin: [unclosed\n\x00garbage")  # corrupt
    daemon = Daemon(rtws)
    try:
        status, shown = daemon.call("GET", f"/api/dialogs/{root_id}")
        assert status == 200 and any("unreadable" in n for n in shown.get("notices", [])), shown.get("notices")
        status, _ = daemon.call("POST", f"/api/dialogs/{root_id}/messages", {"content": "fourth"})
        assert status == 202, "a corrupt registry must not refuse the root"
        _wait_said(daemon, root_id, "Noted.", 4)
        assert _coder_sessions(daemon, root_id) == [coder_id]
        assert yaml.safe_load(registry(root_id).read_text())["coder!fin"]["subdialogId"] == coder_id
    finally:
        daemon.terminate()


async def test_a_resume_that_races_the_daemons_own_is_not_refused(serve: ServeFactory) -> None:
    """Sibling of item 4: after a restart the daemon resumes an interrupted dialog by itself, so a user's
    `resume` that arrived a moment later met a proceeding dialog and got a 409 as if nothing could move."""
    served = await serve([{"agent": "lead", "message": "slow", "response": "tick " * 200, "chunk_chars": 5, "delay_ms": 5}])
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    root_id = created["rootId"]
    await served.post(f"/api/dialogs/{root_id}/messages", {"content": "slow"})
    root = served.engine.get_dialog(root_id)
    deadline = time.monotonic() + 20
    while root.latest.run_state.kind != "proceeding":
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    status, body = await served.post(f"/api/dialogs/{root_id}/resume", {})
    assert status == 200 and body["resumed"] is False and body["runState"]["kind"] == "proceeding"
    await served.engine.wait_idle(timeout=30)
    status, body = await served.post(f"/api/dialogs/{root_id}/resume", {})
    assert status == 409 and "nothing to resume" in body["error"], body
