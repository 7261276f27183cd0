"""The panel's Stop on a main dialog that waits on a working subdialog (issue 30, "Stop stops everything").

Before: the Stop button was disabled while the main dialog waited on its subdialogs (only a dialog that
was itself generating could be stopped), and the engine's Stop of such a dialog stopped nothing: the
subdialog's ``shell_cmd sleep 30`` ran on. Now the button is enabled, the Stop reaches the subdialog
(its process is killed), the main dialog shows "interrupted", and Continue finishes the work.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml
from browser_kit import open_with_a_new_dialog
from cli.test_cli_kit import Daemon, write_workspace
from playwright.async_api import expect
from workspace_kit import team_yaml

from tests.processes import running

pytestmark = pytest.mark.browser


async def test_stop_on_a_main_dialog_waiting_on_a_subdialog_stops_its_tool_and_continue_finishes(
    tmp_path: Path, browser: Any
) -> None:
    ws = write_workspace(tmp_path / "ws")
    pidfile = tmp_path / "sleep.pid"
    team = team_yaml({"lead": "plans and delegates", "coder": "writes code"}, fbr_effort=1)
    team = team.replace("gofor: [writes code]}", "gofor: [writes code], toolsets: [os]}") + "shell_specialists: [coder]\n"
    (ws / ".minds" / "team.yaml").write_text(team)
    responses = [
        {"agent": "lead", "message": "delegate the sleeper", "response": "!?@coder please run the sleeper\n"},
        {
            "agent": "coder",
            "contains": "please run the sleeper",
            "stream": [{"func_call": {"name": "shell_cmd", "arguments": {"command": f"sleep 30 & echo $! > {pidfile}; wait"}}}],
        },
        {"agent": "coder", "role": "tool", "contains": "INTERRUPTED (user_stop)", "response": "The sleeper was stopped."},
        {"agent": "lead", "contains": "@coder provided response", "response": "Thanks, all settled."},
    ]
    (ws / ".minds" / "scripted" / "test.yaml").write_text(yaml.safe_dump({"responses": responses}, sort_keys=False))
    daemon = Daemon(ws)
    try:
        context, page = await open_with_a_new_dialog(browser, daemon.url)
        await page.fill("#input", "delegate the sleeper")
        await page.click("#send")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while not (pidfile.exists() and pidfile.read_text().strip()):
            assert loop.time() < deadline, "the subdialog's tool never started"
            await asyncio.sleep(0.05)
        pid = int(pidfile.read_text())
        await expect(page.locator("#stop")).to_be_enabled()
        await page.click("#stop")
        await expect(page.locator("#dh-state")).to_have_text("interrupted")
        deadline = loop.time() + 10  # far less than the tool's 30 s
        while running(pid):
            assert loop.time() < deadline, "the subdialog's tool outlived the Stop"
            await asyncio.sleep(0.05)
        await page.click("#ctl-resume")
        await expect(page.locator(".bubble.gen .md").last).to_contain_text("Thanks, all settled.", timeout=30_000)
        await context.close()
    finally:
        daemon.stop()
