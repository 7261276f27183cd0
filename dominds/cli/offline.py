"""State changes when no daemon runs: the CLI takes the workspace lock and writes the files itself.

``reach_state`` decides the route of every state-changing command (DESIGN §4.2): the running daemon's
API when one answers through ``daemon.json``, otherwise the rtws lock (the daemon's own lock, so a
daemon cannot start half-way through a write). A lock held by a process that is not a daemon (another
CLI command writing, a daemon still starting up) is waited for briefly, then named in the error.

The writes reuse the engine's API on an ``Engine`` that is never started (no recovery, no scheduler):
the same validation, the same persist-first order. A queued message or answer stays in
``latest.yaml`` with ``needsDrive: true``; the next ``dominds serve`` (or ``--follow``) drives it.

Reads need no engine: ``load_state_yaml`` parses the state files directly (see its section below).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dominds.cli.client import DaemonInfo, find_daemon, locked_message
from dominds.cli.common import CliError, command_name
from dominds.rtws import STATE_FILE_MODE, Rtws

if TYPE_CHECKING:
    from dominds.dialog.model import Dialog
    from dominds.driver.engine import Engine

LOCK_WAIT_SECONDS = 5.0
"""How long a command waits for a lock held by a non-daemon (a CLI writer finishes in well under that)."""


@dataclass
class Access:
    """Where a command sends its change: ``daemon`` set, or ``daemon`` None with the lock held."""

    daemon: DaemonInfo | None
    locked: bool = False
    """This command holds the rtws lock: no process can be driving a dialog right now."""


@contextlib.contextmanager
def reach_state(rtws: Rtws, *, wait: float = LOCK_WAIT_SECONDS, read_only: bool = False) -> Iterator[Access]:
    """The daemon if one runs, else the rtws lock for the duration of the ``with`` block.

    ``read_only``: a reader that cannot get the lock in time reads anyway (every state file is
    replaced atomically, so each one is consistent on its own) instead of failing.
    """
    if read_only and not rtws.dialogs_dir.is_dir():
        yield Access(None)  # nothing to read, and nothing to create for a reader
        return
    if read_only:
        with contextlib.suppress(OSError):  # a read-only workspace is read as it is: a reader creates nothing
            rtws.ensure_layout()
    else:
        rtws.ensure_layout()
    take_lock = _flock_now if read_only else _filelock_now
    deadline = time.monotonic() + wait
    while True:
        daemon = find_daemon(rtws)
        if daemon is not None:
            yield Access(daemon)
            return
        try:
            release = take_lock(rtws.lock_path)
        except OSError:
            if not read_only:
                raise
            # The lock file cannot be created (a read-only workspace, a read-only mount): nobody writes
            # through this path, and a reader reads without the lock (every state file is whole on its own).
            yield Access(None)
            return
        if release is None:
            if time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            if read_only:
                yield Access(None)
                return
            raise CliError(locked_message(rtws))
        try:
            yield Access(None, locked=True)
        finally:
            release()
        return


def _filelock_now(path: Path) -> Callable[[], None] | None:
    """The rtws lock if it is free (its release), else None."""
    import filelock

    lock = filelock.FileLock(str(path), mode=STATE_FILE_MODE)
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        return None
    return lock.release


def _flock_now(path: Path) -> Callable[[], None] | None:
    """``_filelock_now`` for readers: taken as ``filelock`` takes it (an exclusive ``flock`` on the same
    file, so the two exclude each other) without importing ``filelock``, whose ``logging`` and
    ``decimal`` cost ~20 ms of a `dominds status` that should take 0.3 s."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, STATE_FILE_MODE)
    except OSError:
        # Read-only (a read-only mount, or a workspace the reader may only read): ``flock`` needs no write
        # access, so the existing file is locked through a read-only descriptor; a missing one raises.
        fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # held elsewhere
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise

    def release() -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    return release


DRIVING_KINDS = frozenset({"proceeding", "stop_requested"})
DRIVER_GONE = {
    "kind": "interrupted",
    "reason": "process_gone",
    "detail": "the process driving it ended without saving its state; `dominds serve` resumes it",
}


def as_seen_now(run_state: dict[str, Any], nobody_drives: bool) -> dict[str, Any]:
    """The run state to show. A dialog the files call ``proceeding`` while no process can drive it (no
    daemon, the lock free) was cut off by a crash or ``kill -9``: it is interrupted, and the next
    ``serve`` resumes it (its recovery writes exactly that)."""
    if nobody_drives and run_state.get("kind") in DRIVING_KINDS:
        return dict(DRIVER_GONE)
    return run_state


def engine_errors() -> tuple[type[Exception], ...]:
    """Refusals of the engine and the store: one line for the user, never a traceback."""
    from dominds.driver.engine import EngineError
    from dominds.llm.base import LlmError
    from dominds.store.errors import StoreError
    from dominds.taskdoc import TaskdocError

    return (EngineError, StoreError, TaskdocError, LlmError)


