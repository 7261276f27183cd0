"""run / new / tell / answer / q4h / show / done-archive-revive, with and without a daemon."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cli_kit import (
    ANSWER_HINT,
    Daemon,
    cli_env,
    dominds,
    dominds_json,
    run_state,
    wait_until,
    write_workspace,
)

from dominds.cli.client import lock_holders, locked_message
from dominds.cli.common import CliError
from dominds.cli.offline import reach_state
from dominds.rtws import Rtws
from dominds.store.dialog_store import DialogStore


def test_run_stops_at_a_question_and_answer_continues_it(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    run = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "paint")
    assert run.returncode == 3, run.stdout + run.stderr
    assert "(no daemon running: driving dialog" in run.stdout
    assert "⇢ @human Which colour?" in run.stdout and "? waiting for your answer:" in run.stdout
    hint = ANSWER_HINT.search(run.stdout)
    assert hint is not None
    listed = dominds_json(ws, "q4h")["questions"]
    assert [q["id"] for q in listed] == [hint.group(1)] and listed[0]["bodyContent"] == "Red or blue."

    answered = dominds(ws, "answer", hint.group(1), "blue", "--follow")
    assert answered.returncode == 0, answered.stdout + answered.stderr
    assert "you (answer) ›\n  blue\n" in answered.stdout and "Painting it blue." in answered.stdout
    assert "✓ idle" in answered.stdout
    assert dominds_json(ws, "q4h")["questions"] == []
    again = dominds(ws, "answer", hint.group(1), "red")
    assert again.returncode == 1 and "is not pending" in again.stderr


def test_offline_writes_are_queued_and_the_next_serve_drives_them(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    asked = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "paint", "--json")
    question = json.loads(asked.stdout.splitlines()[-1])["questions"][0]
    new = dominds(ws, "new", "--taskdoc", "tasks/t.tsk", "hello")
    assert new.returncode == 0 and "queued" in new.stdout and "`dominds serve` drives it" in new.stdout
    created = re.search(r"created root dialog (\S+) \(@lead, tasks/t.tsk\)", new.stdout)
    assert created is not None
    root_id = created.group(1)
    answer = dominds(ws, "answer", question["id"], "blue")
    assert answer.returncode == 0 and "queued" in answer.stdout
    latest = (ws / ".dialogs" / "run" / question["rootId"] / "latest.yaml").read_text()
    queued = DialogStore(Rtws(ws)).files("run", question["rootId"]).read_queue()  # latest.yaml's, then queue.jsonl's
    assert "needsDrive: true" in latest and [p.content for p in queued] == ["blue"]
    assert not (ws / ".dialogs" / "run" / question["rootId"] / "q4h.yaml").exists()
    assert dominds_json(ws, "status", "--root", root_id)["roots"][0]["queuedPrompts"] == 1

    with Daemon(ws, "--no-resume"):  # queued messages are driven even without resuming interrupted work
        wait_until(lambda: run_state(ws, root_id) == "idle" and run_state(ws, question["rootId"]) == "idle")
        assert "Hello there!" in dominds(ws, "show", root_id).stdout
        assert "Painting it blue." in dominds(ws, "show", question["rootId"]).stdout


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Daemon]]:
    ws = write_workspace(tmp_path_factory.mktemp("served") / "ws")
    with Daemon(ws) as daemon:
        yield ws, daemon


def test_answer_from_the_cli_resumes_the_dialog_in_the_running_daemon(served: tuple[Path, Daemon]) -> None:
    ws, daemon = served
    run = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "paint")
    assert run.returncode == 3 and "(no daemon running" not in run.stdout, run.stdout
    hint = ANSWER_HINT.search(run.stdout)
    assert hint is not None
    root_id = hint.group(1).split("-", 1)[1].rsplit("-", 1)[0]
    answered = dominds(ws, "answer", hint.group(1), "blue")
    assert answered.returncode == 0 and f"answered {hint.group(1)}" in answered.stdout
    wait_until(lambda: run_state(ws, root_id) == "idle")
    shown = dominds(ws, "show", root_id)
    assert shown.stdout.index("you (answer) ›") < shown.stdout.index("Painting it blue.")
    assert json.loads((ws / ".dialogs" / "daemon.json").read_text())["pid"] == daemon.pid, "the daemon did it"


def test_tell_and_show_follow_stream_from_the_daemon(served: tuple[Path, Daemon]) -> None:
    ws, _daemon = served
    new = dominds_json(ws, "new", "--taskdoc", "tasks/t.tsk", "hello")
    assert new["queued"] is False
    wait_until(lambda: run_state(ws, new["rootId"]) == "idle")
    told = dominds(ws, "tell", new["rootId"], "delegate", "--follow")
    assert told.returncode == 0, told.stdout + told.stderr
    lines = told.stdout
    assert "Hello there!" not in lines, "--follow on tell shows what is new, not the history"
    for expected in ("you ›\n  delegate", "⇢ @coder please implement X", "↪ @coder started in subdialog",
                     "⇠ @coder answered (completed):\n    Implemented X.", "Thanks, X is done.", "✓ idle"):
        assert expected in lines

    streamed = dominds_json(ws, "new", "--taskdoc", "tasks/t.tsk", "stream")
    followed = dominds(ws, "show", streamed["rootId"], "--follow")
    assert followed.returncode == 0 and "y" * 200 in followed.stdout
    assert followed.stdout.rstrip().endswith(
        f'✓ idle: the dialog has answered (dialog {streamed["rootId"]})\n  go on: dominds tell {streamed["rootId"]} "…" --follow'
    )


def test_show_renders_the_transcript_with_colour_only_when_asked(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    done = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "think and tool", "--json")
    root_id = json.loads(done.stdout.splitlines()[0])["dialog"]["rootId"]
    shown = dominds(ws, "show", root_id)
    assert shown.returncode == 0
    for expected in ("you ›\n  think and tool", "┆ Let me think about reminders.", "I will add a reminder.",
                     '⚙ add_reminder({"content": "remember X"})', "↳ ", "Reminder added."):
        assert expected in shown.stdout
    assert "\x1b[" not in shown.stdout, "no colour into a pipe"
    coloured = dominds(ws, "show", root_id, env=cli_env(FORCE_COLOR="1"))
    assert "\x1b[2;3m" in coloured.stdout and "Let me think" in coloured.stdout, "thinking is dimmed"
    as_json = dominds_json(ws, "show", root_id)
    assert as_json["dialog"]["selfId"] == root_id
    assert {"thinking_chunk_evt", "func_call_requested_evt", "func_result_evt"} <= {e["type"] for e in as_json["events"]}
    missing = dominds(ws, "show", root_id, "--course", "2")
    assert missing.returncode == 1 and missing.stderr == f"dominds: dialog {root_id} has courses 1..1, not 2\n"
    offline_follow = dominds(ws, "show", root_id, "--follow")
    assert offline_follow.returncode == 1 and "needs a running daemon" in offline_follow.stderr


def test_show_gives_a_subdialogs_task_as_its_caller_wrote_it(tmp_path: Path) -> None:
    """The bug: `show` of a subdialog printed its first prompt as the model reads it ("Hi @coder, this is
    @lead speaking, now:" and the request quoted), under "[task from a teammate]"."""
    ws = write_workspace(tmp_path / "ws")
    dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "delegate")
    sub_id = dominds_json(ws, "status")["roots"][0]["subdialogs"][0]["selfId"]
    shown = dominds(ws, "show", sub_id)
    assert shown.returncode == 0, shown.stderr
    assert "[task from @lead]\n  @coder please implement X\n" in shown.stdout
    assert "speaking, now" not in shown.stdout


