"""Round-trip every persisted record type through its file format."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from dominds.ids import now_iso
from dominds.store.course_records import (
    COURSE_RECORD_ADAPTER,
    AgentThoughtRecord,
    AgentWordsRecord,
    CourseStartRecord,
    FuncCallRecord,
    FuncResultRecord,
    GenFinishRecord,
    GenStartRecord,
    HumanTextRecord,
    McpSamplingRecord,
    RunMarkerRecord,
    SubdialogCreatedRecord,
    TeammateCallResultRecord,
    TeammateResponseRecord,
    TellaskCallRecord,
    Usage,
)
from dominds.store.errors import CorruptFileError
from dominds.store.fileio import append_record, load_model, read_course, save_model
from dominds.store.records import (
    Assignment,
    CallSiteRef,
    DialogMeta,
    HumanQuestion,
    InboundTellaskBack,
    LatestState,
    PendingSubdialog,
    Q4hFile,
    QueuedPrompt,
    Reminder,
    RemindersFile,
    RunState,
    SubdialogResponse,
    SubdlgFile,
)

TS = "2026-11-21T10:00:00.000+00:00"

STATE_RECORDS: list[tuple[str, BaseModel]] = [
    (
        "dialog.yaml",
        DialogMeta(
            id="0abc-1",
            root_id="0abc-0",
            agent_id="coder",
            task_doc_path="tasks/x.tsk",
            created_at=TS,
            supdialog_id="0abc-0",
            tellask_session="s.1",
            assignment_from_sup=Assignment(
                tellask_head="@coder do\n",
                tellask_body="body: with colon\n",
                origin_member_id="lead",
                caller_dialog_id="0abc-0",
                call_id="deadbeef",
                call_type="B",
                collective_targets=["coder", "researcher"],
            ),
        ),
    ),
    (
        "latest.yaml",
        LatestState(
            current_course=3,
            last_modified=TS,
            generating=True,
            needs_drive=True,
            run_state=RunState(kind="interrupted", reason="server_restart", detail="x"),
            queued_prompts=[QueuedPrompt(msg_id="m1", content="héllo\n!?@x", queued_at=TS, question_id="q")],
            inbound_tellask_backs=[InboundTellaskBack(from_dialog_id="s", call_id="c", tellask_head="@tellasker")],
        ),
    ),
    (
        "reminders.json",
        RemindersFile(reminders=[Reminder(id="rem-1", content="keep 中文", created_at=TS)], updated_at=TS),
    ),
    (
        "q4h.yaml",
        Q4hFile(
            questions=[
                HumanQuestion(
                    id="q4h-a-b",
                    tellask_head="@human ok?",
                    body_content="details",
                    asked_at=TS,
                    call_id="b",
                    call_site_ref=CallSiteRef(course=1, message_index=4),
                )
            ],
            updated_at=TS,
        ),
    ),
    (
        "subdlg.yaml",
        SubdlgFile(
            pending=[
                PendingSubdialog(
                    subdialog_id="s1",
                    agent_id="coder",
                    call_type="C",
                    tellask_head="@coder x",
                    tellask_body="y",
                    call_id="c1",
                    created_at=TS,
                )
            ],
            updated_at=TS,
        ),
    ),
    ("response.yaml", SubdialogResponse(call_id="c1", caller_dialog_id="r", response="42\n", completed_at=TS)),
]


@pytest.mark.parametrize(("name", "record"), STATE_RECORDS, ids=[n for n, _ in STATE_RECORDS])
def test_state_record_round_trip(tmp_path: Path, name: str, record: BaseModel) -> None:
    path = tmp_path / name
    save_model(path, record)
    loaded = load_model(path, type(record))
    assert loaded == record
    text = path.read_text()
    assert "v: 1" in text or '"v": 1' in text, "every state file carries its format version"


COURSE_RECORDS = [
    CourseStartRecord(ts=TS, course=2, reason="clear_mind"),
    HumanTextRecord(ts=TS, genseq=1, msg_id="m", content="hi\n", grammar="tellask", origin="user"),
    GenStartRecord(ts=TS, genseq=1),
    AgentThoughtRecord(ts=TS, genseq=1, content="hmm", provider_data={"signature": "sig"}),
    AgentWordsRecord(ts=TS, genseq=1, content="!?@coder go\n"),
    FuncCallRecord(ts=TS, genseq=1, id="t1", name="add_reminder", arguments={"content": "x"}),
    FuncResultRecord(ts=TS, genseq=1, id="t1", name="add_reminder", content="ok", interrupted=True),
    TeammateCallResultRecord(
        ts=TS, genseq=1, call_id="c", responder_id="dominds", tellask_head="@x", status="failed", result="no"
    ),
    TeammateResponseRecord(
        ts=TS,
        call_id="c",
        responder_id="coder",
        callee_dialog_id="s",
        tellask_head="@coder",
        status="completed",
        response="done",
        result="Hi @lead …",
        agent_id="lead",
        origin_member_id="lead",
    ),
    SubdialogCreatedRecord(
        ts=TS, call_id="c", call_type="B", subdialog_id="s", target_agent_id="coder", tellask_head="h", tellask_body="b"
    ),
    TellaskCallRecord(
        ts=TS, genseq=1, call_id="c2", tool_call_id="toolu_1", tool_name="tellask",
        arguments={"targetAgentId": "coder", "sessionSlug": "s", "tellaskContent": "go"},
        tellask_head="@coder !tellaskSession s", tellask_body="go",
    ),
    RunMarkerRecord(ts=TS, kind="interrupted", reason="user_stop"),
    McpSamplingRecord(
        ts=TS, server="poet", call_id="call_1", system_prompt="You are a poet.",
        messages=[{"role": "user", "text": "A haiku"}], reply="Leaves fall", provider="p", model="m",
        usage=Usage(input_tokens=5, output_tokens=3),
    ),
    GenFinishRecord(ts=TS, genseq=1, usage=Usage(input_tokens=3, output_tokens=4), duration_ms=5, model="demo"),
]


def test_course_records_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "course-001.jsonl"
    for record in COURSE_RECORDS:
        append_record(path, record)
    assert read_course(path) == COURSE_RECORDS
    # every record kind of the union is covered by this round trip
    union_members = {m.__name__ for m in COURSE_RECORD_ADAPTER._type.__args__[0].__args__}  # type: ignore[attr-defined]
    assert {type(r).__name__ for r in COURSE_RECORDS} == union_members


def test_course_torn_tail_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "course-001.jsonl"
    append_record(path, GenStartRecord(ts=now_iso(), genseq=1))
    with path.open("a") as fh:
        fh.write('{"type":"agent_words_record","ts":"x","gens')
    records = read_course(path)
    assert [r.type for r in records] == ["gen_start_record"]


def test_course_bad_line_in_middle_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "course-001.jsonl"
    append_record(path, GenStartRecord(ts=now_iso(), genseq=1))
    with path.open("a") as fh:
        fh.write("not json\n")
    append_record(path, GenStartRecord(ts=now_iso(), genseq=2))
    with pytest.raises(CorruptFileError) as err:
        read_course(path)
    assert err.value.line == 2
    assert "course-001.jsonl:2" in str(err.value)


def test_course_unknown_record_type_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "course-001.jsonl"
    path.write_text('{"type":"mystery","ts":"x"}\n{"type":"gen_start_record","ts":"x","genseq":1}\n')
    with pytest.raises(CorruptFileError) as err:
        read_course(path)
    assert err.value.line == 1


def test_state_file_with_wrong_shape_raises_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "latest.yaml"
    path.write_text("currentCourse: [not, an, int]\nlastModified: x\n")
    with pytest.raises(CorruptFileError) as err:
        load_model(path, LatestState)
    assert "latest.yaml" in str(err.value) and "currentCourse" in str(err.value)


def test_state_file_with_bad_yaml_raises_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "dialog.yaml"
    path.write_text("id: [unclosed\n")
    with pytest.raises(CorruptFileError) as err:
        load_model(path, DialogMeta)
    assert "cannot parse" in str(err.value)


def test_missing_state_file_is_none(tmp_path: Path) -> None:
    assert load_model(tmp_path / "latest.yaml", LatestState) is None
