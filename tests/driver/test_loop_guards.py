"""Loop guards (issue 32), through the engine and the scripted provider.

Bugs: a model calling the same tool with the same arguments after every result ran 200 generations
(to the runaway guard), each a full-context request; a model addressing a teammate that does not exist
was re-prompted 21 times.
"""

from __future__ import annotations

from helpers import generations, records

from dominds.driver.loop_guard import MAX_REFUSED_TELLASK_ROUNDS, TOOL_LOOP_NOTICE_AT, TOOL_LOOP_STOP_AT
from dominds.store.course_records import GenFinishRecord, HumanTextRecord, RunMarkerRecord

SAME_CALL = [{"func_call": {"name": "recall_taskdoc", "arguments": {"selector": "plan", "category": "notes"}}}]


async def test_six_identical_tool_calls_stop_the_dialog_with_the_reason(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([
        {"agent": "lead", "message": "go", "stream": SAME_CALL},
        {"agent": "lead", "role": "tool", "contains": "has no section", "stream": SAME_CALL},
        {"agent": "lead", "contains": "[Loop] You called", "stream": SAME_CALL},
    ])  # fmt: skip
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go")
    await engine.wait_idle()
    assert generations(root) == TOOL_LOOP_STOP_AT, "stopped at the sixth identical round, not at 200"
    course = records(root)
    notices = [r for r in course if isinstance(r, HumanTextRecord) and r.origin == "system"]
    [notice] = notices
    finished_before = sum(isinstance(r, GenFinishRecord) for r in course[: course.index(notice)])
    assert finished_before == TOOL_LOOP_NOTICE_AT and "`recall_taskdoc`" in notice.content
    state = root.latest.run_state
    assert state.kind == "interrupted" and state.detail is not None
    assert state.detail.startswith("stopped: the same tool call (`recall_taskdoc`) with the same arguments returned")
    assert any(isinstance(r, RunMarkerRecord) and r.kind == "interrupted" for r in course)


async def test_a_changing_result_is_not_a_loop(make_engine) -> None:  # type: ignore[no-untyped-def]
    """add_reminder with the same arguments returns a different result each time (its position): not stopped."""
    add = [{"func_call": {"name": "add_reminder", "arguments": {"content": "x"}}}]
    engine = await make_engine([
        {"agent": "lead", "message": "go", "stream": add},
        {"agent": "lead", "role": "tool", "contains": "#7 added", "response": "Enough."},
        {"agent": "lead", "role": "tool", "contains": "added", "stream": add},
    ])  # fmt: skip
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go")
    await engine.wait_idle()
    assert generations(root) == 8 and root.latest.run_state.kind == "idle"


async def test_an_unknown_teammate_is_re_prompted_a_capped_number_of_times(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([
        {"agent": "lead", "message": "ask", "response": "!?@nobody do it\n"},
        {"agent": "lead", "contains": "Dominds note", "response": "!?@nobody do it please\n"},
    ])  # fmt: skip
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "ask")
    await engine.wait_idle()
    assert generations(root) == MAX_REFUSED_TELLASK_ROUNDS
    state = root.latest.run_state
    assert state.kind == "interrupted" and state.detail is not None
    assert state.detail.startswith(f"stopped: {MAX_REFUSED_TELLASK_ROUNDS} generations in a row addressed tellasks")
    assert "nobody" in state.detail


async def test_a_malformed_headline_is_re_prompted_a_capped_number_of_times(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([
        {"agent": "lead", "message": "ask", "response": "!?@coder !tellaskSession a !tellaskSession b do it\n"},
        {"agent": "lead", "contains": "Dominds note", "response": "!?@coder !tellaskSession a !tellaskSession b again\n"},
    ])  # fmt: skip
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "ask")
    await engine.wait_idle()
    assert generations(root) == MAX_REFUSED_TELLASK_ROUNDS
    detail = root.latest.run_state.detail or ""
    assert root.latest.run_state.kind == "interrupted" and "malformed tellask" in detail, detail


CLEAR = [{"func_call": {"name": "clear_mind", "arguments": {}}}]


def _courses_told_of_their_clears(root) -> list[int]:  # type: ignore[no-untyped-def]
    """The courses whose first recorded prompt carries the loop notice about clearing the mind (the course the
    stop began has its prompt still queued)."""
    return [
        n for n in range(1, root.latest.current_course + 1)
        if "[Loop] You cleared your mind" in next((r.content for r in root.files.read_course(n) if isinstance(r, HumanTextRecord)), "")
    ]  # fmt: skip


async def test_an_agent_clearing_its_mind_in_a_loop_is_told_then_stopped(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Bug: a model that called clear_mind at the start of every course ran 200 courses (to the runaway
    guard), each a request: every call's result names another course, and each course began the count anew."""
    engine = await make_engine([
        {"agent": "lead", "message": "go", "stream": CLEAR},
        {"agent": "lead", "contains": "course #", "stream": CLEAR},
    ])  # fmt: skip
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go")
    await engine.wait_idle()
    # the course of the person's message, six in which the agent did nothing but clear its mind, and the
    # course the sixth clear began (the call took effect, as its result said; Continue works from there)
    assert root.latest.current_course == 2 + TOOL_LOOP_STOP_AT
    state = root.latest.run_state
    assert state.kind == "interrupted" and state.detail is not None
    assert state.detail.startswith(f"stopped: the agent cleared its mind {TOOL_LOOP_STOP_AT} times in a row")
    assert _courses_told_of_their_clears(root) == [2 + TOOL_LOOP_NOTICE_AT], "told once, in the course after the third idle clear"


async def test_a_course_with_work_in_it_starts_the_clear_count_again(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([
        {"agent": "lead", "message": "go", "stream": CLEAR},
        {"agent": "lead", "contains": "course #5 ", "stream": [{"saying": "Some work first."}, *CLEAR]},
        {"agent": "lead", "contains": "course #", "stream": CLEAR},
    ])  # fmt: skip
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go")
    await engine.wait_idle()
    # three idle courses (2-4), one with a saying (5), then six idle ones (6-11), and the one the last began
    assert root.latest.current_course == 6 + TOOL_LOOP_STOP_AT
    assert root.latest.run_state.kind == "interrupted"
    assert _courses_told_of_their_clears(root) == [5, 9]
