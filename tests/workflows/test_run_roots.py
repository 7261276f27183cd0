"""``workflows/run_roots.py``: the newest workflow runs on disk, over every status directory.

A property test against a model (a sorted list): whatever roots the three status directories hold,
with or without the run file, the answer is the ``limit`` newest roots holding it, newest first. (A
first version named every root's status after the last directory walked, so runs under ``run`` and
``done`` were looked for under ``archive`` and none was found.)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dominds.rtws import DIALOG_STATUSES, Rtws
from dominds.store.dialog_store import DialogStore
from dominds.workflows.run_roots import INTERRUPTED, newest_run_roots, shown_status

RUN_FILE = "some-run.json"
roots = st.dictionaries(
    st.integers(min_value=0, max_value=36**9 - 1),  # creation times: ids sort by them
    st.tuples(st.sampled_from(DIALOG_STATUSES), st.booleans()),  # (status directory, holds the run file)
    max_size=25,
)


def dialog_id(ms: int) -> str:
    digits = ""
    for _ in range(9):
        ms, rest = divmod(ms, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[rest] + digits
    return f"{digits}-abcd"


@settings(max_examples=60, deadline=None)
@given(roots=roots, limit=st.integers(min_value=1, max_value=30))
def test_the_newest_roots_holding_the_run_file_come_first_whatever_their_status(roots: dict[int, tuple[str, bool]], limit: int) -> None:
    with tempfile.TemporaryDirectory() as temp:
        rtws = Rtws(Path(temp))
        rtws.ensure_layout()
        for ms, (status, has_file) in roots.items():
            directory = rtws.status_dir(status) / dialog_id(ms)
            directory.mkdir()
            if has_file:
                (directory / RUN_FILE).write_text("{}")
        (rtws.status_dir("run") / "not-a-dialog").mkdir()  # other folders are not roots
        found = newest_run_roots(DialogStore(rtws), RUN_FILE, limit)
        expected = sorted(((dialog_id(ms), status) for ms, (status, has) in roots.items() if has), reverse=True)[:limit]
        assert [(r.root_id, r.status) for r in found] == expected
        assert all(r.directory == rtws.status_dir(r.status) / r.root_id for r in found)


def test_only_a_running_record_that_nothing_drives_reads_interrupted() -> None:
    assert shown_status("running", "a", live={"b"}) == INTERRUPTED
    assert shown_status("running", "a", live={"a"}) == "running"
    assert shown_status("completed", "a", live=set()) == "completed"
