"""A solver attempt that fails in an unforeseen way is a failed slide, not a lost task (issue 30 item 3).

Before: an attempt ended by an exception other than the expected ones (here a ``RecursionError`` from a
solver answer nested 100,000 deep) ended its asyncio task with an exception nothing read: no
``solver.failed`` was sent, the slide stayed "running" in every view, and the event loop later reported
"Task exception was never retrieved".
"""

from __future__ import annotations

from typing import Any

from ps_kit import per_task, solver, world

SOLVE_ORDER = ["solver.start", "solver.completed"]


async def test_an_attempt_that_raises_unexpectedly_fails_its_slide_and_nothing_is_left_unretrieved(
    stray_task_errors: list[dict[str, Any]], serve: Any
) -> None:
    served = await serve(world([1, 2], extra=[solver(2, response="[" * 100_000)]))
    sock = await served.session()
    await sock.ask()
    events = await sock.finish()
    assert per_task(events, 2) == ["solver.start", "solver.failed"] and per_task(events, 1) == SOLVE_ORDER
    failed = next(e for e in events if e["event"] == "solver.failed")
    assert "RecursionError" in failed["content"]["error"]
    assert events[-1]["event"] == "agent.final_answer"
