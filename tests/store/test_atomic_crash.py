"""SIGKILL a process that rewrites a state file in a loop: the file must always be a whole version."""

from __future__ import annotations

from pathlib import Path

from killed_writer import kill_writer_once_ready

from dominds.store.fileio import load_model
from dominds.store.records import LatestState

WRITER = r"""
import sys
from pathlib import Path
from dominds.store.fileio import save_model, append_record
from dominds.store.records import LatestState, RunState
from dominds.store.course_records import GenStartRecord
path = Path(sys.argv[1])
course = Path(sys.argv[2])
i = int(sys.argv[3])
while True:
    i += 1
    # a big-ish payload makes a torn write likely if writes were not atomic
    save_model(path, LatestState(current_course=i, last_modified="t", run_state=RunState(detail="x" * 20000)))
    append_record(course, GenStartRecord(ts="t" * 5000, genseq=i))
    if i == int(sys.argv[3]) + 1:
        print("ready", flush=True)  # after one whole round: the kill that follows lands in a later one
"""


def test_state_file_survives_repeated_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "latest.yaml"
    course = tmp_path / "course-001.jsonl"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    last_seen = 0
    for round_no in range(12):
        kill_writer_once_ready([str(script), str(path), str(course), str(last_seen)], 0.02 + 0.013 * (round_no % 5))
        latest = load_model(path, LatestState)  # raises if torn
        if latest is not None:
            assert latest.run_state.detail == "x" * 20000
            assert latest.current_course >= last_seen
            last_seen = latest.current_course
        leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        # a kill between create and rename may leave one temp file; it never replaces the real one
        assert len(leftovers) <= round_no + 1
        from dominds.store.fileio import read_course

        records = read_course(course)  # a torn tail is ignored, never an error
        assert all(r.type == "gen_start_record" for r in records)
    assert last_seen > 0, "the writer made progress between kills"
