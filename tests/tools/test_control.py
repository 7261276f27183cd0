"""The intrinsic tools under concurrent edits (issue 32), through the engine and the scripted provider:
``change_mind`` guarded by the section hash the model last saw, ``append_progress``, reminders by id.

Bugs these pin: ``change_mind`` replaced a section from the model's possibly stale view and silently
overwrote a human's edit made meanwhile (the panel's own save was guarded, the agent's was not); there
was no append for progress entries; reminders were numbered by position, so a delete shifted the numbers
under a parallel update.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from workspace_kit import write_workspace

from dominds.driver.engine import Engine
from dominds.store.course_records import FuncResultRecord
from dominds.taskdoc_sections import content_hash

PLAN = "tasks/t.tsk/notes/plan.md"


@pytest.fixture
async def engine_on(tmp_path: Path) -> AsyncIterator[Any]:
    engines: list[Engine] = []

    async def start(responses: list[dict[str, Any]], prepare: Any = None) -> Engine:
        rtws = write_workspace(tmp_path / "ws", responses)
        if prepare is not None:
            prepare(rtws)
        engine = Engine(rtws)
        await engine.start()
        engines.append(engine)
        return engine

    yield start
    for engine in engines:
        await engine.close()


def tool_results(engine: Engine, root_id: str) -> list[FuncResultRecord]:
    dialog = engine.get_dialog(root_id)
    return [r for r in dialog.files.read_course(dialog.latest.current_course) if isinstance(r, FuncResultRecord)]


def call(name: str, **arguments: Any) -> list[dict[str, Any]]:
    return [{"func_call": {"name": name, "arguments": arguments}}]


async def test_a_human_edit_between_recall_taskdoc_and_change_mind_is_preserved(engine_on: Any, tmp_path: Path) -> None:
    original = "1. parse\n2. check\n"
    human = "1. parse\n2. check\n3. ship on Friday (the human added this)\n"
    engine = await engine_on(
        [
            {"message": "rewrite the plan", "stream": call("recall_taskdoc", category="notes", selector="plan")},
            {"role": "tool", "contains": "section hash", "response": "!?@human May I rewrite the plan?\n"},
            {"contains": "go ahead", "stream": call("change_mind", category="notes", selector="plan",
                                                     content="1. parse only\n", base_hash=content_hash(original))},
            {"role": "tool", "contains": "change_mind refused", "response": "The plan changed; I will redo my edit."},
        ],  # fmt: skip
        prepare=lambda rtws: (rtws.root / "tasks/t.tsk/notes").mkdir() or (rtws.root / PLAN).write_text(original),
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "rewrite the plan")
    await engine.wait_idle()
    recalled = tool_results(engine, root.root_id)[0]
    assert f"`{content_hash(original)}`" in recalled.content, "recall_taskdoc shows the section's hash"
    (tmp_path / "ws" / PLAN).write_text(human)  # the human edits while the agent waits for the answer
    [question] = engine.q4h_state()
    engine.answer_question(question["id"], "go ahead")
    await engine.wait_idle()
    assert (tmp_path / "ws" / PLAN).read_text() == human, "the human's edit is preserved"
    refused = tool_results(engine, root.root_id)[-1]
    assert refused.is_error and "change_mind refused" in refused.content
    assert "ship on Friday" in refused.content and f"`{content_hash(human)}`" in refused.content, "current text + hash"


async def test_change_mind_needs_the_hash_of_a_section_that_has_text_and_writes_with_the_right_one(
    engine_on: Any, tmp_path: Path
) -> None:
    goals = "Ship the feature.\n"  # written by write_workspace
    engine = await engine_on(
        [
            {"message": "blind", "stream": call("change_mind", selector="goals", content="Something else.")},
            {"role": "tool", "contains": "base_hash is missing", "response": "I need the hash."},
            {"message": "seen", "stream": call("change_mind", selector="goals", content="Ship it well.",
                                               base_hash=content_hash(goals))},
            {"role": "tool", "contains": "replaced", "response": "Goals updated."},
        ]  # fmt: skip
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "blind")
    await engine.wait_idle()
    assert (tmp_path / "ws/tasks/t.tsk/goals.md").read_text() == goals
    engine.submit_user_message(root, "seen")
    await engine.wait_idle()
    assert (tmp_path / "ws/tasks/t.tsk/goals.md").read_text() == "Ship it well.\n"
    assert f"`{content_hash('Ship it well.' + chr(10))}`" in tool_results(engine, root.root_id)[-1].content


async def test_the_taskdoc_view_shows_each_sections_hash(engine_on: Any) -> None:
    engine = await engine_on([{"message": "hi", "response": "hello"}])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "hi")
    await engine.wait_idle()
    from dominds.taskdoc import load_taskdoc
    from dominds.taskdoc_render import render_effective_taskdoc

    view = render_effective_taskdoc(load_taskdoc(engine.rtws.root, "tasks/t.tsk"))
    assert f"goals `{content_hash('Ship the feature.' + chr(10))}`" in view and f"progress `{content_hash('')}`" in view


async def test_append_progress_adds_one_entry_and_keeps_what_is_there(engine_on: Any, tmp_path: Path) -> None:
    progress = tmp_path / "ws/tasks/t.tsk/progress.md"
    engine = await engine_on(
        [
            {"message": "log", "stream": call("append_progress", entry="- parser done")},
            {"role": "tool", "contains": "Progress entry added", "response": "Logged."},
            {"message": "log more", "stream": call("append_progress", entry="- checker done")},
            {"role": "tool", "contains": "Progress entry added", "response": "Logged again."},
        ],
        prepare=lambda rtws: (rtws.root / "tasks/t.tsk/progress.md").write_text("# Progress\n- started"),
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "log")
    await engine.wait_idle()
    progress.write_text(progress.read_text() + "- a human note\n")  # a person adds a line meanwhile
    engine.submit_user_message(root, "log more")
    await engine.wait_idle()
    assert progress.read_text() == "# Progress\n- started\n- parser done\n- a human note\n- checker done\n"


async def test_reminders_are_named_by_stable_ids_so_a_delete_shifts_nothing(engine_on: Any) -> None:
    engine = await engine_on(
        [
            {"message": "tidy", "stream": [
                {"func_call": {"name": "delete_reminder", "arguments": {"reminder_id": "rem-first"}}},
                {"func_call": {"name": "update_reminder", "arguments": {"reminder_id": "rem-second", "content": "B2"}}},
            ]},
            {"role": "tool", "contains": "updated", "response": "Tidied."},
        ]  # fmt: skip
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    path = root.files.reminders_json
    reminders = [{"id": "rem-first", "content": "A", "createdAt": "2026-01-01T00:00:00Z"},
                 {"id": "rem-second", "content": "B", "createdAt": "2026-01-01T00:00:00Z"}]  # fmt: skip
    await engine.close()
    path.write_text(json.dumps({"v": 1, "reminders": reminders, "updatedAt": "2026-01-01T00:00:00Z"}))
    engine = Engine(engine.rtws)
    await engine.start()
    try:
        root = engine.get_dialog(root.root_id)
        engine.submit_user_message(root, "tidy")
        await engine.wait_idle()
        assert [(r.id, r.content) for r in root.files.read_reminders().reminders] == [("rem-second", "B2")]
    finally:
        await engine.close()


async def test_reminders_without_ids_get_stable_ones_when_loaded(engine_on: Any) -> None:
    """Reminders from before stable ids (named by their number; no or repeated ids) are migrated once."""
    engine = await engine_on([{"message": "hi", "response": "hello"}])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    path = root.files.reminders_json
    await engine.close()
    old = [{"content": "A", "createdAt": "2026-01-01T00:00:00Z"}, {"id": "1", "content": "B"}, {"id": "1", "content": "C"}]
    path.write_text(json.dumps({"v": 1, "reminders": old, "updatedAt": "2026-01-01T00:00:00Z"}))
    engine = Engine(engine.rtws)
    await engine.start()
    try:
        engine.get_dialog(root.root_id)  # dialogs are loaded on first use
        on_disk = json.loads(path.read_text())["reminders"]
        ids = [r["id"] for r in on_disk]
        assert [r["content"] for r in on_disk] == ["A", "B", "C"]
        assert len(set(ids)) == 3 and all(i.startswith("rem-") for i in ids)
    finally:
        await engine.close()
