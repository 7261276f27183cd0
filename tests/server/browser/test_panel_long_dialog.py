"""A long dialog in the panel: it opens at its last page, scrolls back to its beginning page by page,
and a link to an old call loads the page around it.

The bug this pins: the panel asked for the whole course at once, and past ~1,660 turns the daemon closed
the socket ("fell 20001 frames behind"); the reconnecting panel asked again and hit the same wall forever.
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_kit import ARTIFACTS
from long_dialog import served_long_dialog
from playwright.async_api import expect
from server_kit import TOKEN, ServeFactory

TURNS = 1200


async def _scroll_to_top(page: Any) -> None:
    await page.eval_on_selector("#transcript", "el => { el.scrollTop = 0; el.dispatchEvent(new Event('scroll')); }")


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_a_long_dialog_scrolls_to_its_beginning_and_a_deep_link_loads_its_page(
    serve: ServeFactory, browser: Any
) -> None:
    served, dialog, call_ids = await served_long_dialog(serve, TURNS)
    base = f"http://127.0.0.1:{served.client.server.port}"
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(f"{base}/?auth={TOKEN}&dialog={dialog['selfId']}")
    await expect(page.locator("#dh-agent")).to_have_text("@lead", timeout=20_000)
    earlier = page.locator("#transcript .load-earlier")
    await expect(earlier).to_be_visible(timeout=30_000)
    prompts = page.locator("#transcript .bubble.user")
    await expect(page.locator("#transcript .bubble.user").last).to_contain_text("think and tool", timeout=30_000)
    first_page = await prompts.count()
    assert 0 < first_page < TURNS // 4, "it opens at the last page, not the whole course"
    ARTIFACTS.mkdir(exist_ok=True)
    for width in (420, 900, 1280):
        await page.set_viewport_size({"width": width, "height": 800})
        await page.screenshot(path=str(ARTIFACTS / f"long-dialog-last-page-{width}.png"))

    pages = 1
    while await earlier.count():  # the reader scrolls up: each time at the top, the page before loads
        shown = await prompts.count()
        await _scroll_to_top(page)
        await page.wait_for_function(
            "n => document.querySelectorAll('#transcript .bubble.user').length > n"
            " || !document.querySelector('#transcript .load-earlier')",
            arg=shown,
        )
        pages += 1
    assert pages > 3, "it came page by page"
    course = served.engine.get_dialog(dialog["rootId"]).files.course(1).read_text(encoding="utf-8")
    assert await prompts.count() == course.count('"type":"human_text_record"'), "every prompt once, none twice"
    await expect(prompts.first).to_contain_text("hello")
    await _scroll_to_top(page)  # a prepended page keeps the reader's place: the beginning is just above
    first_in_view = await prompts.first.evaluate(
        "el => { const r = el.getBoundingClientRect(), t = document.querySelector('#transcript').getBoundingClientRect();"
        " return r.bottom > t.top && r.top < t.bottom; }"
    )
    assert first_in_view, "the beginning is on screen"
    await page.screenshot(path=str(ARTIFACTS / "long-dialog-beginning.png"))

    # a deep link to an old call: the page around it loads and the call is brought into view
    old_call = call_ids[3]
    linked = await context.new_page()
    linked.on("pageerror", lambda error: errors.append(str(error)))
    await linked.goto(f"{base}/?dialog={dialog['selfId']}&call={old_call}")
    block = linked.locator(f'[data-func-id="{old_call}"]')
    await expect(block).to_have_class(_highlight(), timeout=60_000)
    await expect(block).to_be_in_viewport()
    assert await linked.locator("#transcript .bubble.user").count() < TURNS // 4, "only the page around it"
    await linked.screenshot(path=str(ARTIFACTS / "long-dialog-deep-link.png"))
    await context.close()
    assert errors == []


def _highlight() -> Any:
    import re

    return re.compile(r"\bhighlight\b")
