"""A fork cut by a crash (driver/fork.py): the fork's directory, renamed into place in one step, is all of it."""

from __future__ import annotations

from pathlib import Path

from helpers import sayings

from dominds.driver.fork import fork_root


class _Killed(Exception):
    """The daemon's death right after a chosen write, in process: nothing after it runs."""


async def test_a_fork_killed_right_after_its_directory_was_renamed_still_runs_its_message(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug: the fork's directory was renamed into place, then its first message queued (a second write). The
    daemon died in between: the fork stayed idle forever without the person's (edited) message."""
    responses = [
        {"agent": "lead", "message": "first", "response": "First answer."},
        {"agent": "lead", "message": "second", "response": "Second answer."},
        {"agent": "lead", "message": "second, but in French", "response": "Deuxième réponse."},
    ]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    for message in ("first", "second"):
        engine.submit_user_message(root, message)
        await engine.wait_idle()
    made = engine.add_root

    def add_root_then_die(*args, **kwargs):  # type: ignore[no-untyped-def]
        fork = made(*args, **kwargs)
        killed.append(fork.root_id)
        raise _Killed

    killed: list[str] = []
    engine.add_root = add_root_then_die
    try:
        fork_root(engine, root.root_id, genseq=2, message="second, but in French")
    except _Killed:
        pass
    await engine.close()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    [fork_id] = killed
    assert sayings(engine2.get_dialog(fork_id)) == ["First answer.", "Deuxième réponse."]
