"""Item 7 of issue 18 in real Chromium: the Taskdoc panel shows each section once, with its file, and edits it.

The bug: the panel showed the text the model sees (headings doubled, instructions to the model) and no
file paths. Now each section is shown once under its name with its path, and Edit replaces the file
atomically (the same rule as a hand edit: agents read the new text at their next step).
"""

from __future__ import annotations

import pytest
from browser_kit import Panel
from playwright.async_api import expect

pytestmark = pytest.mark.browser


async def test_the_taskdoc_panel_lists_sections_with_paths_and_edits_one(panel: Panel) -> None:
    page = panel.page
    package = panel.engine.rtws.root / "tasks" / "t.tsk"
    (package / "goals.md").write_text("# Goals\n\nShip the feature.\n")
    await page.goto(panel.url)
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")
    goals = page.locator('#taskdoc-body .td-section[data-key="goals"]')
    await expect(goals.locator("h3")).to_have_text("Goals")
    await expect(goals.locator(".td-file")).to_have_text("tasks/t.tsk/goals.md")
    await expect(goals.locator(".td-content")).to_have_text("Ship the feature.")
    await expect(page.locator("#taskdoc-body h1, #taskdoc-body h2")).to_have_count(0), "no doubled headings"
    await expect(page.locator("#taskdoc-body")).not_to_contain_text("change_mind")

    await goals.locator(".td-edit").click()
    editor = page.locator("dialog#taskdoc-edit-dialog textarea")
    await expect(editor).to_have_value("# Goals\n\nShip the feature.\n")
    await editor.fill("# Goals\n\nShip **1.2** on Friday.\n")
    await panel.screenshot("taskdoc-edit")
    await editor.press("Control+Enter")
    await expect(page.locator("dialog#taskdoc-edit-dialog")).to_have_count(0)
    await expect(goals.locator(".td-content strong")).to_have_text("1.2")
    assert (package / "goals.md").read_text() == "# Goals\n\nShip **1.2** on Friday.\n"

    await goals.locator(".td-edit").click()  # the editor holds this text...
    await expect(editor).to_have_value("# Goals\n\nShip **1.2** on Friday.\n")
    (package / "goals.md").write_text("Changed by hand.\n")  # ...and meanwhile someone else writes the file
    await editor.fill("my stale edit")
    await editor.press("Control+Enter")
    await expect(page.locator("dialog#taskdoc-edit-dialog .form-error")).to_contain_text("changed since you opened it")
    await page.locator("dialog#taskdoc-edit-dialog .modal-cancel").click()
    assert (package / "goals.md").read_text() == "Changed by hand.\n"
    await expect(goals.locator(".td-content")).to_have_text("Changed by hand.")  # the watcher refreshed it
    # Chromium logs every 4xx response; this one was the expected refusal
    panel.errors[:] = [e for e in panel.errors if "status of 409" not in e]
