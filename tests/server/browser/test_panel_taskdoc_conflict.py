"""Issue 36 item 14 in real Chromium: a Taskdoc edit that meets a newer text offers a way out.

The bug: when an agent or a person wrote the section while the user edited it, the save was refused
with a message and nothing else: no way to see what changed, to load the new text, or to keep a copy
of what the user typed. Now the editor shows a line diff, copies the user's text, loads the current
text (keeping the user's beside it), or saves over it knowingly.
Screenshots: taskdoc-conflict-<width>.png (docs/images/ with DOMINDS_UPDATE_SCREENSHOTS=1).
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_kit import Panel
from chromium import screenshot_dir
from playwright.async_api import expect

pytestmark = pytest.mark.browser
IMAGES = screenshot_dir()  # docs/images/ with DOMINDS_UPDATE_SCREENSHOTS=1


async def test_a_conflicting_taskdoc_edit_offers_a_diff_a_copy_a_reload_and_an_overwrite(panel: Panel) -> None:
    page: Any = panel.page
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    goals_file = panel.engine.rtws.root / "tasks" / "t.tsk" / "goals.md"
    goals_file.write_text("Ship the feature.\nBy Friday.\n")
    await page.goto(panel.url)
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")
    goals = page.locator('#taskdoc-body .td-section[data-key="goals"]')
    await expect(goals.locator(".td-content")).to_contain_text("By Friday.")

    editor_dialog = page.locator("dialog#taskdoc-edit-dialog")
    editor = editor_dialog.locator("textarea.modal-input").first
    await goals.locator(".td-edit").click()
    await editor.fill("Ship the feature.\nBy Monday.\n")
    goals_file.write_text("Ship the feature.\nBy Thursday.\n")  # an agent wrote it meanwhile
    await editor.press("Control+Enter")
    await expect(editor_dialog.locator(".form-error")).to_contain_text("changed since you opened it")
    diff = editor_dialog.locator(".td-diff")
    await expect(diff.locator(".del")).to_have_text("- By Thursday.\n")
    await expect(diff.locator(".ins")).to_have_text("+ By Monday.\n")
    await expect(diff.locator(".same").first).to_have_text("  Ship the feature.\n")
    for width in (420, 1280):
        await page.set_viewport_size({"width": width, "height": 800})
        await page.screenshot(path=str(IMAGES / f"taskdoc-conflict-{width}.png"))
    await page.set_viewport_size({"width": 1280, "height": 800})

    await editor_dialog.locator(".td-copy-mine").click()
    assert await page.evaluate("() => navigator.clipboard.readText()") == "Ship the feature.\nBy Monday.\n"

    await editor_dialog.locator(".td-load-current").click()
    await expect(editor).to_have_value("Ship the feature.\nBy Thursday.\n")
    await expect(editor_dialog.locator("textarea.td-mine")).to_have_value("Ship the feature.\nBy Monday.\n")
    await editor.fill("Ship the feature.\nBy Thursday, or Monday.\n")
    await editor.press("Control+Enter")  # saved over the text it loaded
    await expect(editor_dialog).to_have_count(0)
    assert goals_file.read_text() == "Ship the feature.\nBy Thursday, or Monday.\n"

    await goals.locator(".td-edit").click()  # a second conflict, settled by saving over it
    await editor.fill("Mine wins.\n")
    goals_file.write_text("Theirs.\n")
    await editor.press("Control+Enter")
    await expect(editor_dialog.locator(".td-diff .del")).to_have_text("- Theirs.\n")
    await editor_dialog.locator(".td-overwrite").click()
    await expect(editor_dialog).to_have_count(0)
    assert goals_file.read_text() == "Mine wins.\n"
    await expect(goals.locator(".td-content")).to_have_text("Mine wins.")
    # Chromium logs every 4xx response; these were the expected refusals
    panel.errors[:] = [e for e in panel.errors if "status of 409" not in e]
