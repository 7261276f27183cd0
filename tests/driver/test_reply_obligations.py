"""Every tellask gets exactly its own reply: ask-back obligations under real-use conditions (issue 14).

An ask-back (TYPE A) is an obligation of the asked dialog, bound to (asker, callId). The asked dialog
serves its obligations one at a time; the reply is its final saying once the work it started while
serving that obligation has settled.
"""

from __future__ import annotations

import asyncio

from helpers import records, sayings

from dominds.store.course_records import SubdialogCreatedRecord, TeammateResponseRecord


def _responses(dialog) -> list[TeammateResponseRecord]:  # type: ignore[no-untyped-def]
    return [r for r in records(dialog) if isinstance(r, TeammateResponseRecord)]


def _sub_of(engine, root, agent: str):  # type: ignore[no-untyped-def]
    [created] = [
        r for r in records(root) if isinstance(r, SubdialogCreatedRecord) and r.target_agent_id == agent
    ]
    return engine.get_dialog(root.root_id, created.subdialog_id)


async def test_ask_back_answer_is_the_final_answer_not_an_intermediate_tellask(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Bug: when the caller's reply to an ask-back first tellasked a teammate, the asker received that
    intermediate ``!?@researcher …`` text instead of the caller's final answer."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "delegate", "response": "!?@coder write the parser\n"},
            {"agent": "coder", "contains": "write the parser", "response": "!?@tellasker Which language?\n"},
            {"agent": "lead", "contains": "Which language?", "response": "Let me check.\n!?@researcher which language do we use?\n"},
            {"agent": "researcher", "contains": "which language do we use", "response": "We use Rust."},
            {"agent": "lead", "contains": "We use Rust", "response": "Use Rust."},
            {"agent": "coder", "contains": "Use Rust.", "response": "Parser written in Rust."},
            {"agent": "lead", "contains": "Parser written", "response": "Done."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    coder = _sub_of(engine, root, "coder")
    [answer] = [r for r in _responses(coder) if r.call_type == "A"]
    assert answer.response == "Use Rust."
    assert sayings(coder)[-1] == "Parser written in Rust."
    assert sayings(root)[-1] == "Done."
    assert not root.latest.inbound_tellask_backs and not root.pending and not coder.pending


async def test_two_concurrent_ask_backs_each_get_their_own_answer(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Bug: two subdialogs asked the root back at once and both received the answer meant for the second."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "split", "response": "!?@coder part one\n\n!?@researcher part two\n"},
            {"agent": "coder", "contains": "part one", "response": "!?@tellasker Question one?\n"},
            {"agent": "researcher", "contains": "part two", "response": "!?@tellasker Question two?\n"},
            {"agent": "lead", "contains": "Question one?", "response": "Answer one."},
            {"agent": "lead", "contains": "Question two?", "response": "Answer two."},
            {"agent": "coder", "contains": "Answer one.", "response": "Coder done."},
            {"agent": "researcher", "contains": "Answer two.", "response": "Researcher done."},
            {"agent": "lead", "contains": "done.", "response": "All done."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "split")
    await engine.wait_idle()
    coder, researcher = _sub_of(engine, root, "coder"), _sub_of(engine, root, "researcher")
    assert [r.response for r in _responses(coder)] == ["Answer one."]
    assert [r.response for r in _responses(researcher)] == ["Answer two."]
    assert sorted(r.response for r in _responses(root)) == ["Coder done.", "Researcher done."]
    assert sayings(root)[-1] == "All done."


async def test_user_message_while_answering_an_ask_back_queues_behind_it(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Bug: a user message arriving while the root answered an ask-back became the asker's answer."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "delegate", "response": "!?@coder write the parser\n"},
            {"agent": "coder", "contains": "write the parser", "response": "!?@tellasker Which language?\n"},
            {"agent": "lead", "contains": "Which language?", "response": "Use Python.", "delay_ms": 40, "chunk_chars": 2},
            {"agent": "lead", "message": "how is it going?", "response": "Coder is on it."},
            {"agent": "coder", "contains": "Use Python.", "response": "Parser written."},
            {"agent": "lead", "contains": "Parser written", "response": "Done."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    for _ in range(500):
        if root.latest.generating and root.latest.inbound_tellask_backs:
            break
        await asyncio.sleep(0.01)
    assert root.latest.inbound_tellask_backs, "the ask-back reached the root"
    engine.submit_user_message(root, "how is it going?")
    await engine.wait_idle(timeout=30)
    coder = _sub_of(engine, root, "coder")
    [answer] = [r for r in _responses(coder) if r.call_type == "A"]
    assert answer.response == "Use Python."
    said = sayings(root)
    assert "Coder is on it." in said and said.index("Use Python.") < said.index("Coder is on it."), said
    assert not root.queue and not root.pending and not root.latest.inbound_tellask_backs


async def test_self_subdialog_that_calls_a_tool_still_answers(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Bug: a `!?@self` subdialog whose model called a tool failed as an "FBR violation" and its caller
    stayed blocked forever. The seed: `!?@self` is a fully capable subdialog of the same agent."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "think", "response": "!?@self Is the plan sound?\n"},
            {
                "agent": "lead",
                "contains": "Is the plan sound?",
                "stream": [{"func_call": {"name": "add_reminder", "arguments": {"content": "check the plan"}}}],
            },
            {"agent": "lead", "role": "tool", "contains": "", "response": "Yes, sound."},
            {"agent": "lead", "contains": "Yes, sound.", "response": "Confirmed."},
        ],
        fbr_effort=1,
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "think")
    await engine.wait_idle()
    [created] = [r for r in records(root) if isinstance(r, SubdialogCreatedRecord)]
    assert created.call_type == "C" and created.target_agent_id == "lead"
    sub = engine.get_dialog(root.root_id, created.subdialog_id)
    assert any(r.type == "func_result_record" for r in records(sub)), "the tool ran in the @self subdialog"
    assert [r.response for r in _responses(root)] == ["Yes, sound."]
    assert sayings(root)[-1] == "Confirmed." and not root.pending


async def test_self_with_a_session_is_one_subdialog_under_agent_bang_session(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Bug: `!?@self !tellaskSession fs` made fbr_effort subdialogs registered as `lead!fs.fbr-1..3`.
    The seed: one TYPE B subdialog of the same agent under the key `lead!fs` (fbr_effort is not used)."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "think", "response": "!?@self !tellaskSession fs weigh the options\n"},
            {"agent": "lead", "contains": "weigh the options", "response": "Option B."},
            {"agent": "lead", "contains": "Option B.", "response": "Going with B."},
        ],
        fbr_effort=3,
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "think")
    await engine.wait_idle()
    assert list(root.files.read_registry()) == ["lead!fs"]
    assert len(engine.store.subdialog_ids("run", root.root_id)) == 1
    assert sayings(root)[-1] == "Going with B."


async def test_self_nesting_is_capped_with_a_note(make_engine) -> None:  # type: ignore[no-untyped-def]
    """`!?@self` inside `!?@self` nests at most three levels; the fourth call gets a note, not a subdialog."""
    engine = await make_engine(
        [
            {"agent": "lead", "contains": "limit is 3", "response": "Stopping here: 42."},
            {"agent": "lead", "contains": "deeper", "response": "!?@self go deeper\n"},
            {"agent": "lead", "message": "think", "response": "!?@self go deeper\n"},
            {"agent": "lead", "contains": "42", "response": "The answer is 42."},
        ],
        fbr_effort=1,
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "think")
    await engine.wait_idle()
    assert len(engine.store.subdialog_ids("run", root.root_id)) == 3
    assert sayings(root)[-1] == "The answer is 42." and not root.pending


async def test_an_answer_queued_before_an_ask_back_is_not_taken_as_its_answer(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Bug found by the model-based test: the answer to an earlier question, queued before an ask-back was
    served, was consumed as part of serving it, and the asker received the reply to that answer."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "ask", "response": "!?@human Which colour?\n"},
            {"agent": "lead", "message": "delegate", "response": "!?@coder write the parser\n"},
            {"agent": "coder", "contains": "write the parser", "response": "!?@tellasker Which language?\n"},
            {"agent": "lead", "contains": "Which language?", "response": "Use Rust."},
            {"agent": "lead", "message": "blue", "response": "Blue it is."},
            {"agent": "coder", "contains": "Use Rust.", "response": "Parser written."},
            {"agent": "lead", "contains": "Parser written", "response": "Done."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "ask")
    await engine.wait_idle()
    engine.submit_user_message(root, "delegate")  # waits behind the question
    [question] = engine.q4h_state()
    engine.answer_question(question["id"], "blue")
    await engine.wait_idle()
    coder = _sub_of(engine, root, "coder")
    [answer] = [r for r in _responses(coder) if r.call_type == "A"]
    assert answer.response == "Use Rust."
    assert "Blue it is." in sayings(root) and not root.pending and not root.queue
