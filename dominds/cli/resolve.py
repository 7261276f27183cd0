"""What the user meant: a full id from a unique prefix, the only pending question, a default Taskdoc.

Ids are long (``0mi7x2k3a-9f3c``, ``q4h-0mi7x2k3a-9f3c-…``), so every command that takes one also takes
a unique prefix of it; an ambiguous prefix is refused with the candidates listed. Read from the files,
which are the same with or without a daemon.
"""

from __future__ import annotations

import re
from typing import Any

from dominds.cli.common import CliError, command_name
from dominds.rtws import DIALOG_STATUSES, Rtws

DEFAULT_TASKDOC = "tasks/main.tsk"
"""The Taskdoc of a dialog started with none named, in a workspace that has no Taskdoc yet."""
TASKDOC_HELP = (
    "the Taskdoc package, e.g. tasks/demo.tsk (default: the workspace's only one, else the newest dialog's, "
    "else a new tasks/main.tsk)"
)


def resolve_dialog_id(rtws: Rtws, text: str) -> str:
    """A full dialog id from a full id or a unique prefix of one (roots and subdialogs, every status)."""
    from dominds.ids import is_dialog_id
    from dominds.store.dialog_store import DialogStore

    wanted = text.strip().lower()
    if is_dialog_id(wanted):
        return wanted  # a full id: `locate_dialog` says when it does not exist
    if not re.fullmatch(r"[0-9a-z][0-9a-z-]*", wanted):
        raise CliError(f"{text!r} is not a dialog id (ids look like 0mi7x2k3a-9f3c; see `{command_name()} status`)")
    store = DialogStore(rtws)
    found = [
        dialog_id
        for status in DIALOG_STATUSES
        for root_id in store.root_ids(status)
        for dialog_id in (root_id, *store.subdialog_ids(status, root_id))
        if dialog_id.startswith(wanted)
    ]
    return _unique(found, text, "dialog", f"see `{command_name()} status --all`")


def resolve_question_id(questions: list[dict[str, Any]], text: str | None) -> dict[str, Any]:
    """The pending question meant by ``text``: its full id or a unique prefix (``q4h-`` may be left out);
    with no text, the only pending question."""
    if text is None:
        if len(questions) == 1:
            return questions[0]
        if not questions:
            raise CliError(f"no question is pending (see `{command_name()} q4h`)")
        listed = "; ".join(f"{q['id']} ({_one_line(str(q.get('tellaskHead') or ''))})" for q in questions[:5])
        more = f" and {len(questions) - 5} more" if len(questions) > 5 else ""
        raise CliError(f"{len(questions)} questions are pending; say which: {listed}{more}")
    wanted = text.strip()
    exact = [q for q in questions if q["id"] == wanted]
    if exact:
        return exact[0]
    found = [str(q["id"]) for q in questions if str(q["id"]).startswith((wanted, f"q4h-{wanted}"))] if wanted else []
    if not found:
        raise CliError(f"question {text!r} is not pending (already answered, or unknown); see `{command_name()} q4h`")
    chosen = _unique(found, text, "pending question", f"see `{command_name()} q4h`")
    return next(q for q in questions if q["id"] == chosen)


def _unique(found: list[str], text: str, noun: str, see: str) -> str:
    if len(found) == 1:
        return found[0]
    if not found:
        raise CliError(f"no {noun} id starts with {text!r} in this workspace ({see})")
    listed = ", ".join(sorted(found)[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
    raise CliError(f"{text!r} is ambiguous: {len(found)} {noun} ids start with it ({listed}); give more characters")


def _one_line(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def default_taskdoc(rtws: Rtws) -> tuple[str, str]:
    """``(path, why)`` of the Taskdoc for a new dialog when none is named.

    The workspace's only Taskdoc; with several, the one of the newest dialog in ``run/``; with none, a
    new ``tasks/main.tsk``. Several Taskdocs and no dialog to go by: refused, with the choices listed.
    Workflows' own Taskdocs and the roots of workflow runs are no choice (see ``taskdoc_discovery``).
    """
    from dominds.store.dialog_store import DialogStore
    from dominds.store.errors import StoreError
    from dominds.taskdoc_discovery import discover_taskdocs

    found = discover_taskdocs(rtws.root, workflow=False)
    if len(found) == 1:
        return found[0], "the workspace's only Taskdoc"
    if not found:
        return DEFAULT_TASKDOC, "a new Taskdoc: the workspace has none yet"
    store = DialogStore(rtws)
    for root_id in reversed(store.root_ids("run")):
        try:
            meta = store.files("run", root_id).read_meta()
        except StoreError:
            continue
        if meta.task_doc_path in found and meta.conductor is None:
            path = meta.task_doc_path
            return path, f"the Taskdoc of the newest dialog, {root_id}"
    listed = ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
    raise CliError(f"this workspace has {len(found)} Taskdocs; choose one with --taskdoc ({listed})")


def chosen_taskdoc(rtws: Rtws, named: str | None, *, quiet: bool) -> str:
    """``--taskdoc`` or the default one; a default is announced, so nobody wonders where progress went."""
    if named:
        return named
    path, why = default_taskdoc(rtws)
    if not quiet:
        print(f"(Taskdoc {path}: {why}; --taskdoc chooses another)", flush=True)
    return path
