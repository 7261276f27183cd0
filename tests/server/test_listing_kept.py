"""The panel's listing keeps each unchanged tree's JSON in the dialog index (issue 21).

A first ``GET /api/dialogs`` on 10,000 dialogs decoded and priced every dialog (seconds); the JSON of a
tree nobody loaded is now kept under its file signatures and the prices (``store.index.Derived``). The
risk is a stale row: it must follow a price change, an in-place hand edit, and a drive.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from server_kit import COST_RESPONSES, ServeFactory


async def _rows(served: Any) -> dict[str, Any]:
    response = await served.client.get("/api/dialogs", headers=served.auth())
    assert response.status == 200, await response.text()
    return {row["selfId"]: row for row in (await response.json())["dialogs"]}


def _age(root: Path, seconds: float) -> None:
    """Older than the index's racy window: a tree's signature can be trusted, so its JSON is kept."""
    when = time.time() - seconds
    for path in root.rglob("*"):
        os.utime(path, (when, when))


def _kept(db_path: Path) -> int:
    with contextlib.closing(sqlite3.connect(db_path)) as db:
        return int(db.execute("SELECT count(*) FROM derived WHERE purpose = 'listing'").fetchone()[0])


async def test_kept_rows_follow_prices_hand_edits_and_drives(serve: ServeFactory) -> None:
    served = await serve(COST_RESPONSES)
    engine = served.engine
    response = await served.client.post("/api/dialogs", json={"taskDocPath": "tasks/t.tsk"}, headers=served.auth())
    root = (await response.json())["rootId"]
    await served.client.post(f"/api/dialogs/{root}/messages", json={"content": "hello"}, headers=served.auth())
    await engine.wait_idle()
    engine.unload_if_at_rest(root)
    assert root not in engine.roots, "a tree at rest is not held in memory"
    _age(engine.rtws.dialogs_dir, 60)

    first = await _rows(served)
    assert _kept(engine.index.path) == 1, "the tree's JSON was kept"
    assert await _rows(served) == first, "the kept row reads as the computed one"
    assert first[root]["cost"]["costUsd"] == 0.048

    llm = engine.rtws.llm_yaml
    llm.write_text(llm.read_text().replace("input: 1.0, output: 2.0", "input: 2.0, output: 4.0"))
    assert (await _rows(served))[root]["cost"]["costUsd"] == 0.096, "new prices reach a kept row"

    latest = engine.rtws.run_dir / root / "latest.yaml"
    text = latest.read_text()
    assert "title:" in text
    latest.write_text("\n".join('title: "Renamed by hand"' if line.startswith("title:") else line for line in text.splitlines()) + "\n")
    _age(engine.rtws.dialogs_dir, 30)
    assert (await _rows(served))[root]["title"] == "Renamed by hand", "an in-place edit reaches a kept row"

    await served.client.post(f"/api/dialogs/{root}/messages", json={"content": "hello"}, headers=served.auth())
    await engine.wait_idle()
    assert (await _rows(served))[root]["cost"]["generations"] == 2, "a drive reaches the row"
