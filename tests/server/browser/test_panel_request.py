"""The Request view in real Chromium (issue 35, item 2): each reply links to what the model saw, the request
it sent (figures, system prompt, messages, tools, parameters), the same body the API serves byte for byte.
Screenshots at 420 and 1280 px (test-artifacts/)."""

from __future__ import annotations

import json

import pytest
from browser_kit import ARTIFACTS, Panel
from playwright.async_api import expect

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", [1280, 420])
async def test_each_reply_opens_the_request_it_sent(panel: Panel, width: int) -> None:
    page = panel.page
    await page.set_viewport_size({"width": width, "height": 800})
    await page.goto(panel.url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")
    await page.fill("#input", "hello")
    await page.click("#send")
    await expect(page.locator(".bubble.gen .md").last).to_contain_text("Hello there!")
    await expect(page.locator(".bubble.gen.streaming")).to_have_count(0)
    root_id = await page.locator("#dh-id").text_content()
    link = page.locator(".bubble.gen .request-gen").last
    await expect(link).to_have_text("Request")
    async with page.context.expect_page() as opened:
        await link.click()
    view = await opened.value
    view.on("pageerror", lambda error: panel.errors.append(str(error)))
    await view.set_viewport_size({"width": width, "height": 800})
    await expect(view.locator("#rq-heading")).to_have_text("Request of reply #1")
    await expect(view.locator("dd[data-figure=model]")).to_have_text("scripted/test (scripted)")
    await expect(view.locator("dd[data-figure=attempts]")).to_have_text("1 (0 retries)")
    await expect(view.locator("dd[data-figure=tokens]")).to_contain_text(" out")
    await expect(view.locator("#rq-system .rq-item summary")).to_contain_text("system")
    messages = view.locator("#rq-messages .rq-message")
    await expect(messages.last.locator("summary")).to_contain_text("hello")
    await expect(view.locator("#rq-tools h2")).to_contain_text("Tools (")
    await expect(view.locator("#rq-error")).to_be_hidden()
    await messages.last.locator("summary").click()
    await view.screenshot(path=str(ARTIFACTS / f"request-{width}.png"), full_page=True)

    # What the page shows is what the API serves as the body, byte for byte.
    whole = await view.locator("#rq-json .rq-whole pre").text_content()
    raw = await view.evaluate(
        "async (path) => await (await fetch(path, {credentials: 'same-origin'})).text()",
        f"/api/dialogs/{root_id}/requests/1/body?course=1",
    )
    assert json.loads(whole or "") == json.loads(raw)
    assert json.loads(raw)["messages"][-1]["content"] == "hello", "the message the reply answers"
    back = await view.locator("#rq-back").get_attribute("href")
    assert back is not None and f"dialog={root_id}" in back
    scroll_width = await view.evaluate("document.documentElement.scrollWidth")
    assert scroll_width <= width, "the Request view fits the screen's width"
    await view.close()
