"""The Taskdoc as people read it and its section editor (issue 18, item 7).

The bug: the panel's Taskdoc panel showed the text the model sees — every heading twice (ours and the
file's), instructions to the model ("replace one whole section with change_mind …"), and no file paths.
Now each section comes once, with its file, and ``POST /api/taskdocs/section`` replaces one file
atomically, refusing an edit of a file that changed since it was read.
"""

from __future__ import annotations

from typing import Any

from server_kit import ServeFactory


async def _taskdoc(served: Any, dialog: dict[str, str]) -> dict[str, Any]:
    sock = await served.ws()
    reply = await sock.request({"type": "get_taskdoc", "dialog": dialog}, "taskdoc_content")
    await sock.close()
    return reply


async def test_each_section_once_with_its_file_and_no_model_instructions(serve: ServeFactory) -> None:
    served = await serve()
    package = served.engine.rtws.root / "tasks" / "t.tsk"
    (package / "goals.md").write_text("# Goals\n\nShip the **feature**.\n")
    (package / "bearinmind").mkdir()
    (package / "bearinmind" / "risks.md").write_text("Friday deploys.\n")
    (package / "notes").mkdir()
    (package / "notes" / "api.md").write_text("Keep `/v1` alive.\n")
    (package / "progress.md").write_bytes(b"x" * (300 * 1024))  # too large to edit safely
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    taskdoc = await _taskdoc(served, {"selfId": created["rootId"]})

    sections = {s["key"]: s for s in taskdoc["sections"]}
    assert list(sections) == ["goals", "constraints", "progress", "bearinmind/risks", "notes/api"]
    assert [s["file"] for s in taskdoc["sections"]][:2] == ["tasks/t.tsk/goals.md", "tasks/t.tsk/constraints.md"]
    goals = sections["goals"]
    assert goals["html"] == "<p>Ship the <strong>feature</strong>.</p>\n", "the file's own '# Goals' is not shown twice"
    assert goals["markdown"] == "# Goals\n\nShip the **feature**.\n" and goals["editable"], "the edit gets the whole file"
    assert not sections["constraints"]["exists"] and sections["constraints"]["html"] == ""
    assert "Keep <code>/v1</code> alive." in sections["notes/api"]["html"]
    progress = sections["progress"]
    assert not progress["editable"] and progress["markdown"] == "" and "first part" in progress["readOnlyReason"]
    everything = str(taskdoc)
    assert "change_mind" not in everything and "recall_taskdoc" not in everything, "no instructions to the model"


async def test_a_section_edit_is_atomic_and_refused_when_the_file_changed_meanwhile(serve: ServeFactory) -> None:
    served = await serve()
    package = served.engine.rtws.root / "tasks" / "t.tsk"
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    before = {s["key"]: s for s in (await _taskdoc(served, {"selfId": created["rootId"]}))["sections"]}

    status, saved = await served.post(
        "/api/taskdocs/section",
        {"taskDocPath": "tasks/t.tsk", "section": "goals", "content": "Ship 1.2 on Friday.", "baseHash": before["goals"]["hash"]},
    )
    assert status == 200 and saved["written"] == "tasks/t.tsk/goals.md"
    assert (package / "goals.md").read_text() == "Ship 1.2 on Friday.\n"
    assert [p.name for p in package.iterdir() if p.name.startswith(".")] == [], "no temp file left"
    assert saved["sections"][0]["html"] == "<p>Ship 1.2 on Friday.</p>\n", "the reply is the fresh Taskdoc"

    (package / "goals.md").write_text("An agent wrote this meanwhile.\n")
    status, refused = await served.post(
        "/api/taskdocs/section",
        {"taskDocPath": "tasks/t.tsk", "section": "goals", "content": "stale edit", "baseHash": saved["sections"][0]["hash"]},
    )
    assert status == 409 and "changed since you opened it" in refused["error"]
    assert (package / "goals.md").read_text() == "An agent wrote this meanwhile.\n", "nothing was overwritten unseen"
    # the refusal carries the text now and its hash: the panel diffs it, and a save naming that hash goes through
    assert refused["current"] == "An agent wrote this meanwhile.\n"
    status, _ = await served.post(
        "/api/taskdocs/section",
        {"taskDocPath": "tasks/t.tsk", "section": "goals", "content": "stale edit, knowingly", "baseHash": refused["currentHash"]},
    )
    assert status == 200 and (package / "goals.md").read_text() == "stale edit, knowingly\n"
    (package / "goals.md").write_text("An agent wrote this meanwhile.\n")

    status, created_section = await served.post(
        "/api/taskdocs/section",
        {"taskDocPath": "tasks/t.tsk", "section": "bearinmind/risks", "content": "None yet.", "baseHash": before["constraints"]["hash"]},
    )
    assert status == 200 and (package / "bearinmind" / "risks.md").read_text() == "None yet.\n", "a new section file"
    for bad in ("../../etc/passwd", "bearinmind/nonsense", "notes/../../x", "goals/../../x"):
        status, error = await served.post("/api/taskdocs/section", {"taskDocPath": "tasks/t.tsk", "section": bad, "content": "x"})
        assert status == 400, (bad, error)
    status, _ = await served.post("/api/taskdocs/section", {"taskDocPath": "../outside.tsk", "section": "goals", "content": "x"})
    assert status == 400
