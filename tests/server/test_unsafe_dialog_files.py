"""Dialog files that are links, or corrupt in ways that parse: never followed, always flagged (issue 34).

Through the HTTP API of a daemon restarted on the damaged files, as a person would meet them.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest
from server_kit import ServeFactory

from dominds.rtws import SymlinkedStorageError

RESPONSES = [{"message": "hi", "response": "hello"}]


def fingerprint(directory: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.rglob("*")) if p.is_file()}


def listed(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {node["selfId"]: node for node in body["dialogs"]}


async def test_links_inside_dialogs_are_never_followed(serve: ServeFactory, tmp_path: Path) -> None:
    """Bug (issue 34): a course file, a dialog directory or a `subdialogs/` directory that is a symlink made
    appends go wherever it pointed, outside the workspace; an artifact symlink served an outside file over
    the API. The Taskdoc rule ("links are never followed") now holds for dialogs too."""
    served = await serve(RESPONSES)
    engine = served.engine
    linked_course, linked_dir, linked_subs, healthy = (engine.create_dialog("lead", "tasks/t.tsk") for _ in range(4))
    for dialog in (linked_course, linked_dir, linked_subs, healthy):
        engine.submit_user_message(dialog, "hi")
    await engine.wait_idle()
    artifacts = healthy.files.dir / "artifacts"
    artifacts.mkdir()
    (artifacts / "dot.png").write_bytes(b"\x89PNG fine")
    await engine.close()

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.png").write_bytes(b"outside secret")
    (artifacts / "leak.png").symlink_to(outside / "secret.png")
    course = linked_course.files.course(1)
    shutil.copy(course, outside / "course.jsonl")
    course.unlink()
    course.symlink_to(outside / "course.jsonl")
    shutil.move(str(linked_dir.files.dir), str(outside / "dialog"))
    linked_dir.files.dir.symlink_to(outside / "dialog", target_is_directory=True)
    (outside / "subs").mkdir()
    (linked_subs.files.dir / "subdialogs").symlink_to(outside / "subs", target_is_directory=True)
    before = fingerprint(outside)

    served = await serve(RESPONSES)
    status, body = await served.get("/api/dialogs")
    nodes = listed(body)
    assert status == 200 and linked_dir.self_id not in nodes, "a linked dialog directory is not a dialog"
    for refused in (linked_course, linked_subs):
        assert "symbolic link" in nodes[refused.self_id]["error"], nodes[refused.self_id]
        status, answer = await served.post(f"/api/dialogs/{refused.self_id}/messages", {"content": "hi"})
        assert status == 409 and "symbolic link" in answer["error"]
    status, answer = await served.post(f"/api/dialogs/{linked_dir.self_id}/messages", {"content": "hi"})
    assert status == 409 and "symbolic link" in answer["error"]
    fine = await served.client.get(f"/api/dialogs/{healthy.self_id}/artifacts/dot.png", headers=served.auth())
    leak = await served.client.get(f"/api/dialogs/{healthy.self_id}/artifacts/leak.png", headers=served.auth())
    assert fine.status == 200 and leak.status == 404
    status, _ = await served.post(f"/api/dialogs/{healthy.self_id}/messages", {"content": "hi"})
    assert status == 202
    await served.engine.wait_idle()
    assert fingerprint(outside) == before, "nothing was written outside the workspace"


async def test_a_linked_dialog_storage_is_refused_at_start(serve: ServeFactory, tmp_path: Path) -> None:
    """Bug (issue 34): `.dialogs/run` as a symlink sent every dialog's writes wherever it pointed."""
    served = await serve(RESPONSES)
    await served.engine.close()
    run = served.engine.rtws.run_dir
    shutil.move(str(run), str(tmp_path / "elsewhere"))
    run.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(SymlinkedStorageError, match="never followed"):
        await serve(RESPONSES)


async def test_files_the_daemon_refuses_are_flagged_in_the_listing(serve: ServeFactory) -> None:
    """Bug (issue 34): `currentCourse: 999`, a non-UTF-8 course line and a root whose dialog.yaml was deleted
    were refused (409/404) but listed as healthy in /api/dialogs; a corrupt latest.yaml was rolled back to
    its spare without a notice."""
    served = await serve(RESPONSES)
    engine = served.engine
    far_course, bad_bytes, no_meta, rolled_back = (engine.create_dialog("lead", "tasks/t.tsk") for _ in range(4))
    for dialog in (far_course, bad_bytes, no_meta, rolled_back):
        engine.submit_user_message(dialog, "hi")
    await engine.wait_idle()
    engine.submit_user_message(rolled_back, "hi")  # a second write: latest.yaml now has a spare
    await engine.wait_idle()
    await engine.close()
    latest = far_course.files.latest_yaml
    latest.write_text(latest.read_text().replace("currentCourse: 1", "currentCourse: 999"))
    with bad_bytes.files.course(1).open("ab") as course:
        course.write(b'{"type":"agent_words_record","ts":"x","genseq":9,"content":"\xff\xfe"}\n')
    no_meta.files.dialog_yaml.unlink()
    rolled_back.files.latest_yaml.write_text("currentCourse: [torn\n")

    served = await serve(RESPONSES)
    status, body = await served.get("/api/dialogs")
    nodes = listed(body)
    assert status == 200
    assert "currentCourse is 999" in nodes[far_course.self_id]["error"]
    assert "not valid UTF-8" in nodes[bad_bytes.self_id]["error"]
    assert "dialog.yaml is missing" in nodes[no_meta.self_id]["error"]
    assert "error" not in nodes[rolled_back.self_id]
    assert "previous version" in " ".join(nodes[rolled_back.self_id]["notices"])


async def test_a_linked_subdialog_directory_is_never_followed(serve: ServeFactory, tmp_path: Path) -> None:
    """Issue 34, item 6, for one subdialog's own directory (the test above links the `subdialogs/` directory
    that holds them): a TYPE B session whose directory is a symlink to somewhere outside is neither read nor
    written through; the tree goes on and nothing outside the workspace changes."""
    responses = [
        {"agent": "lead", "message": "go", "response": "!?@coder !tellaskSession job build it\n"},
        {"agent": "coder", "contains": "build it", "response": "Built."},
        {"agent": "lead", "contains": "Built.", "response": "Done."},
        {"agent": "lead", "message": "again", "response": "!?@coder !tellaskSession job build it\n"},
    ]
    served = await serve(responses)
    engine = served.engine
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go")
    await engine.wait_idle()
    [sub_id] = engine.store.subdialog_ids("run", root.root_id)
    session_dir = engine.store.files("run", root.root_id, sub_id).dir
    await engine.close()
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.move(str(session_dir), str(outside / "session"))
    session_dir.symlink_to(outside / "session", target_is_directory=True)
    before = fingerprint(outside)

    served = await serve(responses)
    status, body = await served.get("/api/dialogs")
    assert status == 200 and sub_id not in listed(body), "a linked subdialog directory is not a dialog"
    status, _ = await served.post(f"/api/dialogs/{root.root_id}/messages", {"content": "again"})
    assert status == 202
    await served.engine.wait_idle()
    assert fingerprint(outside) == before, "nothing was written outside the workspace"
    restored = served.engine.get_dialog(root.root_id)
    assert all(d.latest.run_state.kind == "idle" for d in restored.local.values())