def test_lifecycle_moves_roots_offline_and_refuses_subdialogs(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    done = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "delegate", "--json")
    root_id = json.loads(done.stdout.splitlines()[0])["dialog"]["rootId"]
    sub_id = dominds_json(ws, "status")["roots"][0]["subdialogs"][0]["selfId"]
    assert dominds_json(ws, "archive", root_id) == {"rootId": root_id, "fromStatus": "run", "toStatus": "archive"}
    assert (ws / ".dialogs" / "archive" / root_id / "subdialogs" / sub_id).is_dir()
    told = dominds(ws, "tell", root_id, "hello")
    assert told.returncode == 1 and "revive it first" in told.stderr
    assert "archive/ → run/" in dominds(ws, "revive", root_id).stdout
    refused = dominds(ws, "done", sub_id)
    assert refused.returncode == 1 and f"is a subdialog of {root_id}" in refused.stderr


def test_errors_are_one_line_and_debug_shows_the_traceback(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    unknown = dominds(ws, "tell", "0mwqwk0qz-zzzz", "hi")
    assert unknown.returncode == 1 and unknown.stderr.count("\n") == 1 and "no dialog '0mwqwk0qz-zzzz'" in unknown.stderr
    bad_agent = dominds(ws, "new", "--agent", "nobody", "--taskdoc", "tasks/t.tsk", "hi")
    assert bad_agent.returncode == 1 and "unknown agent 'nobody'" in bad_agent.stderr and "Traceback" not in bad_agent.stderr
    assert list((ws / ".dialogs" / "run").iterdir()) == [], "nothing was created"
    debug = dominds(ws, "--debug", "tell", "0mwqwk0qz-zzzz", "hi")
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_a_lock_held_by_another_process_is_named(tmp_path: Path) -> None:
    rtws = Rtws(write_workspace(tmp_path / "ws"))
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import filelock, sys, time
            lock = filelock.FileLock({str(rtws.lock_path)!r}); lock.acquire()
            print("held", flush=True); time.sleep(30)
        """)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert lock_holders(rtws.lock_path) == {holder.pid}
        assert f"locked by pid {holder.pid} (" in locked_message(rtws)
        with pytest.raises(CliError, match=f"pid {holder.pid}"), reach_state(rtws, wait=0.2):
            pass
        with reach_state(rtws, wait=0.2, read_only=True) as access:
            assert access.daemon is None, "a reader goes on without the lock"
    finally:
        holder.kill()
        holder.wait()
    with reach_state(rtws, wait=0.2) as access:
        assert access.daemon is None and lock_holders(rtws.lock_path) != set()


def test_a_reader_takes_the_same_lock_as_the_daemon_without_filelock(tmp_path: Path) -> None:
    """A reader (``dominds status``) takes the rtws lock with ``flock`` itself, to spare filelock's import:
    it must still be the daemon's lock — neither can take it while the other holds it."""
    import filelock

    rtws = Rtws(write_workspace(tmp_path / "ws"))
    with reach_state(rtws, wait=0.2, read_only=True) as access:
        assert access.locked, "the lock was free: the reader holds it"
        with pytest.raises(filelock.Timeout):
            filelock.FileLock(str(rtws.lock_path)).acquire(timeout=0)
    daemon_lock = filelock.FileLock(str(rtws.lock_path))
    daemon_lock.acquire(timeout=0)
    try:
        with reach_state(rtws, wait=0.1, read_only=True) as access:
            assert not access.locked, "held by the daemon's kind of lock: the reader reads without it"
    finally:
        daemon_lock.release()
    with reach_state(rtws, wait=0.1, read_only=True) as access:
        assert access.locked, "released again after each reader"
