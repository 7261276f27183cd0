"""The dialog list asks for a page of trees, not the whole listing (issue 31, item 6).

The bug this pins: the panel's list asked for ``GET /api/dialogs`` whole, which on a workspace of
100,000 dialogs is seconds of the daemon's work and megabytes before the list shows anything. It now
asks each status for the most recent ``LIST_PAGE`` trees (``?status=…&limit=…``), says how many more
there are, loads them on demand, and still shows a dialog opened by a link when its tree is past the
loaded page. Screenshots at 420 and 1280 px (test-artifacts/)."""

from __future__ import annotations

import os
import time
from datetime import datetime
from typing import Any
from unittest import mock

import pytest
from browser_kit import Panel
from chromium import screenshot_dir
from playwright.async_api import expect
from server_kit import TOKEN

from dominds.ids import new_dialog_id
from dominds.rtws import Rtws
from dominds.store import dialog_store
from dominds.store.course_records import CourseStartRecord
from dominds.store.dialog_store import DialogStore
from dominds.store.records import DialogMeta, LatestState

pytestmark = pytest.mark.browser

PAGE = 50  # LIST_PAGE in static/dialog_lists.js
TREES = PAGE + 6
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _write_trees(rtws: Rtws, count: int) -> None:
    """``count`` root dialogs on disk, last active an hour apart (no two alike: the order is unambiguous)."""
    store = DialogStore(rtws)
    now = time.time()
    for n in range(count):
        when = now - 3600 * (count - n)
        stamp = datetime.fromtimestamp(when).astimezone().isoformat(timespec="milliseconds")
        root_id = new_dialog_id()
        files = store.files("run", root_id)
        files.write_meta(DialogMeta(id=root_id, root_id=root_id, agent_id="lead", task_doc_path="tasks/t.tsk", created_at=stamp))
        with mock.patch.object(dialog_store, "now_iso", return_value=stamp):  # as if written then
            files.write_latest(LatestState(last_modified=stamp))
        files.append(1, CourseStartRecord(ts=stamp, course=1))
        os.utime(store.root_dir("run", root_id), (when, when))


def _top_rows(page: Any) -> Any:
    return page.locator("#dialog-lists > ul.tree > li > a.row")


async def test_the_list_shows_a_page_counts_the_rest_loads_more_and_reveals_a_linked_old_dialog(panel: Panel) -> None:
    page = panel.page
    _write_trees(panel.engine.rtws, TREES)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url) if "/api/dialogs?" in request.url or request.url.endswith("/api/dialogs") else None)

    # the order the daemon lists them in (the whole listing, as an API client may still ask for it)
    base = panel.url.split("/?")[0]
    whole = await page.request.get(f"{base}/api/dialogs", headers=AUTH)
    order = [tree["rootId"] for tree in (await whole.json())["dialogs"]]
    assert len(order) == TREES
    requests.clear()

    await page.goto(panel.url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    rows = _top_rows(page)
    await expect(rows).to_have_count(PAGE)
    assert [await row.get_attribute("data-self-id") for row in await rows.all()] == order[:PAGE], "the most recent first"
    more = page.locator("#dialog-lists .list-more")
    await expect(more).to_have_attribute("data-more", str(TREES - PAGE))
    await expect(more).to_contain_text(f"{TREES - PAGE} more")
    await expect(page.locator('.tab[data-status="run"] .tab-count')).to_have_text(str(TREES))
    assert requests and all("limit=" in url for url in requests), f"every listing asked for a page: {requests}"
    for width in (420, 1280):  # the end of the list: its last rows and the "more" control
        await page.set_viewport_size({"width": width, "height": 800})
        if width == 420:
            await page.click('#pane-tabs button[data-pane="list"]')
        await more.scroll_into_view_if_needed()
        await expect(more.get_by_role("button")).to_be_in_viewport()
        await page.screenshot(path=str(screenshot_dir() / f"dialog-list-page-{width}.png"))

    await more.get_by_role("button").click()
    await expect(rows).to_have_count(TREES)
    await expect(more).to_have_count(0)
    assert [await row.get_attribute("data-self-id") for row in await rows.all()] == order

    # a link to the oldest dialog, in a fresh page: it opens, and its tree is shown past the first page
    oldest = order[-1]
    linked = await page.context.new_page()
    linked.on("pageerror", lambda error: panel.errors.append(str(error)))
    await linked.goto(f"{panel.url}&dialog={oldest}")
    await expect(linked.locator("#dh-id")).to_have_text(oldest)
    current = linked.locator(f'#dialog-lists a.row.current[data-self-id="{oldest}"]')
    await expect(current).to_be_visible()
    await expect(_top_rows(linked)).to_have_count(PAGE + 1)
    await expect(linked.locator("#dialog-lists .list-more")).to_have_attribute("data-more", str(TREES - PAGE - 1))
    await expect(linked.locator('.tab[data-status="run"] .tab-count')).to_have_text(str(TREES))

    # a change to a dialog past the loaded page reaches the list: it is now the most recent
    second_oldest = order[-2]
    answer = await linked.request.post(f"{base}/api/dialogs/{second_oldest}/title", data={"title": "active again"}, headers=AUTH)
    assert answer.ok
    await expect(_top_rows(linked).first).to_have_attribute("data-self-id", second_oldest)
    await expect(_top_rows(linked).first).to_contain_text("active again")
    await expect(_top_rows(linked)).to_have_count(PAGE + 1)
    await linked.close()
