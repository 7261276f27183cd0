"""`dominds status` on a big workspace (issue 6 goal: 10,000 dialogs in under 2 s).

Generates a workspace of ROOTS roots with SUBS subdialogs each (default 2,000 × 4 → 10,000 dialogs),
every dialog with a course file of 14 records (two generations with usage); every fifth tree has a
pending Q4H and a pending subdialog, every tree a TYPE B registry entry. Then times ``dominds status``
as a user runs it, in a fresh process (best of 3; wall and CPU, since the machine may be shared):

- the first run, without ``.dominds/cache/status.json`` (every file read);
- with the cache warm (the usual case: only dialogs that changed are read again);
- ``--json``, ``--no-cache``, and an empty workspace (the fixed cost of starting Python).

Run: ``.venv/bin/python bench/bench_status.py [--roots 2000] [--subs 4] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, make_workspace, print_table

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


def generate(rtws: Rtws, roots: int, subs: int) -> int:
    """Write ``roots`` trees of ``1 + subs`` dialogs; returns the number of dialogs."""
    set_fsync(False)
    store = DialogStore(rtws)
    count = 0
    for index in range(roots):
        root_id = new_dialog_id()
        root_files = store.files("run", root_id)
        root_files.write_meta(DialogMeta(id=root_id, root_id=root_id, agent_id="lead", task_doc_path="tasks/b.tsk", created_at=now_iso()))
        blocked = index % 5 == 0
        state = RunState(kind="blocked", reason="waiting_for_subdialogs") if blocked else RunState(kind="idle")
        root_files.write_latest(LatestState(last_modified=now_iso(), run_state=state))
        _course(root_files, "lead")
        count += 1
        pending = []
        registry = {}
        for sub_index in range(subs):
            sub_id = new_dialog_id()
            files = store.files("run", root_id, sub_id)
            session = f"s{sub_index}" if sub_index == 0 else None
            assignment = Assignment(
                tellask_head="@worker do part", tellask_body="details", origin_member_id="lead", caller_dialog_id=root_id,
                call_id=f"c{sub_index}", call_type="B" if session else "C",
            )
            files.write_meta(
                DialogMeta(
                    id=sub_id, root_id=root_id, agent_id="worker", task_doc_path="tasks/b.tsk", created_at=now_iso(),
                    supdialog_id=root_id, tellask_session=session, assignment_from_sup=assignment,
                )
            )
            asks = blocked and sub_index == 0
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
            count += 1
        if pending:
            root_files.write_subdlg(SubdlgFile(pending=pending, updated_at=now_iso()))
        if registry:
            root_files.write_registry(registry)
    set_fsync(True)
    return count


def _time_cli(rtws: Rtws, *args: str) -> tuple[float, float, int]:
    """Wall and CPU seconds (user + system of the child) of one `dominds status` process, and its output size."""
    before = os.times()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "dominds", "-C", str(rtws.root), "status", *args], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(f"status failed: {done.stderr.strip()}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu, len(done.stdout)


def _best(rtws: Rtws, *args: str, runs: int = 3, before_each: Callable[[], None] | None = None) -> str:
    """Best of ``runs`` (the machine may be shared): ``wall s (cpu s)``."""
    results = []
    for _ in range(runs):
        if before_each is not None:
            before_each()
        results.append(_time_cli(rtws, *args))
    wall, cpu, size = min(results)
    return f"{wall:.2f} s wall, {cpu:.2f} s CPU ({size / 1024:.0f} KiB of output)"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--roots", type=int, default=2000)
    parser.add_argument("--subs", type=int, default=4)
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it")
    args = parser.parse_args()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="dominds-bench-status-"))
    rtws = make_workspace([{"response": "ok"}], base)
    started = time.perf_counter()
    dialogs = generate(rtws, args.roots, args.subs)
    generated_s = time.perf_counter() - started
    cache = rtws.state_dir / "cache" / "status.json"
    try:
        empty = make_workspace([{"response": "ok"}], base / "empty-ws")
        rows = [
            ("generate the workspace", f"{generated_s:.1f} s"),
            ("status, first run (no cache)", _best(rtws, before_each=lambda: cache.unlink(missing_ok=True))),
            ("status, cache warm", _best(rtws)),
            ("status --json, cache warm", _best(rtws, "--json")),
            ("status --no-cache", _best(rtws, "--no-cache")),
            ("status, empty workspace", _best(empty) + "  (process start and imports)"),
            ("goal", "10,000 dialogs in under 2 s"),
        ]
        print_table(f"dominds status on {dialogs:,} dialogs ({args.roots:,} roots × {1 + args.subs}) — {machine()}", rows)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
