"""`dominds show` pages a long course like the panel: the last page by default, `--before N`, `--all`.

The bug this pins: `show` replayed the whole course at once (the whole replay in memory, in one JSON
document), which for a dialog of thousands of turns is what made the panel's display fail.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from test_cli_kit import dominds, write_workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))  # tests/server is not a package
from long_dialog import grow_course


def test_show_prints_the_last_page_and_pages_back_to_the_beginning(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    done = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "think and tool", "--json")
    root_id = json.loads(done.stdout.splitlines()[0])["dialog"]["rootId"]
    course = ws / ".dialogs" / "run" / root_id / "course-001.jsonl"
    call_ids = grow_course(course, 1500)
    records = sum(1 for line in course.read_text(encoding="utf-8").splitlines() if line.strip())

    shown = dominds(ws, "show", root_id)
    assert shown.returncode == 0, shown.stderr
    hint = re.search(r"records 0\.\.(\d+) of this course are earlier pages: `dominds show \S+ --before (\d+)`", shown.stdout)
    assert hint is not None, shown.stdout[:400]
    start = int(hint.group(2))
    assert 0 < start < records and int(hint.group(1)) == start - 1

    before = json.loads(dominds(ws, "show", root_id, "--before", str(start), "--json").stdout)
    assert before["toRecord"] == start and before["fromRecord"] < start and before["totalRecords"] == records

    pages = [json.loads(line) for line in dominds(ws, "show", root_id, "--all", "--json").stdout.splitlines()]
    assert len(pages) > 2 and pages[0]["fromRecord"] == 0 and pages[-1]["toRecord"] == records
    assert all(a["toRecord"] == b["fromRecord"] for a, b in zip(pages, pages[1:], strict=False)), "pages tile the course"
    calls = [e["funcId"] for p in pages for e in p["events"] if e["type"] == "func_call_requested_evt"]
    assert calls == call_ids, "every call once, in order"