@contextlib.contextmanager
def offline_engine(rtws: Rtws) -> Iterator[Engine]:
    """An engine over the files, for a caller that holds the rtws lock (see ``reach_state``)."""
    from dominds.driver.engine import Engine

    engine = Engine(rtws, take_lock=False)
    try:
        yield engine
    except engine_errors() as exc:
        raise CliError(str(exc)) from exc


def _dialog(engine: Engine, self_id: str) -> Dialog:
    from dominds.ids import is_dialog_id

    if not is_dialog_id(self_id):
        raise CliError(f"{self_id!r} is not a dialog id (ids look like 0mi7x2k3a-9f3c; see `{command_name()} status`)")
    return engine.find_dialog(self_id)


def queue_message(rtws: Rtws, self_id: str, content: str, msg_id: str) -> dict[str, Any]:
    with offline_engine(rtws) as engine:
        dialog = _dialog(engine, self_id)
        prompt = engine.submit_user_message(dialog, content, msg_id)
        return {"selfId": dialog.self_id, "rootId": dialog.root_id, "msgId": prompt.msg_id}


def create_root(rtws: Rtws, agent_id: str | None, taskdoc: str, content: str, msg_id: str) -> dict[str, Any]:
    """A new root with its first message queued."""
    with offline_engine(rtws) as engine:
        if not content.strip():
            raise CliError("the message is empty")  # checked before the root exists, not after
        root = engine.create_dialog(agent_id, taskdoc)
        prompt = engine.submit_user_message(root, content, msg_id)
        return {
            "selfId": root.self_id,
            "rootId": root.root_id,
            "agentId": root.agent_id,
            "taskDocPath": root.meta.task_doc_path,
            "msgId": prompt.msg_id,
        }


def queue_answer(rtws: Rtws, question_id: str, content: str, msg_id: str) -> dict[str, Any]:
    with offline_engine(rtws) as engine:
        where = _question_dialog(rtws, question_id)
        if where is None:
            raise CliError(f"question {question_id!r} is not pending (already answered, or unknown); see `{command_name()} q4h`")
        dialog = engine.get_dialog(*where)
        for question in dialog.q4h:  # the index a started engine builds at recovery
            engine.index_question(dialog, question)
        engine.answer_question(question_id, content, msg_id)
        return {"questionId": question_id, "selfId": dialog.self_id, "rootId": dialog.root_id, "msgId": msg_id}


def move_root(rtws: Rtws, root_id: str, to_status: str) -> str:
    with offline_engine(rtws) as engine:
        _dialog(engine, root_id)
        return engine.move_root(root_id, to_status)


def locate_dialog(rtws: Rtws, dialog_id: str) -> tuple[str, str]:
    """``(status, rootId)`` of a root or subdialog in any status, from the directory layout alone."""
    from dominds.ids import is_dialog_id

    if not is_dialog_id(dialog_id):
        raise CliError(f"{dialog_id!r} is not a dialog id (ids look like 0mi7x2k3a-9f3c; see `{command_name()} status`)")
    from dominds.store.dialog_store import DialogStore
    from dominds.store.errors import DialogNotFoundError

    try:
        return DialogStore(rtws).locate_dialog(dialog_id)
    except DialogNotFoundError:
        raise CliError(f"no dialog {dialog_id!r} in this workspace (see `{command_name()} status --all`)") from None


def _question_dialog(rtws: Rtws, question_id: str) -> tuple[str, str] | None:
    for question in pending_questions(rtws):
        if question["id"] == question_id:
            return question["rootId"], question["selfId"]
    return None


def pending_questions(rtws: Rtws) -> list[dict[str, Any]]:
    """Every pending Q4H of ``run/`` read from the files, shaped like the daemon's ``GET /api/q4h``.

    Only dialogs with a ``q4h.yaml`` are read (it is deleted when empty), so this is one ``stat``
    per dialog for a workspace without questions.
    """
    from dominds.store.dialog_store import DialogStore
    from dominds.store.errors import StoreError

    store = DialogStore(rtws)
    out: list[dict[str, Any]] = []
    for root_id in store.root_ids("run"):
        for files in store.iter_tree("run", root_id):
            if not files.q4h_yaml.exists():
                continue
            try:
                meta = files.read_meta()
                questions = files.read_q4h().questions
            except StoreError:
                continue  # a corrupt dialog shows up in `dominds status` with its error
            for q in questions:
                out.append(
                    {
                        "id": q.id,
                        "selfId": meta.id,
                        "rootId": root_id,
                        "agentId": meta.agent_id,
                        "taskDocPath": meta.task_doc_path,
                        "tellaskHead": q.tellask_head,
                        "bodyContent": q.body_content,
                        "askedAt": q.asked_at,
                        "callId": q.call_id,
                        "callSiteRef": q.call_site_ref.to_disk(),
                    }
                )
    out.sort(key=lambda q: str(q["askedAt"]))
    return out


def load_state_yaml(path: Path | str) -> Any:
    """A state file as plain data (None when missing); ``ValueError`` when it is not valid YAML."""
    from dominds.store.dialog_facts import read_state_yaml

    return read_state_yaml(str(path))
