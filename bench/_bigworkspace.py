"""Write a big workspace for the cold-start and status benches: ROOTS trees of 1 + SUBS dialogs.

Every dialog has a course of 14 records (two generations with usage, a tool call, thinking); every
fifth tree is blocked: its root waits for a subdialog that asks the human a question (Q4H), so start-up
and listings have real pending work to show; every tree has a TYPE B registry entry.

One prototype tree is written with the real store API (so the files are exactly what the daemon
writes); the others are copies of its files with fresh ids, which writes 100,000 dialogs in well under
a minute instead of the half hour the pydantic path would take.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from dominds.ids import new_dialog_id, now_iso
from dominds.rtws import Rtws
from dominds.store.atomic import set_fsync
from dominds.store.course_records import (
    AgentThoughtRecord,
    AgentWordsRecord,
    CourseRecord,
    CourseStartRecord,
    FuncCallRecord,
    FuncResultRecord,
    GenFinishRecord,
    GenStartRecord,
    HumanTextRecord,
    Usage,
)
from dominds.store.dialog_store import DialogFiles, DialogStore
from dominds.store.records import (
    Assignment,
    CallSiteRef,
    DialogMeta,
    HumanQuestion,
    LatestState,
    PendingSubdialog,
    Q4hFile,
    RegistryEntry,
    RunState,
    SubdlgFile,
)


def _course(files: DialogFiles, agent: str) -> None:
    ts = now_iso()
    records: list[CourseRecord] = [
        CourseStartRecord(ts=ts, course=1),
        HumanTextRecord(ts=ts, genseq=1, msg_id=new_dialog_id(), content="Do the thing " * 8),
    ]
    for genseq in (1, 2):
        records += [
            GenStartRecord(ts=ts, genseq=genseq),
            AgentThoughtRecord(ts=ts, genseq=genseq, content="Thinking about it. " * 10),
            AgentWordsRecord(ts=ts, genseq=genseq, content=f"{agent} says: working on it. " * 12),
            FuncCallRecord(ts=ts, genseq=genseq, id=f"call-{genseq}", name="read_file", arguments={"path": "a.txt"}),
            FuncResultRecord(ts=ts, genseq=genseq, id=f"call-{genseq}", name="read_file", content="file text " * 30),
        ]
        usage = Usage(input_tokens=1200 * genseq, output_tokens=300)
        records.append(GenFinishRecord(ts=ts, genseq=genseq, provider="scripted", model="bench", usage=usage, duration_ms=40))
    for record in records:
        files.append(1, record, sync=False)


def _prototype(store: DialogStore, subs: int, blocked: bool) -> tuple[str, list[str]]:
    """One tree written through the store; returns (root id, subdialog ids)."""
    root_id = new_dialog_id()
    root_files = store.files("run", root_id)
    root_files.write_meta(DialogMeta(id=root_id, root_id=root_id, agent_id="lead", task_doc_path="tasks/b.tsk", created_at=now_iso()))
    state = RunState(kind="blocked", reason="waiting_for_subdialogs") if blocked else RunState(kind="idle")
    root_files.write_latest(LatestState(last_modified=now_iso(), run_state=state))
    _course(root_files, "lead")
    pending, registry, sub_ids = [], {}, []
    for index in range(subs):
        sub_id = new_dialog_id()
        sub_ids.append(sub_id)
        files = store.files("run", root_id, sub_id)
        session = f"s{index}" if index == 0 else None
        assignment = Assignment(
            tellask_head="@worker do part", tellask_body="details", origin_member_id="lead", caller_dialog_id=root_id,
            call_id=f"c{index}", call_type="B" if session else "C",
        )
        files.write_meta(
            DialogMeta(
                id=sub_id, root_id=root_id, agent_id="worker", task_doc_path="tasks/b.tsk", created_at=now_iso(),
                supdialog_id=root_id, tellask_session=session, assignment_from_sup=assignment,
            )
        )
        asks = blocked and index == 0
        sub_state = RunState(kind="blocked", reason="needs_human_input") if asks else RunState(kind="idle")
        files.write_latest(LatestState(last_modified=now_iso(), run_state=sub_state))
        _course(files, "worker")
        if asks:
            question = HumanQuestion(
                id=f"q4h-{sub_id}-c1", tellask_head="@human Which one?", body_content="A or B", asked_at=now_iso(),
                call_id="c1", call_site_ref=CallSiteRef(course=1, message_index=3),
            )
            files.write_q4h(Q4hFile(questions=[question], updated_at=now_iso()))
            pending.append(
                PendingSubdialog(subdialog_id=sub_id, agent_id="worker", call_type="C", tellask_head="@worker do part", call_id="c0", created_at=now_iso())
            )
        if session:
            registry[f"worker!{session}"] = RegistryEntry(subdialog_id=sub_id, agent_id="worker", tellask_session=session, created_at=now_iso())
    if pending:
        root_files.write_subdlg(SubdlgFile(pending=pending, updated_at=now_iso()))
    if registry:
        root_files.write_registry(registry)
    return root_id, sub_ids


def _read_tree(directory: Path) -> dict[str, str]:
    """Relative path → text of every file of a tree."""
    return {str(p.relative_to(directory)): p.read_text(encoding="utf-8") for p in directory.rglob("*") if p.is_file()}


def generate(rtws: Rtws, roots: int, subs: int, *, progress: bool = False) -> int:
    """Write ``roots`` trees of ``1 + subs`` dialogs into ``rtws``'s ``run/``; returns the number of dialogs."""
    set_fsync(False)
    scratch = Path(tempfile.mkdtemp(prefix="dominds-proto-"))
    try:
        proto_rtws = Rtws(scratch)
        proto_rtws.ensure_layout()
        store = DialogStore(proto_rtws)
        prototypes = []
        for blocked in (True, False):
            root_id, sub_ids = _prototype(store, subs, blocked)
            prototypes.append((root_id, sub_ids, _read_tree(store.root_dir("run", root_id))))
    finally:
        set_fsync(True)
        shutil.rmtree(scratch, ignore_errors=True)
    run_dir = rtws.run_dir
    for index in range(roots):
        proto_root, proto_subs, files = prototypes[0 if index % 5 == 0 else 1]
        mapping = {proto_root: new_dialog_id(), **{s: new_dialog_id() for s in proto_subs}}
        target = run_dir / mapping[proto_root]
        for relative, text in files.items():
            for old, new in mapping.items():
                relative = relative.replace(old, new)
                text = text.replace(old, new)
            path = target / relative
            os.makedirs(path.parent, exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        if progress and index and index % 10000 == 0:
            print(f"  {index * (1 + subs):,} dialogs written", flush=True)
    return roots * (1 + subs)
