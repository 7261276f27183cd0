"""Workflow runs: Python code asks teammates as subdialogs of a root that never calls an LLM."""

from __future__ import annotations

import asyncio

import pytest
from helpers import generations, records

from dominds.driver.engine import EngineError
from dominds.store.course_records import HumanTextRecord, SubdialogCreatedRecord, TeammateResponseRecord


async def test_workflow_steps_are_subdialogs_with_recorded_answers(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [
            {"agent": "coder", "contains": "plan A", "response": "A looks fine.", "usage": {"input_tokens": 7, "output_tokens": 3}},
            {"agent": "researcher", "contains": "plan A", "response": "Sources agree.", "usage": {"input_tokens": 5, "output_tokens": 2}},
        ]
    )
    run = engine.start_workflow_run("test-flow", "lead", "tasks/t.tsk", "Is plan A sound?")
    run.note("round 1")
    coder, researcher = await asyncio.gather(
        run.ask("coder", "Review plan A", headline="review"),
        run.ask("researcher", "Check plan A", headline="check"),
    )
    assert (coder.text, researcher.text) == ("A looks fine.", "Sources agree.") and coder.ok
    root = run.root
    assert generations(root) == 0, "the workflow root never calls an LLM"
    assert len([r for r in records(root) if isinstance(r, SubdialogCreatedRecord)]) == 2
    assert len([r for r in records(root) if isinstance(r, TeammateResponseRecord)]) == 2
    assert any(isinstance(r, HumanTextRecord) and r.content == "round 1" for r in records(root))
    assert engine.usage_totals(root.root_id)["total"]["inputTokens"] == 12
    await engine.wait_idle()
    assert root.latest.run_state.kind == "idle"
    with pytest.raises(EngineError):
        engine.submit_user_message(root, "hello")


async def test_a_timed_out_step_declares_its_subdialog_dead(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([{"agent": "coder", "contains": "slow", "response": "x " * 500, "chunk_chars": 2, "delay_ms": 5}])
    run = engine.start_workflow_run("test-flow", "lead", "tasks/t.tsk", "slow")
    with pytest.raises(asyncio.TimeoutError):
        await run.ask("coder", "slow work", timeout=0.1)
    await engine.wait_idle()
    [sub_id] = engine.store.subdialog_ids("run", run.root_id)
    assert engine.get_dialog(run.root_id, sub_id).latest.run_state.kind == "dead"
    assert not run.root.pending
