"""A ToT run cut by a crash is resumed, on a real `dominds serve` process SIGKILLed mid-run.

Bug (issue 36, item 9): a run the kill cut read ``interrupted`` and that was all: nothing could resume it
(``POST /api/tot/runs/{id}/resume`` was a 404), so every thought generated and scored before the crash
was lost and a new run paid for them again. Now the run is resumed as a new run that walks the saved
tree: what was generated and scored before the cut is reused, and the roles are asked only from where
it stopped. The second daemon's script would answer the decomposer and the first layer differently
(traps): the resumed tree shows they were not asked again.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from chromium import CHROMIUM, CHROMIUM_PRESENT, launched_chromium
from cli.test_cli_kit import Daemon, wait_until
from tot_wf_kit import DECOMPOSITION, USAGE, candidates, json_reply, votes, write_workspace
from tot_wf_kit import daemon_call as call

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM_PRESENT, reason=f"{CHROMIUM} is not installed")]

PUZZLE = "4 9 10 13"
SETTINGS = {"problem": PUZZLE, "branching": 1, "candidates": 2}
"""b=1, k=2 with the default independent scoring: one evaluator call per candidate."""

BEFORE_THE_CUT = [
    json_reply("tot-decomposer", "decompose_task", DECOMPOSITION, **USAGE),
    json_reply("tot-generator", '"id": "root"', candidates("13 - 9 = 4 (left: 4 4 10)", "9 + 4 = 13 (left: 10 13 13)"), **USAGE),
    json_reply("tot-evaluator", "(left: 4 4 10)", votes(("node_1", 10, "sure")), **USAGE),
    json_reply("tot-evaluator", "(left: 10 13 13)", votes(("node_2", 0, "impossible")), **USAGE),
    # layer 2 is being generated when the daemon is killed (minutes at this pace); the kill never waits
    {"agent": "tot-generator", "contains": '"id": "node_1"', "response": "x " * 5000, "chunk_chars": 2, "delay_ms": 50},
]
AFTER_THE_CUT = [
    # traps: a resumed run that decomposed again or regenerated layer 1 would show these
    json_reply("tot-decomposer", "decompose_task", {**DECOMPOSITION, "depth_estimate": 1}, **USAGE),
    json_reply("tot-generator", '"id": "root"', candidates("13 + 10 = 23 (left: 4 9 23)", "4 + 9 = 13 (left: 10 13 13)"), **USAGE),
    json_reply("tot-generator", '"id": "node_1"', candidates("10 - 4 = 6 (left: 4 6)", "4 * 4 = 16 (left: 10 16)"), **USAGE),
    json_reply("tot-generator", '"id": "node_1_1"', candidates("4 * 6 = 24 (left: 24)", "6 - 4 = 2 (left: 2)"), **USAGE),
    json_reply("tot-evaluator", "(left: 4 6)", votes(("node_1_1", 10, "sure")), **USAGE),
    json_reply("tot-evaluator", "(left: 10 16)", votes(("node_1_2", 0, "impossible")), **USAGE),
    json_reply("tot-evaluator", "(left: 24)", votes(("node_1_1_1", 10, "sure")), **USAGE),
    json_reply("tot-evaluator", "(left: 2)", votes(("node_1_1_2", 0, "impossible")), **USAGE),
    {
        "agent": "tot-synthesizer",
        "contains": "synthesize_solution",
        "response": '```json\n{"answer": "(10 - (13 - 9)) * 4 = 24", "reasoning_trace": ["13-9=4", "10-4=6", "6*4=24"], '
        '"confidence": 0.9, "verification": {"is_valid": true}}\n```',
        **USAGE,
    },
]


def _record(ws: Path, root_id: str) -> dict[str, Any]:
    path = ws / ".dialogs" / "run" / root_id / "tot-run.json"
    return json.loads(path.read_text()) if path.exists() else {}


async def test_a_run_cut_by_a_kill_is_resumed_from_its_saved_tree(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_workspace(ws, BEFORE_THE_CUT)
    first = Daemon(ws)
    try:
        status, cut = call(first, "POST", "/api/tot/runs", SETTINGS)
        assert status == 201, cut
        wait_until(lambda: len(_record(ws, cut["rootId"]).get("layers", [])) == 1, timeout=90)  # layer 1 is on disk
    finally:
        first.stop(signal.SIGKILL)
    before = _record(ws, cut["rootId"])["tree"]["nodes"]
    assert before["node_1"]["evaluation"]["score"] == 10 and before["node_2"]["status"] == "pruned"

    write_workspace(ws, AFTER_THE_CUT)
    with Daemon(ws) as second:
        assert call(second, "GET", f"/api/tot/runs/{cut['runId']}")[1]["status"] == "interrupted"
        assert call(second, "POST", "/api/tot/runs/tot-20250101-000000-nosuch/resume")[0] == 404
        async with launched_chromium() as browser:  # the cut run's page offers Resume, which goes on from its tree
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.add_init_script("localStorage.setItem('dominds.uiLanguage', 'en')")
            await page.goto(f"{second.http}/tot?run={cut['runId']}&auth={second.token}")
            await page.wait_for_selector("#status.interrupted", timeout=20_000)
            assert "Resume goes on from it" in (await page.text_content("#outcome") or "")
            await page.click("#resume")
            await page.wait_for_selector("#status.completed", timeout=90_000)
            new_id = await page.evaluate("new URL(location.href).searchParams.get('run')")
            assert new_id != cut["runId"] and f"resumed from {cut['runId']}" in (await page.text_content("#meta") or "")
            assert await page.locator("#resume").is_hidden() and errors == []
        resumed = {"runId": new_id}
        status, done = call(second, "GET", f"/api/tot/runs/{new_id}")
        assert status == 200, done
        assert done["status"] == "completed" and done["solved"], done
        assert done["solution"]["answer"] == "(10 - (13 - 9)) * 4 = 24"
        assert done["resumedFrom"] == cut["runId"] and done["settings"]["max_depth"] == 3, "the cut run's settings, not a new decomposition's"
        nodes = done["tree"]["nodes"]
        for node_id in ("node_1", "node_2"):  # the work before the crash, kept as it was
            assert {k: nodes[node_id][k] for k in ("content", "evaluation")} == {k: before[node_id][k] for k in ("content", "evaluation")}
        assert nodes["node_1_1_1"]["content"] == "4 * 6 = 24 (left: 24)"
        assert done["stats"]["llm_calls"] == 6, "only layers 2 and 3 were asked (2 generations, 4 scorings)"
        assert [layer["depth"] for layer in done["layers"]] == [1, 2, 3], "the replayed layer is reported too"

        again = call(second, "POST", f"/api/tot/runs/{cut['runId']}/resume")
        assert again[0] == 409 and resumed["runId"] in again[1]["error"], "a run is resumed once"
        finished = call(second, "POST", f"/api/tot/runs/{resumed['runId']}/resume")
        assert finished[0] == 409 and "completed" in finished[1]["error"]
        assert call(second, "GET", f"/api/tot/runs/{cut['runId']}")[1]["resumedAs"] == resumed["runId"]
