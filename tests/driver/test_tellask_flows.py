"""Tellask execution end to end: TYPE A/B/C, @self, collective calls, Q4H, revival exactly once."""

from __future__ import annotations

from helpers import generations, records, sayings

from dominds.store.course_records import SubdialogCreatedRecord, TeammateResponseRecord

DELEGATE = [
    {"agent": "lead", "message": "delegate", "response": "Asking coder.\n!?@coder please implement X\n"},
    {"agent": "coder", "contains": "please implement X", "response": "Implemented X."},
    {"agent": "lead", "contains": "@coder provided response", "response": "Thanks, X is done."},
]


async def test_type_c_answer_revives_the_root_exactly_once(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(DELEGATE)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    created = [r for r in records(root) if isinstance(r, SubdialogCreatedRecord)]
    assert len(created) == 1 and created[0].call_type == "C"
    sub = engine.get_dialog(root.root_id, created[0].subdialog_id)
    assert sayings(sub) == ["Implemented X."]
    responses = [r for r in records(root) if isinstance(r, TeammateResponseRecord)]
    assert len(responses) == 1 and "Implemented X." in responses[0].result
    assert sayings(root) == ["Asking coder.\n!?@coder please implement X\n", "Thanks, X is done."]
    assert generations(root) == 2, "one generation for the delegation, exactly one revival"
    assert not root.files.subdlg_yaml.exists()
    assert sub.files.read_response().response == "Implemented X."  # type: ignore[union-attr]
    assert root.latest.run_state.kind == "idle" and sub.latest.run_state.kind == "idle"


async def test_type_c_always_creates_a_fresh_subdialog(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(DELEGATE)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    for _ in range(2):
        engine.submit_user_message(root, "delegate")
        await engine.wait_idle()
    ids = {r.subdialog_id for r in records(root) if isinstance(r, SubdialogCreatedRecord)}
    assert len(ids) == 2


async def test_type_b_identical_concurrent_calls_create_one_subdialog(make_engine) -> None:  # type: ignore[no-untyped-def]
    call = "!?@researcher !tellaskSession market look into the market\n"
    engine = await make_engine(
        [
            {"agent": "lead", "message": "research", "response": f"{call}\n{call}"},
            {"agent": "researcher", "contains": "look into the market", "response": "Market is big.", "delay_ms": 5},
            {"agent": "lead", "contains": "provided response", "response": "Noted."},
            {"agent": "lead", "message": "again", "response": call},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "research")
    await engine.wait_idle()
    assert list(root.type_b) == ["researcher!market"]
    assert len(engine.store.subdialog_ids("run", root.root_id)) == 1
    registry = root.files.read_registry()
    sub_id = registry["researcher!market"].subdialog_id
    engine.submit_user_message(root, "again")
    await engine.wait_idle()
    assert engine.store.subdialog_ids("run", root.root_id) == [sub_id], "a repeat call resumes the session"
    sub = engine.get_dialog(root.root_id, sub_id)
    assert len([r for r in records(sub) if r.type == "human_text_record"]) >= 2
    assert root.files.read_registry()["researcher!market"].last_accessed is not None
    assert not root.pending


async def test_q4h_suspends_and_answer_resumes(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [
            {"agent": "lead", "message": "paint", "response": "!?@human Which colour?\n!?Red or blue.\n"},
            {"agent": "lead", "message": "blue", "response": "Painting it blue."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "paint")
    await engine.wait_idle()
    assert root.latest.run_state.kind == "blocked" and root.latest.run_state.reason == "needs_human_input"
    [question] = engine.q4h_state()
    assert question["tellaskHead"] == "@human Which colour?" and question["bodyContent"] == "Red or blue."
    assert root.files.q4h_yaml.exists()
    engine.answer_question(question["id"], "blue")
    await engine.wait_idle()
    assert not root.files.q4h_yaml.exists()
    assert sayings(root)[-1] == "Painting it blue."
    assert engine.q4h_state() == []


async def test_q4h_in_subdialog_holds_the_caller_until_answered(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [
            {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
            {"agent": "coder", "contains": "build it", "response": "!?@human Which database?\n"},
            {"agent": "coder", "message": "postgres", "response": "Built on postgres."},
            {"agent": "lead", "contains": "provided response", "response": "Great."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    [question] = engine.q4h_state()
    sub = engine.get_dialog(question["rootId"], question["selfId"])
    assert not sub.is_root and root.latest.run_state.reason == "waiting_for_subdialogs"
    assert not [r for r in records(root) if isinstance(r, TeammateResponseRecord)], "not supplied while asking"
    engine.answer_question(question["id"], "postgres")
    await engine.wait_idle()
    [response] = [r for r in records(root) if isinstance(r, TeammateResponseRecord)]
    assert response.response == "Built on postgres."
    assert sayings(root)[-1] == "Great." and generations(root) == 2


async def test_type_a_ask_back_goes_to_the_current_caller(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [
            {"agent": "lead", "message": "delegate", "response": "!?@coder write the parser\n"},
            {"agent": "coder", "contains": "write the parser", "response": "!?@tellasker Which language?\n"},
            {"agent": "lead", "contains": "TellaskBack", "response": "Use Python."},
            {"agent": "coder", "contains": "Use Python.", "response": "Parser written in Python."},
            {"agent": "lead", "contains": "Parser written", "response": "Done."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    [sub_id] = engine.store.subdialog_ids("run", root.root_id)
    sub = engine.get_dialog(root.root_id, sub_id)
    assert sayings(sub) == ["!?@tellasker Which language?\n", "Parser written in Python."]
    root_responses = [r for r in records(root) if isinstance(r, TeammateResponseRecord)]
    assert [r.response for r in root_responses] == ["Parser written in Python."], "the ask-back answer is not a response"
    assert sayings(root)[-1] == "Done." and not root.latest.inbound_tellask_backs


async def test_collective_and_fbr_calls_fan_out(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [
            {"agent": "lead", "message": "both", "response": "!?@coder @researcher review the plan\n"},
            {"agent": "coder", "contains": "review the plan", "response": "Code view: ok."},
            {"agent": "researcher", "contains": "review the plan", "response": "Facts view: ok."},
            {"agent": "lead", "contains": "provided response", "response": "Both agree."},
            {"agent": "lead", "message": "think", "response": "!?@self Is the plan sound?\n"},
            {"agent": "lead", "contains": "Fresh Boots Reasoning", "response": "Yes, sound."},
            {"agent": "lead", "contains": "FBR @self sideline response", "response": "Confirmed."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "both")
    await engine.wait_idle()
    targets = sorted(r.target_agent_id for r in records(root) if isinstance(r, SubdialogCreatedRecord))
    assert targets == ["coder", "researcher"]
    assert sayings(root)[-1] == "Both agree." and generations(root) == 2
    engine.submit_user_message(root, "think")
    await engine.wait_idle()
    fbr = [r for r in records(root) if isinstance(r, SubdialogCreatedRecord) and r.target_agent_id == "lead"]
    assert len(fbr) == 2, "fbr_effort: 2"
    subs = [engine.get_dialog(root.root_id, r.subdialog_id) for r in fbr]
    assert all(s.meta.fbr for s in subs)
    assert sayings(root)[-1] == "Confirmed."
