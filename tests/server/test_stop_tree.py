"""Stop of a main dialog stops everything under it (issue 30, "Stop stops everything"), through the
websocket and HTTP interfaces.

Before: Stop of a main dialog waiting on a subdialog answered ``stopped: false`` and stopped nothing; the
subdialog's ``shell_cmd sleep 30`` ran on to its end (only the emergency stop reached it). Now the Stop
reaches every subdialog the dialog waits on, transitively: their drives are cancelled (the tool's process
group killed), their courses say interrupted, the main dialog is ``interrupted`` too, and its Continue
resumes the work it stopped.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from deadlines import until
from server_kit import ServeFactory

from dominds.dialog.model import Dialog
from dominds.store.course_records import FuncResultRecord, GenFinishRecord, RunMarkerRecord
from tests.processes import running

SLEEPER = "sleep 30 & echo $! > {pidfile}; wait"
"""The tool's real work is a child process (its pid in ``pidfile``): killing bash alone would leave it."""



def _course(dialog: Dialog) -> list[Any]:
    return [r for n in dialog.files.course_numbers() for r in dialog.files.read_course(n)]


def _responses(pidfile: Path, nested: bool) -> list[dict[str, Any]]:
    worker = "tester" if nested else "coder"
    sleeper = {
        "agent": worker,
        "contains": "run the sleeper",
        "stream": [{"func_call": {"name": "shell_cmd", "arguments": {"command": SLEEPER.format(pidfile=pidfile)}}}],
    }
    responses = [
        {"agent": "lead", "message": "delegate the sleeper", "response": "!?@coder please run the sleeper\n"},
        sleeper,
        {"agent": worker, "role": "tool", "contains": "INTERRUPTED (user_stop)", "response": "The sleeper was stopped."},
        {"agent": "lead", "contains": "@coder provided response", "response": "Thanks."},
    ]
    if nested:
        responses.insert(1, {"agent": "coder", "contains": "please run the sleeper", "response": "!?@tester run the sleeper\n"})
        responses.append({"agent": "coder", "contains": "@tester provided response", "response": "Done below."})
    return responses


async def _serve_sleeper(serve: ServeFactory, tmp_path: Path, nested: bool) -> Any:
    served = await serve(_responses(tmp_path / "sleep.pid", nested))
    team = served.engine.rtws.team_yaml
    text = team.read_text()  # the team is read again at each generation: the workers get the shell
    for member in ("coder", "tester"):
        text = text.replace(f"gofor: [{'writes code' if member == 'coder' else 'checks code'}]}}", "gofor: [works], toolsets: [os]}")
    team.write_text(text + "shell_specialists: [coder, tester]\n")
    return served


async def test_stop_of_a_main_dialog_stops_the_subdialog_it_waits_on_and_continue_resumes_it(
    stray_task_errors: list[dict[str, Any]], serve: ServeFactory, tmp_path: Path
) -> None:
    pidfile = tmp_path / "sleep.pid"
    served = await _serve_sleeper(serve, tmp_path, nested=False)
    sock = await served.ws()
    created = await sock.request({"type": "create_dialog", "agentId": "lead", "taskDocPath": "tasks/t.tsk"}, "dialog_ready")
    dialog = created["dialog"]
    await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "delegate the sleeper"}, "ack")
    await until(lambda: pidfile.exists() and pidfile.read_text().strip(), seconds=20.0)
    pid = int(pidfile.read_text())
    engine = served.engine
    root = engine.get_dialog(dialog["rootId"], dialog["selfId"])
    [sub] = [d for d in root.root.local.values() if not d.is_root]
    await until(lambda: root.latest.run_state.kind == "blocked", seconds=20.0)  # the main dialog waits; only its subdialog runs
    assert sub.is_driving

    stop = await sock.request({"type": "interrupt_dialog", "dialog": dialog}, "ack")
    assert stop["stopped"] is True
    task = sub.drive_task
    assert task is not None
    done, _ = await asyncio.wait({task}, timeout=10)
    assert task in done, "the subdialog's drive waited for its 30 s tool"
    assert not running(pid), "the tool's process outlived the Stop of the main dialog"
    assert sub.latest.run_state.kind == "interrupted" and sub.latest.run_state.reason == "user_stop"
    records = _course(sub)
    [result] = [r for r in records if isinstance(r, FuncResultRecord)]
    assert result.interrupted
    assert [r.status for r in records if isinstance(r, GenFinishRecord)] == ["interrupted"]
    assert any(isinstance(r, RunMarkerRecord) and r.kind == "interrupted" for r in records)
    assert root.latest.run_state.kind == "interrupted" and root.latest.run_state.reason == "user_stop"

    status, resumed = await served.post(f"/api/dialogs/{root.self_id}/resume?rootId={root.root_id}")
    assert status == 200 and resumed["resumed"] is True
    await engine.wait_idle()
    assert sub.latest.run_state.kind == "idle" and root.latest.run_state.kind == "idle"
    said = [r.content for r in _course(root) if type(r).__name__ == "AgentWordsRecord"]
    assert said[-1] == "Thanks."


async def test_stop_reaches_a_subdialog_of_a_subdialog(
    stray_task_errors: list[dict[str, Any]], serve: ServeFactory, tmp_path: Path
) -> None:
    """The Stop goes down every level: lead → coder → tester running the tool."""
    pidfile = tmp_path / "sleep.pid"
    served = await _serve_sleeper(serve, tmp_path, nested=True)
    engine = served.engine
    status, created = await served.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
    assert status == 201, created
    root = engine.get_dialog(created["rootId"], created["selfId"])
    engine.submit_user_message(root, "delegate the sleeper")
    await until(lambda: pidfile.exists() and pidfile.read_text().strip(), seconds=20.0)
    pid = int(pidfile.read_text())
    [tester] = [d for d in root.root.local.values() if d.agent_id == "tester"]
    status, stopped = await served.post(f"/api/dialogs/{root.self_id}/stop?rootId={root.root_id}")
    assert status == 200 and stopped["stopped"] is True
    task = tester.drive_task
    if task is not None:
        done, _ = await asyncio.wait({task}, timeout=10)
        assert task in done, "the nested subdialog's drive waited for its 30 s tool"
    assert not running(pid)
    assert tester.latest.run_state.kind == "interrupted"
    assert engine.resume(root)
    await engine.wait_idle()
    assert [d.latest.run_state.kind for d in root.root.local.values()] == ["idle"] * 3
