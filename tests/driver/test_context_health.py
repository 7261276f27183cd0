"""Context health's own remediation: after five critical generations the runtime starts a new course.

Bug: the new course's first prompt told the model its messages "were cleared to give you a clear mind",
the words of the ``clear_mind`` tool it never called, so it had no idea why its context was gone. Now the
prompt says the context stayed past its critical level and the runtime started the course.
"""

from __future__ import annotations

from helpers import sayings

from dominds.driver.health import CRITICAL_COUNTDOWN
from dominds.store.course_records import CourseStartRecord, HumanTextRecord

CRITICAL_USAGE = {"input_tokens": 190_000, "output_tokens": 10}
"""Over 90 % of the test model's 200,000-token window: the critical level."""


async def test_five_critical_generations_start_a_new_course_that_says_why(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([
        {"agent": "lead", "contains": "This is course #2", "response": "Starting over."},
        *({"agent": "lead", "message": f"step {n}", "response": f"did {n}", "usage": CRITICAL_USAGE}
          for n in range(1, CRITICAL_COUNTDOWN + 1)),
    ])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    for n in range(1, CRITICAL_COUNTDOWN + 1):
        engine.submit_user_message(root, f"step {n}")
        await engine.wait_idle()
        assert root.latest.current_course == (2 if n == CRITICAL_COUNTDOWN else 1), f"after step {n}"
    [start] = [r for r in root.files.read_course(2) if isinstance(r, CourseStartRecord)]
    assert start.reason == "context_health"
    [prompt] = [r.content for r in root.files.read_course(2) if isinstance(r, HumanTextRecord)]
    assert "context" in prompt and "critical" in prompt and "clear mind" not in prompt, prompt
    assert "reminders and the Taskdoc" in prompt
    assert sayings(root) == ["Starting over."]


async def test_clear_mind_still_says_it_was_the_agents_own_choice(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([
        {"agent": "lead", "message": "go", "stream": [{"func_call": {"name": "clear_mind", "arguments": {}}}]},
        {"agent": "lead", "role": "tool", "contains": "new course", "response": "Clearing."},
        {"agent": "lead", "contains": "This is course #2", "response": "Fresh."},
    ])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go")
    await engine.wait_idle()
    [prompt] = [r.content for r in root.files.read_course(2) if isinstance(r, HumanTextRecord)]
    assert "clear_mind" in prompt and "critical" not in prompt, prompt
