"""With nothing configured, a debate over SSE compares positions with WordLlama and every result names it.

The bug: the default similarity was word overlap, the documented MiniLM extra fell back to it silently,
and nothing a client received said how positions had been compared. Here no comparer is injected and
the workspace has no debate.yaml: the daemon's own default must pick WordLlama (installed with the
`embeddings` extra, which the test environment has) and name it in the stream's first and last events,
in each host decision with the thresholds calibrated for it, in the saved state and in the §6.2 object.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp import web
from test_debate_kit import critic_answer, parse_sse, planner_answer, reporter_answer, step, write_workspace

from dominds.driver.engine import Engine
from dominds.server import keys
from dominds.workflows.debate.web import add_routes

WORDLLAMA = "embedding:wordllama:l2_supercat-256"


async def test_the_default_comparer_is_wordllama_and_every_result_names_it(tmp_path: Path, aiohttp_client: Any) -> None:
    rtws = write_workspace(tmp_path / "ws", [
        step("planner", 1, planner_answer(1, 0), max_rounds=1),
        step("critic", 1, critic_answer(1, 10), max_rounds=1),
        step("reporter", 1, reporter_answer(), max_rounds=1),
    ])  # fmt: skip
    assert not (rtws.minds_dir / "debate.yaml").exists(), "nothing configured: the default decides"
    engine = Engine(rtws)
    await engine.start()
    try:
        app = web.Application()
        app[keys.ENGINE] = engine
        add_routes(app)  # no comparer injected
        client = await aiohttp_client(app)
        resp = await client.post("/api/multi-agent", json={"message": "How do I prepare for IELTS?", "maxRounds": 1})
        assert resp.status == 200
        events, _, done_last = parse_sse(await resp.text())
        assert done_last
        start, final = events[0], events[-1]
        assert start["type"] == "session_start" and start["similarityMethod"] == WORDLLAMA
        assert start["similarityNote"] is None and start["warnings"] == [], "no fallback, nothing to warn about"
        [decision] = [e for e in events if e["type"] == "host_decision"]
        assert decision["similarity_method"] == WORDLLAMA
        assert decision["thresholds"]["basis"] == "calibrated:wordllama:latin", "English positions, WordLlama's own numbers"
        assert not any(e["type"] == "tool_error" for e in events), "the embedder ran; no word-overlap fallback"
        assert final["type"] == "final_report" and final["similarityMethod"] == WORDLLAMA

        sid = start["sessionId"]
        saved = await (await client.get(f"/api/multi-agent/{sid}")).json()
        assert saved["similarity_method"] == WORDLLAMA and saved["similarity_note"] is None
        session = await (await client.get(f"/api/multi-agent/{sid}/session")).json()
        assert session["similarityMethod"] == WORDLLAMA
        assert session["rounds"][0]["hostDecision"]["similarity_method"] == WORDLLAMA
    finally:
        await engine.close()
