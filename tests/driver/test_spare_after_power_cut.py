"""A power cut can leave ``latest.yaml`` torn beside a whole spare (the swap of the two names reached the
disk, the spare's new bytes only in part: ``store/atomic.py``); the engine must run with the spare's
version and make it the file again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from helpers import sayings

from dominds.ids import now_iso
from dominds.store.fileio import load_model, save_model
from dominds.store.records import LatestState, QueuedPrompt

TURNS = [{"message": "one", "response": "First."}, {"message": "two", "response": "Second."}]


async def _one_turn_then_stopped(make_engine: Any, tmp_path: Path) -> tuple[str, Path, Path]:
    """A dialog driven one turn by an engine that then stopped: its rootId, ``latest.yaml`` and spare."""
    engine = await make_engine(TURNS, root=tmp_path / "ws")
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "one", msg_id="m1")
    await engine.wait_idle()
    await engine.close()
    directory = tmp_path / "ws" / ".dialogs" / "run" / root.root_id
    return root.root_id, directory / "latest.yaml", directory / ".latest.yaml.spare"


async def test_the_engine_runs_with_the_spare_a_power_cut_left_beside_a_torn_file(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root_id, latest, spare = await _one_turn_then_stopped(make_engine, tmp_path)
    newest, older = latest.read_bytes(), spare.read_bytes()
    assert older != newest
    latest.write_bytes(b"currentCourse: 3\nrunState: {kind: idl")  # what the cut left: the file torn, the newest under the spare
    spare.write_bytes(newest)

    engine = await make_engine(TURNS, root=tmp_path / "ws")
    root = engine.get_dialog(root_id)
    assert root.latest.current_course == yaml.safe_load(newest)["currentCourse"] and not root.load_error
    assert latest.read_bytes() == newest, "the spare's version is the file again, for every reader"
    engine.submit_user_message(root, "two", msg_id="m2")
    await engine.wait_idle()
    assert sayings(root)[-2:] == ["First.", "Second."]
    state = load_model(latest, LatestState)
    assert state is not None and state.run_state.kind == "idle"


async def test_an_empty_file_beside_its_spare_is_recovered_from_the_spare_at_start(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug pinned here: a cut before a new spare's blocks were written can leave ``latest.yaml`` empty,
    which every reader took for a missing file: the loader started the dialog from a fresh state and the
    dialog index called it idle, so a message the spare still held queued was never driven. An empty
    file beside a spare is torn: the index marks the dialog, recovery loads it, and the loader reads the
    spare (and makes it the file again)."""
    root_id, latest, spare = await _one_turn_then_stopped(make_engine, tmp_path)
    state = load_model(latest, LatestState)
    assert state is not None and spare.exists()
    state.queued_prompts.append(QueuedPrompt(msg_id="m2", content="two", queued_at=now_iso()))
    state.needs_drive = True
    save_model(spare, state)  # the version whose group committed: the message "two" accepted
    latest.write_bytes(b"")  # what the cut left under the file's name

    engine = await make_engine(TURNS, root=tmp_path / "ws")  # recovery runs at start
    await engine.wait_idle()
    root = engine.get_dialog(root_id)
    assert sayings(root)[-2:] == ["First.", "Second."]
    after = load_model(latest, LatestState)
    assert after is not None and after.run_state.kind == "idle" and not after.queued_prompts
