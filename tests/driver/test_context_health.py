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


# ---------------------------------------------------------------- notices told to the model (issue 32)

CAUTION_USAGE = {"input_tokens": 120_000, "output_tokens": 10}
"""Over the default optimal 100,000 tokens, under 90 % of the window: the caution level."""


def notices(root) -> list[str]:  # type: ignore[no-untyped-def]
    return [r.content for r in root.files.read_course(root.latest.current_course)
            if isinstance(r, HumanTextRecord) and r.origin == "system"]  # fmt: skip


async def test_caution_is_told_once_then_every_ten_generations(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Bug: the panel showed the level but the model was never told its context was filling."""
    from dominds.driver.pressure import CAUTION_EVERY

    engine = await make_engine(
        [{"agent": "lead", "message": f"step {n}", "response": f"did {n}", "usage": CAUTION_USAGE} for n in range(1, 13)]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    told_after: list[int] = []
    for n in range(1, 13):
        engine.submit_user_message(root, f"step {n}")
        await engine.wait_idle()
        if len(notices(root)) > len(told_after):
            told_after.append(n)
    assert told_after == [1, 1 + CAUTION_EVERY]
    first = notices(root)[0]
    assert first.startswith("[Context caution] Your context is 60% full (120000 of 200000 tokens")
    assert "`append_progress`" in first, "a main dialog is told to write the Taskdoc"
    course = root.files.read_course(1)
    kinds = [(type(r).__name__, getattr(r, "origin", None)) for r in course]
    at = kinds.index(("HumanTextRecord", "system"))
    assert kinds[at - 1][0] == "GenFinishRecord", "recorded after the generation it measures"


async def test_critical_notices_count_down_then_the_new_course_starts(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([
        {"agent": "lead", "contains": "This is course #2", "response": "Starting over."},
        *({"agent": "lead", "message": f"step {n}", "response": f"did {n}", "usage": CRITICAL_USAGE}
          for n in range(1, CRITICAL_COUNTDOWN + 1)),
    ])  # fmt: skip
    root = engine.create_dialog("lead", "tasks/t.tsk")
    for n in range(1, CRITICAL_COUNTDOWN + 1):
        engine.submit_user_message(root, f"step {n}")
        await engine.wait_idle()
    course = root.files.read_course(1)
    told = [r.content for r in course if isinstance(r, HumanTextRecord) and r.origin == "system"]
    assert [t.split("]")[0] for t in told] == [
        f"[Context critical: {left} generation(s) left" for left in range(CRITICAL_COUNTDOWN - 1, 0, -1)
    ]
    prompts = [r.content for r in course if isinstance(r, HumanTextRecord)]
    for n in range(1, CRITICAL_COUNTDOWN):  # each notice right after the generation it follows
        assert prompts.index(f"step {n}") + 1 == prompts.index(told[n - 1])
    assert "`clear_mind`" in told[0] and "Taskdoc (`append_progress`" in told[0]
    assert root.latest.current_course == 2 and sayings(root) == ["Starting over."]


async def test_a_subdialog_is_told_to_write_reminders_not_the_taskdoc(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([
        {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
        {"agent": "coder", "contains": "build it", "response": "Built.", "usage": CAUTION_USAGE},
        {"agent": "lead", "contains": "provided response", "response": "Thanks."},
    ])  # fmt: skip
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    [sub] = [d for d in root.local.values() if d is not root]
    [told] = notices(sub)
    assert told.startswith("[Context caution]") and "`add_reminder`" in told and "append_progress" not in told


async def test_an_oversized_tool_result_is_replaced_by_a_note_while_under_pressure(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A large result pushed into a nearly full prompt is what overflows it: the model gets a note
    asking for a smaller part; the whole result stays in the course (the panel shows it)."""
    from dominds.store.course_records import FuncResultRecord

    big = "row " * 5000  # 20,000 characters
    engine = await make_engine([
        {"agent": "lead", "message": "warm up", "response": "ok", "usage": CAUTION_USAGE},
        {"agent": "lead", "message": "read it", "stream": [
            {"func_call": {"name": "recall_taskdoc", "arguments": {"category": "notes", "selector": "big"}}}]},
        {"agent": "lead", "role": "tool", "contains": "Result not shown: 20", "response": "I will ask for less."},
        {"agent": "lead", "message": "read again", "stream": [
            {"func_call": {"name": "recall_taskdoc", "arguments": {"category": "notes", "selector": "big"}}}]},
        {"agent": "lead", "role": "tool", "contains": "row row", "response": "Got it all."},
    ])  # fmt: skip
    (tmp_path / "ws/tasks/t.tsk/notes").mkdir()
    (tmp_path / "ws/tasks/t.tsk/notes/big.md").write_text(big)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "warm up")
    await engine.wait_idle()
    engine.submit_user_message(root, "read it")
    await engine.wait_idle()
    assert sayings(root)[-1] == "I will ask for less."
    [result] = [r for r in root.files.read_course(1) if isinstance(r, FuncResultRecord)]
    assert big in result.content and result.context_note and "caution level (60% full)" in result.context_note
    # under no pressure (the last generation was small) a large result is given whole
    engine.submit_user_message(root, "read again")
    await engine.wait_idle()
    assert sayings(root)[-1] == "Got it all."


async def test_the_critical_countdown_goes_on_after_a_restart(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Bug: the critical streak lived in the engine's memory, so a daemon restart mid-countdown started it
    again from 4 (and a model restarted often enough never got its new course). Now the streak is read from
    the course's own generation records (each persisted before it is published), so the countdown goes on."""
    steps = [{"agent": "lead", "message": f"step {n}", "response": f"did {n}", "usage": CRITICAL_USAGE}
             for n in range(1, CRITICAL_COUNTDOWN + 1)]  # fmt: skip
    course_two = {"agent": "lead", "contains": "This is course #2", "response": "Starting over."}
    engine = await make_engine([course_two, *steps])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    for n in (1, 2):
        engine.submit_user_message(root, f"step {n}")
        await engine.wait_idle()
    await engine.close()  # the daemon goes away two generations into the countdown

    engine = await make_engine([], root=tmp_path / "ws")
    root = engine.get_dialog(root.root_id)
    for n in range(3, CRITICAL_COUNTDOWN + 1):
        engine.submit_user_message(root, f"step {n}")
        await engine.wait_idle()
    told = [r.content.split("]")[0] for r in root.files.read_course(1) if isinstance(r, HumanTextRecord) and r.origin == "system"]
    assert told == [f"[Context critical: {left} generation(s) left" for left in range(CRITICAL_COUNTDOWN - 1, 0, -1)]
    assert root.latest.current_course == 2 and sayings(root) == ["Starting over."]
