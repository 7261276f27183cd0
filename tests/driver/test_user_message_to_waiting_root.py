"""A user can talk to a main dialog while its teammates work (issue 30, DESIGN §4.3's exception).

Before: the lead delegated to the coder, the coder asked the human a question, and the user's "how is it
going?" to the lead sat queued until every subdialog had replied (forever, if the question was not
noticed); a user message waited behind every ask-back served meanwhile (26 of them, 60 s); two quick
messages got two generations, the first ignoring the second.
"""

from __future__ import annotations

from deadlines import until
from helpers import records, sayings

from dominds.dialog.model import Dialog
from dominds.store.course_records import GenStartRecord, HumanTextRecord, TeammateResponseRecord

DELEGATION = [
    {"agent": "lead", "message": "write the parser", "response": "!?@coder write the parser\n"},
    {"agent": "coder", "contains": "write the parser", "response": "!?@human Which language?\n"},
    {"agent": "coder", "contains": "Rust", "response": "Parser written in Rust."},
    {"agent": "lead", "contains": "Parser written", "response": "Done: the parser is written."},
]


def _prompts(dialog: Dialog) -> list[HumanTextRecord]:
    return [r for r in records(dialog) if isinstance(r, HumanTextRecord)]



async def test_the_root_answers_a_user_while_its_subdialog_waits_on_a_question(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [*DELEGATION, {"agent": "lead", "message": "how is it going?", "response": "The coder waits for your answer."}]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "write the parser")
    await engine.wait_idle()
    [question] = engine.q4h_state()
    assert root.latest.run_state.reason == "waiting_for_subdialogs"
    engine.submit_user_message(root, "how is it going?")
    await engine.wait_idle()
    assert sayings(root)[-1] == "The coder waits for your answer."
    assert [q["id"] for q in engine.q4h_state()] == [question["id"]], "the question stays pending"
    assert root.pending and root.latest.run_state.kind == "blocked"
    # then the answer, the subdialog's reply and the root's revival, as before
    engine.answer_question(question["id"], "Rust")
    await engine.wait_idle()
    assert sayings(root)[-1] == "Done: the parser is written."
    assert not root.pending and root.latest.run_state.kind == "idle"
    replies = [r for r in records(root) if isinstance(r, TeammateResponseRecord)]
    assert [r.response for r in replies] == ["Parser written in Rust."]


