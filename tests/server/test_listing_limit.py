"""``GET /api/dialogs?limit=N``: the first N trees of the whole listing, the others counted in ``more``.

The first listing of a big workspace checked every file of every dialog before it sent a byte (a whole
refresh of the dialog index); asked for the N most recent trees, the daemon chooses them with one
``stat`` per root directory (store/index_recent.py, counted in tests/store/test_index_recent.py) and
builds only those."""

from __future__ import annotations

from server_kit import ServeFactory


async def test_limit_lists_the_most_recent_trees_and_counts_the_others(serve: ServeFactory) -> None:
    served = await serve()
    for _ in range(3):
        status, _created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
        assert status == 201
    status, whole = await served.get("/api/dialogs")
    assert status == 200 and "more" not in whole
    order = [tree["rootId"] for tree in whole["dialogs"]]
    status, limited = await served.get("/api/dialogs?limit=2")
    assert status == 200 and [tree["rootId"] for tree in limited["dialogs"]] == order[:2] and limited["more"] == 1
    assert limited["dialogs"] == whole["dialogs"][:2], "the same trees, built the same way"

    oldest = order[-1]
    status, _ = await served.post(f"/api/dialogs/{oldest}/title", {"title": "active again"})
    assert status == 200
    status, latest = await served.get("/api/dialogs?limit=1")
    assert [tree["rootId"] for tree in latest["dialogs"]] == [oldest] and latest["more"] == 2
    assert latest["dialogs"][0]["title"] == "active again"

    for bad in ("0", "-1", "two", "²"):
        status, refused = await served.get(f"/api/dialogs?limit={bad}")
        assert status == 400 and "1 or more" in refused["error"], bad
