"""Items 2 and 3 of issue 18 in real Chromium: layout at 420/900/1280 px; titles, search, filters, links.

Item 3, the bug: at 420 px the conversation column was 28 px wide and header buttons were cut off; at
900 px the conversation was narrower than the Taskdoc panel; side panels could not be collapsed.
Item 2, the bug: every root row read "@lead tasks/demo.tsk $0 · N tok" (no title), there was no search,
the URL never changed (a reload lost the open dialog), and workflow runs flooded the Running list.
The layout test also takes the README's screenshots: into test-artifacts/, or into docs/images/ with
DOMINDS_UPDATE_SCREENSHOTS=1 (so an ordinary test run leaves the tracked images alone).
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_kit import Panel
from chromium import screenshot_dir
from playwright.async_api import expect
from showcase import SHOWCASE_RESPONSES, populate

pytestmark = pytest.mark.browser

IMAGES = screenshot_dir()

GEOMETRY = """() => {
  const box = (selector) => {
    const el = document.querySelector(selector);
    if (!el || getComputedStyle(el).display === "none") return null;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 ? { left: r.left, right: r.right, width: r.width } : null;
  };
  const cut = [...document.querySelectorAll("#topbar > *, #topbar button, #dialog-header button, #composer button, #pane-tabs button")]
    .filter((el) => { const r = el.getBoundingClientRect(); return r.width > 0 && (r.right > innerWidth + 0.5 || r.left < -0.5); })
    .map((el) => el.id || el.textContent.trim());
  return { viewport: innerWidth, scrollWidth: document.documentElement.scrollWidth, transcript: box("#transcript"),
    sidebar: box("#sidebar"), rightbar: box("#rightbar"), tabs: box("#pane-tabs"), cut };
}"""


@pytest.fixture
def panel_responses() -> list[dict[str, Any]]:
    return SHOWCASE_RESPONSES


@pytest.fixture
def panel_suggestions() -> list[str]:
    return ["Plan the 1.2 release", "Start over"]


async def _geometry(page: Any) -> dict[str, Any]:
    shape: dict[str, Any] = await page.evaluate(GEOMETRY)
    assert shape["scrollWidth"] <= shape["viewport"], f"the page scrolls sideways: {shape}"
    assert shape["cut"] == [], f"controls cut off at the edge: {shape['cut']}"
    return shape


async def _open(panel: Panel, width: int, query: str) -> Any:
    await panel.page.set_viewport_size({"width": width, "height": 820})
    await panel.page.goto(f"{panel.url.split('?')[0]}?{query}")
    await expect(panel.page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await expect(panel.page.locator(".tellask.asking form.answer")).to_have_count(1)
    return panel.page


async def test_the_layout_works_at_1280_900_and_420_px(panel: Panel) -> None:
    ids = await populate(panel.engine)
    IMAGES.mkdir(parents=True, exist_ok=True)
    await panel.page.goto(panel.url)  # the ?auth= visit: from here on the session cookie is enough

    page = await _open(panel, 1280, f"dialog={ids['plan']}")
    wide = await _geometry(page)
    assert wide["sidebar"] and wide["rightbar"], "three columns"
    assert wide["transcript"]["width"] >= 600 and wide["rightbar"]["width"] < wide["transcript"]["width"]
    await expect(page.locator("#composer-mode")).to_be_visible()
    await expect(page.locator("#suggestions")).to_be_hidden(), "no chip sends a message while Send answers"
    await page.screenshot(path=str(IMAGES / "panel-1280.png"))
    await page.click("#toggle-rightbar")  # side panels collapse; the conversation takes the room
    collapsed = await _geometry(page)
    assert collapsed["rightbar"] is None and collapsed["transcript"]["width"] > wide["transcript"]["width"] + 300
    await page.click("#toggle-sidebar")
    assert (await _geometry(page))["sidebar"] is None
    await page.click("#toggle-sidebar")
    await page.click("#toggle-rightbar")

    page = await _open(panel, 900, f"dialog={ids['plan']}")
    medium = await _geometry(page)
    assert medium["sidebar"] and medium["rightbar"] is None, "the side panels are a closed drawer"
    assert medium["transcript"]["width"] >= 560
    await page.screenshot(path=str(IMAGES / "panel-900.png"))
    await page.click("#toggle-rightbar")
    drawer = await _geometry(page)
    assert drawer["rightbar"]["width"] < drawer["transcript"]["width"], "never narrower than the Taskdoc panel"
    await expect(page.locator("#taskdoc-body .td-section").first).to_be_visible()
    await page.keyboard.press("Escape")
    assert (await _geometry(page))["rightbar"] is None
    await page.click("#more-btn")  # the actions that do not fit are in a menu, not cut off
    await expect(page.locator("#emergency-stop")).to_be_visible()
    await _geometry(page)
    await page.keyboard.press("Escape")

    page = await _open(panel, 420, f"dialog={ids['plan']}")
    phone = await _geometry(page)
    assert phone["transcript"]["width"] >= 400 and phone["sidebar"] is None and phone["rightbar"] is None
    assert phone["tabs"] is not None, "one column with tabs"
    await expect(page.locator("#q4h-toggle")).to_be_hidden()  # the tab carries the count, the header has room
    await expect(page.locator('#pane-tabs button[data-pane="side"]')).to_have_text("Questions & Taskdoc 1")
    await page.screenshot(path=str(IMAGES / "panel-420.png"))
    await page.click('#pane-tabs button[data-pane="list"]')
    assert (await _geometry(page))["sidebar"]["width"] >= 400
    await page.locator("#dialog-lists .row", has_text="Start over").click()  # opening a dialog shows it
    await expect(page.locator("#dh-title")).to_have_text("Start over")
    assert (await _geometry(page))["transcript"]["width"] >= 400
    await page.set_viewport_size({"width": 1280, "height": 820})
    await expect(page.locator("#suggestions .chip")).to_have_count(2)  # no question here: the chips are offered
    await expect(page.locator("#suggestions")).to_be_visible()
    await page.set_viewport_size({"width": 420, "height": 820})
    await page.click('#pane-tabs button[data-pane="side"]')
    side = await _geometry(page)
    assert side["rightbar"]["width"] >= 400
    await expect(page.locator("#q4h-list .question")).to_contain_text("Ship on Friday")
    await page.locator("#q4h-list .question a").click()  # a question opens its dialog at the answer form
    await expect(page.locator(".tellask.asking textarea")).to_be_focused()

    await page.set_viewport_size({"width": 360, "height": 740})  # the narrowest phone
    await _geometry(page)

    page = await _open(panel, 1280, f"dialog={ids['plan']}")
    await page.emulate_media(color_scheme="dark")
    background = await page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background != "rgb(246, 247, 249)", "the dark theme follows the system"
    await page.screenshot(path=str(IMAGES / "panel-1280-dark.png"))


async def test_titles_search_filters_groups_and_links_that_survive_a_reload(panel: Panel) -> None:
    ids = await populate(panel.engine)
    page = panel.page
    await page.goto(panel.url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    rows = page.locator("#dialog-lists .tree > li > .row .title")
    await expect(rows).to_have_text(["Plan the 1.2 release", "Start over"]), "titles from the first message"
    group = page.locator("#dialog-lists .group")
    await expect(group).to_have_count(1)
    await expect(group.locator(".group-head")).to_contain_text("Tree of Thoughts · 3 run(s)")
    await expect(group.locator(".row")).to_have_count(3)
    await expect(group.locator(".row").first).to_be_hidden(), "workflow runs are folded under their workflow"
    sub_head = page.locator("#dialog-lists .tree ul .row .head").first
    await expect(sub_head).to_have_text("please write the changelog for 1.2"), "no second @coder after the agent"
    await group.locator(".group-head").click()
    # Titles from each run's question; the runs are listed most recently active first, and they run at
    # once, so their order is not fixed.
    run_titles = group.locator(".row .title")
    await expect(run_titles).to_have_count(3)
    assert sorted(await run_titles.all_inner_texts()) == ["How do bees navigate?", "Is P equal to NP?", "Why is the sky blue?"]

    await page.fill("#search", "changelog")  # matches the plan's subdialog
    await expect(page.locator("#dialog-lists .tree > li > .row .title")).to_have_text(["Plan the 1.2 release"])
    await expect(page.locator("#dialog-lists .list-note")).to_contain_text("1 of 5")
    await page.fill("#search", "")
    await page.click("#filters summary")
    await page.select_option("#f-agent", "coder")
    await page.check("#f-asks")
    assert "agent=coder" in page.url and "asks=1" in page.url
    await page.reload()
    await expect(page.locator("#f-asks")).to_be_checked()
    await expect(page.locator("#dialog-lists .row .title")).to_have_text(["Plan the 1.2 release"])
    await page.click("#f-clear")
    await expect(page.locator("#dialog-lists .tree > li > .row")).to_have_count(2)
    await page.select_option("#f-state", "needs_you")  # the state filter: only the tree waiting for the user
    assert "state=needs_you" in page.url
    await expect(page.locator("#dialog-lists .tree > li > .row .title")).to_have_text(["Plan the 1.2 release"])
    await page.select_option("#f-state", "idle")
    await expect(page.locator("#dialog-lists .tree > li > .row .title")).to_contain_text(["Start over"])
    await page.select_option("#f-taskdoc", "tasks/t.tsk")
    assert "taskdoc=tasks" in page.url
    await page.click("#f-clear")
    await expect(page.locator("#dialog-lists .tree > li > .row")).to_have_count(2)

    await page.locator("#dialog-lists .row", has_text="Plan the 1.2 release").click()
    await expect(page.locator("#dh-title")).to_have_text("Plan the 1.2 release")
    assert f"dialog={ids['plan']}" in page.url
    await page.click("#dh-rename")
    rename = page.locator("dialog#rename-dialog")
    await rename.locator("input").fill("Release 1.2 on Friday")
    await rename.locator("button[type=submit]").click()
    await expect(page.locator("#dh-title")).to_have_text("Release 1.2 on Friday")
    await expect(page.locator("#dialog-lists .row.current .title")).to_have_text("Release 1.2 on Friday")
    await page.reload()
    await expect(page.locator("#dh-title")).to_have_text("Release 1.2 on Friday"), "the title is persisted"

    await page.goto(f"{panel.url.split('?')[0]}?dialog={ids['sub']}&root={ids['plan']}")
    await expect(page.locator("#dh-agent")).to_have_text("@coder"), "a link to a subdialog survives a reload"
    await expect(page.locator("#dh-title")).to_have_text("please write the changelog for 1.2")

    await page.goto(f"{panel.url.split('?')[0]}?dialog={ids['course']}")
    await expect(page.locator("#course-label")).to_have_text("Course 2 / 2")
    await page.click("#course-prev")
    await expect(page.locator("#course-label")).to_have_text("Course 1 / 2")
    assert "course=1" in page.url
    call = page.locator("details.func", has_text="clear_mind")
    await call.locator(".permalink").click()
    assert "call=" in page.url
    call_url = page.url
    await page.goto("about:blank")
    await page.goto(call_url)
    await expect(page.locator("#course-label")).to_have_text("Course 1 / 2"), "course and call site survive a reload"
    await expect(page.locator("details.func.highlight")).to_contain_text("clear_mind")

    await page.goto(f"{panel.url.split('?')[0]}?dialog={ids['plan']}&question={ids['question']}")
    await expect(page.locator(".tellask.asking textarea")).to_be_focused()
    await expect(page.locator("#answer-target")).to_have_value(ids["question"])
    await page.go_back()
    await expect(page.locator("#course-label")).to_have_text("Course 1 / 2"), "Back returns to the call site"