async def test_the_root_runs_its_tools_and_tellasks_more_while_answering(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [
            *DELEGATION,
            {
                "agent": "lead",
                "message": "also check the docs",
                "stream": [
                    {"saying": "Noting it."},
                    {"func_call": {"name": "add_reminder", "arguments": {"content": "check the docs"}}},
                ],
            },
            {"agent": "lead", "role": "tool", "regex": ".", "response": "!?@researcher check the docs\n"},
            {"agent": "researcher", "contains": "check the docs", "response": "The docs are fine."},
            {"agent": "lead", "contains": "The docs are fine", "response": "Docs checked."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "write the parser")
    await engine.wait_idle()
    [question] = engine.q4h_state()
    engine.submit_user_message(root, "also check the docs")
    await engine.wait_idle()
    assert [r.content for r in root.files.read_reminders().reminders] == ["check the docs"]
    assert sayings(root)[-2:] == ["Noting it.", "!?@researcher check the docs\n"]
    # the researcher has replied; as today, the root is revived once every subdialog has replied
    assert [p.agent_id for p in root.pending] == ["coder"] and root.latest.run_state.kind == "blocked"
    engine.answer_question(question["id"], "Rust")
    await engine.wait_idle()
    assert sayings(root)[-1] == "Done: the parser is written." and not root.pending
    replies = [r.response for r in records(root) if isinstance(r, TeammateResponseRecord)]
    assert replies == ["The docs are fine.", "Parser written in Rust."]


async def test_ask_backs_and_a_user_message_are_served_in_arrival_order(make_engine) -> None:  # type: ignore[no-untyped-def]
    """A user message queued between two ask-backs is served between them (it used to wait behind every
    ask-back, and then behind the subdialogs' replies)."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "go", "response": "!?@coder part one\n\n!?@researcher part two\n"},
            {"agent": "coder", "contains": "part one", "response": "!?@human May I ask one?\n"},
            {"agent": "coder", "contains": "yes", "response": "!?@tellasker ask one?\n"},
            {"agent": "researcher", "contains": "part two", "response": "!?@human May I ask two?\n"},
            {"agent": "researcher", "contains": "yes", "response": "!?@tellasker ask two?\n"},
            {"agent": "lead", "contains": "ask one?", "response": "answer one"},
            {"agent": "lead", "contains": "ask two?", "response": "answer two"},
            {"agent": "lead", "message": "status?", "response": "all in hand"},
            {"agent": "coder", "contains": "answer one", "response": "one done"},
            {"agent": "researcher", "contains": "answer two", "response": "two done"},
            {"agent": "lead", "contains": "done", "response": "both done"},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go", msg_id="m-go")
    await engine.wait_idle()
    asked = {("one" if "ask one" in q["tellaskHead"] else "two"): q["id"] for q in engine.q4h_state()}
    async with root.drive_mutex:  # the lead is busy elsewhere while these three arrive
        engine.answer_question(asked["one"], "yes")
        await until(lambda: len(root.latest.inbound_tellask_backs) == 1, seconds=20.0)
        engine.submit_user_message(root, "status?", msg_id="m-status")
        engine.answer_question(asked["two"], "yes")
        await until(lambda: len(root.latest.inbound_tellask_backs) == 2, seconds=20.0)
        assert [p.origin for p in list(root.queue)] == ["tellask_back", "user", "tellask_back"]
    await engine.wait_idle()
    served = [r.origin for r in _prompts(root)]
    assert served == ["user", "tellask_back", "user", "tellask_back"], served
    assert sayings(root)[-1] == "both done"


async def test_two_quick_user_messages_get_one_considered_answer(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([{"agent": "lead", "regex": r"^second", "response": "Answered both."}])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    async with root.drive_mutex:  # both arrive before the lead can start
        engine.submit_user_message(root, "first question", msg_id="m-1")
        engine.submit_user_message(root, "second question", msg_id="m-2")
    await engine.wait_idle()
    prompts = _prompts(root)
    assert [p.msg_id for p in prompts] == ["m-1", "m-2"], "each message keeps its msgId in the course"
    assert len({p.genseq for p in prompts}) == 1
    assert sum(isinstance(r, GenStartRecord) for r in records(root)) == 1
    assert sayings(root) == ["Answered both."]


async def test_a_reply_and_a_user_message_arriving_together_are_answered_in_one_generation(make_engine) -> None:  # type: ignore[no-untyped-def]
    """The documented order: the replies recorded before a generation starts come before the user message
    it consumes; that one generation answers the message with the replies in view (no separate revival)."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "delegate", "response": "!?@coder do it\n"},
            {"agent": "coder", "contains": "do it", "response": "!?@human Proceed?\n"},
            {"agent": "coder", "contains": "go ahead", "response": "It is done."},
            {"agent": "lead", "message": "and now?", "response": "The coder says it is done."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    generations = sum(isinstance(r, GenStartRecord) for r in records(root))
    async with root.drive_mutex:
        [question] = engine.q4h_state()
        engine.answer_question(question["id"], "go ahead")
        await until(lambda: not root.pending, seconds=20.0)
        engine.submit_user_message(root, "and now?")
    await engine.wait_idle()
    recs = records(root)
    assert sum(isinstance(r, GenStartRecord) for r in recs) == generations + 1
    kinds = [type(r).__name__ for r in recs if isinstance(r, (TeammateResponseRecord, HumanTextRecord))]
    assert kinds[-2:] == ["TeammateResponseRecord", "HumanTextRecord"]
    assert sayings(root)[-1] == "The coder says it is done."
