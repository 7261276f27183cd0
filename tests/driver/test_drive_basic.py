"""A root dialog driven by a user message, function calls, reminders, malformed tellasks."""

from __future__ import annotations

from helpers import generations, records, sayings, types

from dominds.store.course_records import FuncResultRecord, HumanTextRecord, TeammateCallResultRecord


async def test_one_turn_is_recorded_and_published(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([{"message": "hello", "stream": [{"thinking": "A greeting."}, {"saying": "Hi there!"}]}])
    events: list[dict] = []
    engine.pubchan.subscribe(events.append, wants_all=True)
    root = engine.create_dialog(None, "tasks/t.tsk")
    engine.submit_user_message(root, "hello")
    await engine.wait_idle()
    assert types(root) == [
        "course_start",
        "gen_start_record",
        "human_text_record",
        "agent_thought_record",
        "agent_words_record",
        "gen_finish_record",
    ]
    assert sayings(root) == ["Hi there!"]
    assert root.files.read_latest().run_state.kind == "idle"  # type: ignore[union-attr]
    seqs = [e["seq"] for e in events if e.get("dialog", {}).get("selfId") == root.self_id]
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs))
    kinds = [e["type"] for e in events]
    assert "markdown_chunk_evt" in kinds and "thinking_chunk_evt" in kinds and "dlg_run_state_evt" in kinds


async def test_unmatched_message_stops_the_dialog_with_the_entry_to_add(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Bug: an unmatched message was answered with a "Scripted response not found" text, which flowed on as
    the agent's answer (workflows scored it, callers used it). It is an error the user sees now."""
    engine = await make_engine([])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "something unexpected")
    await engine.wait_idle()
    assert sayings(root) == []
    state = root.files.read_latest().run_state  # type: ignore[union-attr]
    assert (state.kind, state.reason) == ("interrupted", "system_stop")
    assert state.detail == (
        'no scripted response for @lead: nothing in .minds/scripted/test.yaml matches its last user message '
        '"something unexpected"; add an entry under `responses:` such as '
        '{role: user, agent: lead, message: "something unexpected", response: "…"}'
    )


async def test_function_call_recorded_before_and_after(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [
            {"message": "remember", "stream": [{"func_call": {"name": "add_reminder", "arguments": {"content": "buy milk"}}}]},
            {"role": "tool", "contains": "Reminder #1 added", "response": "Noted."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "remember")
    await engine.wait_idle()
    kinds = types(root)
    assert kinds.index("func_call_record") < kinds.index("func_result_record")
    assert [r.content for r in root.files.read_reminders().reminders] == ["buy milk"]
    assert sayings(root) == ["Noted."]
    assert generations(root) == 2


async def test_bad_tool_arguments_reach_the_model_as_an_error(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [
            {"message": "bad", "stream": [{"func_call": {"name": "delete_reminder", "arguments": {"reminder_no": "x"}}}]},
            {"role": "tool", "contains": "Invalid arguments", "response": "Oops."},
            {"message": "unknown", "stream": [{"func_call": {"name": "no_such_tool", "arguments": {}}}]},
            {"role": "tool", "contains": "not found", "response": "No tool."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "bad")
    await engine.wait_idle()
    engine.submit_user_message(root, "unknown")
    await engine.wait_idle()
    results = [r for r in records(root) if isinstance(r, FuncResultRecord)]
    assert all(r.is_error for r in results) and len(results) == 2
    assert sayings(root) == ["Oops.", "No tool."]


async def test_malformed_and_unknown_tellasks_reach_the_model_as_notes(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [
            {"message": "go", "response": "!?oops no mention\n\n!?@nobody do it\n"},
            {"contains": "is not a teammate", "response": "Understood, fixing."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go")
    await engine.wait_idle()
    notes = [r for r in records(root) if isinstance(r, TeammateCallResultRecord)]
    assert [n.status for n in notes] == ["failed", "failed"]
    assert "missing_mention_prefix" in notes[0].result and "@nobody is not a teammate" in notes[1].result
    assert sayings(root)[-1] == "Understood, fixing."
    assert not root.pending and not root.q4h


async def test_messages_are_durable_and_never_duplicated(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([{"message": "one", "response": "1"}, {"message": "two", "response": "2"}])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "one", msg_id="m1")
    engine.submit_user_message(root, "two", msg_id="m2")
    assert [p.msg_id for p in root.files.read_queue()] == ["m1", "m2"]
    await engine.wait_idle()
    humans = [r.msg_id for r in records(root) if isinstance(r, HumanTextRecord)]
    assert humans == ["m1", "m2"]
    # queued together, they are answered together (issue 30: one considered answer, each msgId kept)
    assert sayings(root) == ["2"]
