"""A subdialog's assignment (and an ask-back) is shown as its sender wrote it, live, replayed and from older files.

The bug: the first prompt of a subdialog reached the panel only as the model reads it ("Hi @coder,
this is @lead speaking, now:" and the tellask quoted line by line), so the panel showed that framing as
raw text instead of the caller's request rendered like every other bubble. Now the
``end_of_user_saying_evt`` of an assignment carries ``assignment`` (the caller's headline and body, and
the body as sanitised HTML); ``content`` stays the text the model reads. The same held for an ask-back
("Hi @lead, while working on the following original task: … `@coder` TellaskBack: …"): its prompt now
carries ``askBack``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from deadlines import until
from server_kit import RESPONSES, ServeFactory

from dominds.driver.texts import assignment_text

BODY = "Cover **two** points:\n\n- the API\n- the fixes\n"
ASSIGNING = [
    {
        "agent": "lead",
        "message": "delegate",
        "response": "Asking coder.\n!?@coder please write the notes\n"
        + "".join(f"!?{line}\n" for line in BODY.rstrip("\n").split("\n")),
    },
    {"agent": "coder", "contains": "please write the notes", "response": "Notes written."},
    {"agent": "lead", "contains": "@coder provided response", "response": "Thanks."},
    *RESPONSES,
]



async def _delegate(served: Any) -> tuple[str, str]:
    """A root that delegated to the coder, at rest; its id and the coder subdialog's."""
    _, created = await served.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
    root_id = created["rootId"]
    await served.post(f"/api/dialogs/{root_id}/messages", {"content": "delegate"})
    await served.engine.wait_idle()
    _, tree = await served.get(f"/api/dialogs/{root_id}/hierarchy")
    [coder] = tree["hierarchy"]["subdialogs"]
    return root_id, coder["selfId"]


def _assignment_prompt(events: list[dict[str, Any]]) -> dict[str, Any]:
    [prompt] = [e for e in events if e["type"] == "end_of_user_saying_evt"]
    assert prompt["origin"] == "assignment"
    return prompt


def _check_shown_as_written(prompt: dict[str, Any], root_id: str) -> None:
    assert prompt["content"] == assignment_text("coder", "lead", "@coder please write the notes\n", BODY), (
        "what the model reads is unchanged"
    )
    shown = prompt["assignment"]
    assert shown["fromAgentId"] == "lead" and shown["callerDialogId"] == root_id
    assert shown["tellaskHead"] == "@coder please write the notes\n" and shown["tellaskBody"] == BODY
    assert "<strong>two</strong>" in shown["bodyHtml"] and shown["bodyHtml"].count("<li>") == 2
    assert "speaking" not in shown["bodyHtml"]


async def test_the_assignment_is_sent_as_written_live_and_in_a_replay(serve: ServeFactory) -> None:
    served = await serve(ASSIGNING)
    root_id, sub_id = await _delegate(served)
    sub = {"selfId": sub_id, "rootId": root_id}
    sock = await served.ws()
    epoch = sock.seen("welcome")[0]["epoch"]
    ready = await sock.request({"type": "display_dialog", "dialog": sub, "since": {"epoch": epoch, "seq": 0}}, "dialog_ready")
    assert ready["mode"] == "resume", "the live events, from the replay buffer"
    live = _assignment_prompt(sock.events_of(sub_id))
    _check_shown_as_written(live, root_id)

    replaying = await served.ws()
    ready = await replaying.request({"type": "display_dialog", "dialog": sub}, "dialog_ready")
    assert ready["mode"] == "replay"
    replayed = _assignment_prompt(replaying.events_of(sub_id, replay=True))
    _check_shown_as_written(replayed, root_id)
    assert replayed["assignment"] == live["assignment"]


async def test_a_course_file_written_before_assignments_were_kept_still_shows_the_assignment(serve: ServeFactory) -> None:
    """Course files written before this change have no ``assignment`` in the prompt's record: the
    subdialog's ``dialog.yaml`` still names its (current) assignment, so the panel shows it the same way."""
    served = await serve(ASSIGNING, rest_sweep_interval=0.05)
    root_id, sub_id = await _delegate(served)
    await until(lambda: root_id not in served.engine.roots, seconds=20.0)  # unloaded: the next display reads the files
    [course] = (served.engine.rtws.dialogs_dir / "run" / root_id / "subdialogs" / sub_id).glob("course-*.jsonl")
    lines = [json.loads(line) for line in course.read_text(encoding="utf-8").splitlines()]
    for record in lines:
        if record["type"] == "human_text_record":
            assert "assignment" in record, "new files keep the assignment"
            del record["assignment"]
    course.write_text("".join(json.dumps(record) + "\n" for record in lines), encoding="utf-8")

    sock = await served.ws()
    await sock.request({"type": "display_dialog", "dialog": {"selfId": sub_id, "rootId": root_id}}, "dialog_ready")
    _check_shown_as_written(_assignment_prompt(sock.events_of(sub_id, replay=True)), root_id)


