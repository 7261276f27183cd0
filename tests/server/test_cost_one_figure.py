"""One cost figure per dialog tree, the same in the list row, the header and `dominds status` (issue 18, item 6).

The bug: the header said $0.06 while the same dialog's row said $0, and `dominds status` disagreed
again. The row's cost was cached by the mtime of ``latest.yaml``; a generation that finished within the
same clock tick as the write before it (a coarse filesystem clock, a fast model) left the row at the old
figure. The CLI counted and priced on its own and wrote the number its own way.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from server_kit import COST_RESPONSES, ServeFactory


async def _get(served: Any, path: str) -> Any:
    response = await served.client.get(path, headers=served.auth())
    assert response.status == 200, await response.text()
    return await response.json()


async def _post(served: Any, path: str, body: dict[str, Any]) -> Any:
    response = await served.client.post(path, json=body, headers=served.auth())
    assert response.status in (201, 202), await response.text()
    return await response.json()


async def _cli(served: Any, *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dominds", "-C", str(served.engine.rtws.root), *args, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0
    return out.decode()


async def test_the_row_the_header_and_the_cli_show_one_figure(serve: ServeFactory) -> None:
    served = await serve(COST_RESPONSES)
    root = (await _post(served, "/api/dialogs", {"taskDocPath": "tasks/t.tsk"}))["rootId"]
    latest = served.engine.rtws.run_dir / root / "latest.yaml"
    (row,) = (await _get(served, "/api/dialogs"))["dialogs"]
    assert row["cost"]["costUsd"] == 0 and row["cost"]["costText"] == "$0.00"
    before = os.stat(latest)

    await _post(served, f"/api/dialogs/{root}/messages", {"content": "hello"})
    await served.engine.wait_idle()
    os.utime(latest, ns=(before.st_atime_ns, before.st_mtime_ns))  # what a coarse clock leaves behind
    (row,) = (await _get(served, "/api/dialogs"))["dialogs"]
    header = (await _get(served, f"/api/dialogs/{root}/usage"))["total"]
    assert header["costUsd"] == 0.048, "30k in at $1/M plus 9k out at $2/M"
    assert row["cost"] == header, "the row is not stuck at its old figure"

    await _post(served, f"/api/dialogs/{root}/messages", {"content": "delegate"})
    await served.engine.wait_idle()
    (row,) = (await _get(served, "/api/dialogs"))["dialogs"]
    assert row["subdialogCount"] == 1
    usage = await _get(served, f"/api/dialogs/{root}/usage")
    header = usage["total"]
    assert row["cost"] == header, "one figure for the whole tree, subdialog included"
    assert header["generations"] == 4 and header["costUsd"] == round(0.048 + 0.0018 + 0.0064 + 0.0009, 6)
    assert header["costText"] == "$0.0571"
    assert round(sum(d["costUsd"] for d in usage["dialogs"]), 6) == header["costUsd"]

    await served.engine.close()  # `dominds status` reads the files (here without a daemon)
    (tree,) = json.loads(await _cli(served, "status", "--json", "--no-cache"))["roots"]
    assert tree["usage"]["costUsd"] == header["costUsd"] and tree["usage"]["costText"] == header["costText"]
    assert tree["usage"]["generations"] == header["generations"]
    text = await _cli(served, "status")
    assert "$0.0571" in text and text.count("$0.0571") == 2, "the tree line and the total line"


async def test_the_usage_book_keeps_a_bounded_number_of_course_files(serve: ServeFactory, monkeypatch: Any) -> None:
    """Bug pinned here (issue 21): the usage book kept the figures of every course file whose usage was
    ever asked for (the panel asks for each dialog it shows), so the daemon grew with every dialog a
    person looked at. It keeps the most recent ``BOOK_FILES``; one asked for again is counted again,
    to the same figure."""
    from dominds.driver import usage

    monkeypatch.setattr(usage, "BOOK_FILES", 2)
    served = await serve(COST_RESPONSES)
    roots = []
    for _ in range(3):
        root = (await _post(served, "/api/dialogs", {"taskDocPath": "tasks/t.tsk"}))["rootId"]
        await _post(served, f"/api/dialogs/{root}/messages", {"content": "hello"})
        roots.append(root)
    await served.engine.wait_idle()
    first = [await _get(served, f"/api/dialogs/{root}/usage") for root in roots]
    assert len(served.engine.usage_book) == 2
    again = [await _get(served, f"/api/dialogs/{root}/usage") for root in roots]
    assert again == first and first[0]["total"]["costUsd"] > 0
    assert len(served.engine.usage_book) == 2
