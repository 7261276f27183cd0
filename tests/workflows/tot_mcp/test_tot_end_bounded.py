"""`tot_end` on a large tree, through the MCP SDK's client (in-process).

The bug: `tot_end` had no size bound. 155 nodes with 18,003-character findings gave an 8.34 M-character
answer (each finding about three times: the JSON tree, the Markdown, the paths), which an MCP client
took 98 s to take in. Now it answers like `tot_status` (texts clipped, the tree cut to a budget) and
keeps the full report in files, offered as `tot://reports/<sessionId>.md|json` resources.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_tot_server import Tot, in_process, only_text

FINDINGS = "evidence " * 2000 + "end."  # 18,004 characters


def _read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


async def _wide_deep_tree(t: Tot) -> str:
    """5 DRILL roots, each DRILL node with 2 children, for 5 rounds: 155 nodes; the 80 leaves DEAD but two VALID."""
    sid = str((await t.ok("tot_start", query="Why does it leak?", minRoots=5))["sessionId"])
    level = [(f"R1.{c}", None) for c in "ABCDE"]
    for round_ in range(1, 6):
        for start in range(0, len(level), 5):
            batch = level[start : start + 5]
            nodes = [{"id": i, "parent": p, "title": f"idea {i}", "plannedAction": f"check {i}"} for i, p in batch]
            await t.ok("tot_propose", sessionId=sid, nodes=nodes)
            states = ["DRILL" if round_ < 5 else ("VALID" if i in ("R5.Axxxx", "R5.Byyyy") else "DEAD") for i, _ in batch]
            results = [{"nodeId": i, "state": s, "findings": f"{i} {FINDINGS}"} for (i, _), s in zip(batch, states, strict=True)]
            await t.ok("tot_commit", sessionId=sid, results=results)
        level = [(f"R{round_ + 1}.{i.split('.')[1]}{c}", i) for i, _ in level for c in "xy"]
    return sid


async def test_tot_end_of_a_large_tree_is_bounded_and_the_full_report_is_a_resource(tmp_path: Path) -> None:
    async with in_process(tmp_path) as t:
        sid = await _wide_deep_tree(t)
        result = await t.client.call_tool("tot_end", {"sessionId": sid})
        text = only_text(result)
        report: dict[str, Any] = json.loads(text)
        assert report["totalNodes"] == 155 and report["counts"]["VALID"] == 2
        assert len(text) < 40_000, f"{len(text):,} characters"
        assert [p["path"][-1] for p in report["validPaths"]] == ["R5.Axxxx", "R5.Byyyy"]
        assert "(18,013 characters; the full report holds all of it)" in report["validPaths"][0]["findings"]
        assert "more nodes not shown" in report["tree"]
        full = report["fullReport"]
        assert _read(full["markdown"]).count(FINDINGS) == 155 + 2, "every node's findings, and the paths'"
        assert json.loads(_read(full["json"]))["tree"][0]["findings"] == f"R1.A {FINDINGS}"
        listed = [str(r.uri) for r in (await t.client.list_resources()).resources]
        assert listed == [f"tot://reports/{sid}.json", f"tot://reports/{sid}.md"] == sorted(full["resources"])
        read = await t.client.read_resource(f"tot://reports/{sid}.md")
        assert read.contents[0].text == _read(full["markdown"])
        assert await t.ok("tot_end", sessionId=sid) == report, "ending again repeats the answer"
        sessions = await t.ok("tot_status")
        assert sessions["unreadable"] == [] and sessions["total"] == 1, "report files are not taken for sessions"
