"""Which tellask calls run and which are refused with a note the model reads (``driver/tellask_exec.py``).

Each refusal's wording is asserted whole: a module-wide mutation sample found every refusal but two could
be removed or sent down another branch (its text changed) with every test green.
"""

from __future__ import annotations

from helpers import records, sayings

from dominds.store.course_records import SubdialogCreatedRecord, TeammateCallResultRecord


def _notes(dialog) -> list[str]:  # type: ignore[no-untyped-def]
    """The notes a dialog got for refused calls, without their `[Dominds note] ` prefix."""
    prefix = "[Dominds note] "
    return [
        r.result.removeprefix(prefix) for r in records(dialog) if isinstance(r, TeammateCallResultRecord) and r.status == "failed"
    ]


def _created(dialog) -> list[str]:  # type: ignore[no-untyped-def]
    return [r.target_agent_id for r in records(dialog) if isinstance(r, SubdialogCreatedRecord)]


async def test_asking_back_from_a_root_dialog_is_refused_with_a_note(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [
            {"agent": "lead", "message": "go", "response": "!?@tellasker Which language?\n"},
            {"agent": "lead", "contains": "a root dialog has none", "response": "I will ask the human instead."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go")
    await engine.wait_idle()
    assert _notes(root) == [
        "`!?@tellasker` asks back the dialog that gave you your task; a root dialog has none. Ask `!?@human`."
    ]
    assert sayings(root)[-1] == "I will ask the human instead."
    assert not root.pending and not root.q4h and not _created(root)


async def test_an_ask_back_with_a_session_is_refused_with_a_note(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [
            {"agent": "lead", "message": "delegate", "response": "!?@coder write the parser\n"},
            {"agent": "coder", "contains": "write the parser", "response": "!?@tellasker !tellaskSession lang Which language?\n"},
            {"agent": "coder", "contains": "cannot carry", "response": "Parser written in Python."},
            {"agent": "lead", "contains": "Parser written", "response": "Done."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    [sub_id] = engine.store.subdialog_ids("run", root.root_id)
    sub = engine.get_dialog(root.root_id, sub_id)
    assert _notes(sub) == ["`!?@tellasker` cannot carry `!tellaskSession`: it always goes to your current tellasker."]
    assert not root.latest.inbound_tellask_backs and sayings(root)[-1] == "Done."


async def test_fresh_boots_reasoning_is_refused_when_fbr_effort_is_0(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [
            {"agent": "lead", "message": "think", "response": "!?@self Is the plan sound?\n"},
            {"agent": "lead", "contains": "is disabled for you", "response": "Thinking alone: sound."},
        ],
        fbr_effort=0,
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "think")
    await engine.wait_idle()
    assert _notes(root) == ["Fresh Boots Reasoning (`!?@self`) is disabled for you (fbr_effort is 0)."]
    assert not _created(root) and sayings(root)[-1] == "Thinking alone: sound."


async def test_a_collective_call_naming_an_unknown_member_is_not_sent(make_engine) -> None:  # type: ignore[no-untyped-def]
    """The unknown member is named second, a known one third: the check covers every mention after the
    first, and only the unknown one is listed."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "both", "response": "!?@coder @ghost @researcher review the plan\n"},
            {"agent": "lead", "contains": "names unknown members", "response": "Fixing the names."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "both")
    await engine.wait_idle()
    assert _notes(root) == ["this collective tellask names unknown members (@ghost); nothing was sent."]
    assert not _created(root) and sayings(root)[-1] == "Fixing the names."


async def test_a_call_to_one_member_that_mentions_others_is_sent(make_engine) -> None:  # type: ignore[no-untyped-def]
    """An unknown name beside one addressee is part of the question (``ask @ghost``), and ``@human`` beside
    teammates is not an unknown member: both calls go out, with no note."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "one", "response": "!?@coder ask @ghost about the parser\n"},
            {"agent": "coder", "contains": "about the parser", "response": "Ghost says: use Rust."},
            {"agent": "lead", "contains": "use Rust", "response": "Noted."},
            {"agent": "lead", "message": "two", "response": "!?@coder @researcher @human review the plan\n"},
            {"agent": "coder", "contains": "review the plan", "response": "Code view: ok."},
            {"agent": "researcher", "contains": "review the plan", "response": "Facts view: ok."},
            {"agent": "lead", "contains": "provided response", "response": "Both agree."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "one")
    await engine.wait_idle()
    engine.submit_user_message(root, "two")
    await engine.wait_idle()
    assert _notes(root) == []
    assert sorted(_created(root)) == ["coder", "coder", "researcher"]
    assert sayings(root)[-1] == "Both agree."


async def test_naming_the_caller_from_a_subdialog_is_an_ask_back(make_engine) -> None:  # type: ignore[no-untyped-def]
    """``!?@lead`` from the subdialog lead called (no session) asks lead back (TYPE A), as ``@tellasker``
    does: no new subdialog of lead is made. With a session it is a TYPE B call to a new lead subdialog."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "delegate", "response": "!?@coder write the parser\n"},
            {"agent": "coder", "contains": "write the parser", "response": "!?@lead Which language?\n"},
            {"agent": "lead", "contains": "Which language?", "response": "Use Python."},
            {"agent": "coder", "contains": "Use Python.", "response": "!?@lead !tellaskSession review Review it?\n"},
            {"agent": "lead", "contains": "Review it?", "response": "Looks fine."},
            {"agent": "coder", "contains": "Looks fine.", "response": "Parser written in Python."},
            {"agent": "lead", "contains": "Parser written", "response": "Done."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    coder_id = next(i for i in engine.store.subdialog_ids("run", root.root_id) if engine.get_dialog(root.root_id, i).agent_id == "coder")
    coder = engine.get_dialog(root.root_id, coder_id)
    assert _created(coder) == ["lead"], "only the session call makes a subdialog"
    assert list(root.files.read_registry()) == ["lead!review"], "TYPE B sessions are registered at the root"
    assert sayings(root)[-1] == "Done." and not root.latest.inbound_tellask_backs and not coder.pending


async def test_addressing_yourself_in_a_collective_is_sent_with_a_note(make_engine) -> None:  # type: ignore[no-untyped-def]
    """The note goes with a text-form call that names its own agent, and with no other call."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "plain", "response": "!?@coder review the plan\n"},
            {"agent": "coder", "contains": "review the plan", "response": "Code view: ok."},
            {"agent": "lead", "contains": "Code view", "response": "Good."},
            {"agent": "lead", "message": "both", "response": "!?@lead @coder check the tests\n"},
            {"agent": "lead", "contains": "provided response", "response": "Both checked."},
            {"agent": "lead", "contains": "check the tests", "response": "Lead view: ok."},
            {"agent": "coder", "contains": "check the tests", "response": "Coder view: ok."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "plain")
    await engine.wait_idle()
    assert _notes(root) == []
    engine.submit_user_message(root, "both")
    await engine.wait_idle()
    notes = [r.result for r in records(root) if isinstance(r, TeammateCallResultRecord) and "addressed yourself" in r.result]
    assert notes == ["[Dominds note] you addressed yourself (@lead); it was sent, but use `!?@self` for fresh-boots reasoning."]
    assert sorted(_created(root)) == ["coder", "coder", "lead"]
    assert sayings(root)[-1] == "Both checked."