ASKING_BACK = [
    {"agent": "lead", "message": "delegate", "response": "!?@coder write the parser\n"},
    {"agent": "coder", "contains": "write the parser", "response": "!?@tellasker Which **language**?\n!?- Rust\n!?- Go\n"},
    {"agent": "lead", "contains": "TellaskBack", "response": "Use Rust."},
    {"agent": "coder", "contains": "Use Rust.", "response": "Parser written in Rust."},
    {"agent": "lead", "contains": "Parser written", "response": "Done."},
]


async def test_an_ask_back_is_sent_as_the_asker_wrote_it_live_and_in_a_replay(serve: ServeFactory) -> None:
    served = await serve(ASKING_BACK)
    _, created = await served.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
    root_id = created["rootId"]
    sock = await served.ws()
    epoch = sock.seen("welcome")[0]["epoch"]
    await served.post(f"/api/dialogs/{root_id}/messages", {"content": "delegate"})
    await served.engine.wait_idle()
    _, tree = await served.get(f"/api/dialogs/{root_id}/hierarchy")
    [coder] = tree["hierarchy"]["subdialogs"]
    root = {"selfId": root_id}
    await sock.request({"type": "display_dialog", "dialog": root, "since": {"epoch": epoch, "seq": 0}}, "dialog_ready")
    replaying = await served.ws()
    await replaying.request({"type": "display_dialog", "dialog": root}, "dialog_ready")
    for events in (sock.events_of(root_id), replaying.events_of(root_id, replay=True)):
        [prompt] = [e for e in events if e["type"] == "end_of_user_saying_evt" and e["origin"] == "tellask_back"]
        assert prompt["content"].startswith("Hi @lead, while working on the following original task:"), "the model's text"
        asked = prompt["askBack"]
        assert asked["fromAgentId"] == "coder" and asked["fromDialogId"] == coder["selfId"]
        assert asked["tellaskHead"] == "@tellasker Which **language**?\n" and asked["tellaskBody"] == "- Rust\n- Go\n"
        assert asked["bodyHtml"].count("<li>") == 2 and "assignment" not in prompt


OLD_FILES = Path(__file__).parent / "old_course_files"


async def test_an_ask_back_in_a_course_file_written_before_ask_backs_were_kept_is_shown_as_written(
    serve: ServeFactory,
) -> None:
    """The bug: a course file written before ``askBack`` existed keeps only the framed prompt of an
    ask-back ("Hi @lead, while working on the following original task: …"), so its bubble showed that
    text, not the asker's words. The framing quotes the headline and the body whole, and the record's
    ``callId`` starts with the hash of exactly that headline and body: the words are read back from the
    framed text and kept only when they hash to the call id. A record whose text does not (edited by
    hand, here) stays framed rather than show something the asker may not have written.

    ``old_course_files/ask_back/`` is a root dialog as a daemon of that time wrote it (three ask-backs:
    a two-line headline with a body holding blank lines and a quote; one edited after it was written;
    a headline alone, without a final newline)."""
    served = await serve([])
    root_id = "0mvzk3a00-old1"
    shutil.copytree(OLD_FILES / "ask_back", served.engine.rtws.dialogs_dir / "run" / root_id)
    sock = await served.ws()
    await sock.request({"type": "display_dialog", "dialog": {"selfId": root_id}}, "dialog_ready")
    prompts = [
        e for e in sock.events_of(root_id, replay=True) if e["type"] == "end_of_user_saying_evt" and e["origin"] == "tellask_back"
    ]
    assert len(prompts) == 3
    first, edited, bare = prompts
    for prompt in prompts:
        assert prompt["content"].startswith("Hi @lead, while working on the following original task:"), "the model's text"

    asked = first["askBack"]
    assert asked["fromAgentId"] == "coder" and asked["fromDialogId"] == "0mvzk3a05-old2"
    assert asked["callId"] == "36b191cb.1.1.1"
    assert asked["tellaskHead"] == "@tellasker Which **language**?\n@tellasker and which `edition`?\n"
    assert asked["tellaskBody"] == "Options:\n\n- Rust\n- Go\n\n> quoted in the body\n"
    assert asked["bodyHtml"].count("<li>") == 2 and "<blockquote>" in asked["bodyHtml"]
    assert "TellaskBack" not in asked["bodyHtml"]

    assert "askBack" not in edited, "a framed text that does not match its call id is not guessed at"

    assert bare["askBack"]["tellaskHead"] == "@tellasker Is the API [frozen](docs/api.md)?"
    assert bare["askBack"]["tellaskBody"] == "" and bare["askBack"]["fromAgentId"] == "coder"
