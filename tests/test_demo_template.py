"""The template's scripted demo walks through a delegation, a Q4H, a reminder and a TYPE B session."""

from __future__ import annotations

import shutil
from pathlib import Path

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.store.course_records import AgentWordsRecord, SubdialogCreatedRecord, TeammateResponseRecord

TEMPLATE = Path(__file__).resolve().parent.parent / "rtws-template"


def _sayings(dialog) -> list[str]:  # type: ignore[no-untyped-def]
    return [r.content for r in dialog.files.read_course(dialog.latest.current_course) if isinstance(r, AgentWordsRecord)]


async def test_demo_walkthrough(tmp_path: Path) -> None:
    shutil.copytree(TEMPLATE, tmp_path / "ws")
    engine = Engine(Rtws(tmp_path / "ws"))
    await engine.start()
    try:
        root = engine.create_dialog(None, "tasks/demo.tsk")
        assert root.agent_id == "lead"
        engine.submit_user_message(root, "Research the demo task")
        await engine.wait_idle()
        assert "Try **Ask me a question** next." in _sayings(root)[-1]
        engine.submit_user_message(root, "Ask me a question")
        await engine.wait_idle()
        [question] = engine.q4h_state()
        engine.answer_question(question["id"], "markdown report")
        await engine.wait_idle()
        assert "question is answered" in _sayings(root)[-1]
        engine.submit_user_message(root, "Remember to update the progress file")
        await engine.wait_idle()
        assert [r.content for r in root.reminders] == ["Update tasks/demo.tsk/progress.md after each step."]
        engine.submit_user_message(root, "Build it with the coder")
        await engine.wait_idle()
        assert "That's the whole demo" in _sayings(root)[-1]
        records = root.files.read_course(root.latest.current_course)
        assert len([r for r in records if isinstance(r, SubdialogCreatedRecord)]) == 2
        assert len([r for r in records if isinstance(r, TeammateResponseRecord)]) == 2
        assert list(root.type_b) == ["coder!demo-build"]
        engine.submit_user_message(root, "what else?")
        await engine.wait_idle()
        assert "scripted demo lead" in _sayings(root)[-1]
    finally:
        await engine.close()
