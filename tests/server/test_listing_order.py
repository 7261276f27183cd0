"""The order of ``GET /api/dialogs``: statuses as ``DIALOG_STATUSES`` lists them (run, done, archive),
and within a status the most recently active tree first, a tie in activity the newer id first.

The listing once held a tuple and four strings per tree to sort them (6 MB at 100,000 dialogs, and the
daemon's memory stayed that much higher after it); it then sorted one string per tree, and now has
SQLite sort one key per tree as UTF-8 bytes. The keys' parts must still compare as the tuple did —
including activity stamps of different lengths, with characters beyond ASCII and beyond the BMP (hand
edits of ``lastModified``), and ties."""

from __future__ import annotations

import json
import random

from workspace_kit import write_idle_root

from dominds.driver.engine import Engine
from dominds.rtws import DIALOG_STATUSES, Rtws
from dominds.server.listing import engine_source, listing_chunks
from dominds.store.atomic import set_fsync
from dominds.store.dialog_store import DialogStore

STAMPS = [
    "2026-01-01T00:00:00.000Z",
    "2026-01-01T00:00:00.000Z",  # a tie: the newer id first
    "2026-03-05T10:00:00.000Z",
    "2026-03-05T10:00:00Z",  # shorter than its neighbour: a prefix sorts below the longer stamp
    "2025-12-31T23:59:59.999Z",
    "2026-03-05T10:00:00.5Z",
    "2026-03-05T10:00:00\u00e9",  # hand edits: a non-ASCII character,
    "2026-03-05T10:00:00\U0001f600",  # one beyond the BMP (after every BMP character, as in UTF-8),
    "2026-03-05T10:00:00\ud800",  # and a lone surrogate (a YAML escape makes one): not text, so no activity
]


def _as_listed(stamp: str) -> str | None:
    """A stamp that is not text (a lone surrogate) is read as no activity: listed last in its status."""
    try:
        stamp.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return stamp


def _set_activity(store: DialogStore, status: str, root_id: str, last_modified: str) -> None:
    """As a hand edit would (the store stamps its own writes with the time)."""
    latest = store.files(status, root_id, root_id).latest_yaml
    text = latest.read_text(encoding="utf-8")
    start = text.index("lastModified:")
    end = text.index("\n", start)
    escaped = last_modified.encode("ascii", "backslashreplace").decode()  # YAML reads \x, \u and \U escapes
    latest.write_text(f'{text[:start]}lastModified: "{escaped}"{text[end:]}', encoding="utf-8")


def test_trees_are_listed_by_status_then_most_recent_activity_then_newest_id(tmp_rtws: Rtws) -> None:
    set_fsync(False)
    try:
        store = DialogStore(tmp_rtws)
        rng = random.Random(7)
        trees: list[tuple[str, str | None, str]] = []  # (status, lastModified, rootId)
        for stamp in STAMPS * 3:
            root_id = write_idle_root(store, agent_id="a", task_doc_path="t.tsk")
            status = rng.choice(DIALOG_STATUSES)
            store.move_root(root_id, "run", status)
            _set_activity(store, status, root_id, stamp)
            trees.append((status, _as_listed(stamp), root_id))
        engine = Engine(tmp_rtws, resume=False, take_lock=False)
        try:
            body = json.loads(b"".join(listing_chunks(engine_source(engine), DIALOG_STATUSES)))
        finally:
            engine.index.close()
    finally:
        set_fsync(True)

    listed = [(row["status"], row["lastModified"], row["rootId"]) for row in body["dialogs"]]
    expected = sorted(trees, key=lambda t: (t[1] or "", t[2]), reverse=True)
    expected.sort(key=lambda t: DIALOG_STATUSES.index(t[0]))
    assert listed == expected
    assert {status for status, _, _ in listed} == set(DIALOG_STATUSES), "every status was exercised"
