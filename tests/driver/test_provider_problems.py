"""A provider rejection interrupts the dialog with an actionable message and shows in `dominds check` until fixed."""

from __future__ import annotations

import pytest
from helpers import sayings
from workspace_kit import set_responses

from dominds.cli.main import main as dominds


async def test_rejection_is_a_problem_until_the_provider_works(
    make_engine, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    engine = await make_engine(
        [{"message": "hi", "error": {"kind": "rejected", "status": 401, "message": "invalid key", "hint": "check SCRIPTED_KEY"}}]
    )
    snapshots: list[dict] = []  # type: ignore[type-arg]
    engine.pubchan.subscribe(lambda e: snapshots.append(e) if e["type"] == "problems_snapshot" else None)
    monkeypatch.chdir(engine.rtws.root)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "hi")
    await engine.wait_idle()
    state = root.latest.run_state
    assert state.kind == "interrupted" and state.reason == "system_stop" and "check SCRIPTED_KEY" in (state.detail or "")
    assert any("invalid key" in p["message"] for p in snapshots[-1]["problems"]), "the panel hears of it"
    assert dominds(["check"]) == 1
    assert "provider scripted" in capsys.readouterr().out

    set_responses(engine.rtws, [{"message": "hi", "response": "hello"}])
    engine.submit_user_message(root, "hi")
    await engine.wait_idle()
    assert sayings(root) == ["hello"]
    assert not any("invalid key" in p["message"] for p in snapshots[-1]["problems"])
    assert dominds(["check"]) == 0
