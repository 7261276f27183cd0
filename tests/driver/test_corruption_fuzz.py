"""Random corruption of one dialog's files: the engine reports that dialog and keeps serving the others."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workspace_kit import write_workspace

from dominds.driver.engine import Engine, EngineError
from dominds.store.course_records import AgentWordsRecord
from dominds.store.errors import StoreError

FILES = ["dialog.yaml", "latest.yaml", "reminders.json", "q4h.yaml", "subdlg.yaml", "course-001.jsonl"]
RESPONSES = [{"message": "hi", "response": "hello"}, {"agent": "lead", "response": "fine"}]

damage = st.one_of(
    st.tuples(st.just("truncate"), st.floats(min_value=0.0, max_value=1.0)),
    st.tuples(st.just("garbage"), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("flip"), st.integers(min_value=0, max_value=10_000)),
    st.tuples(st.just("append"), st.binary(min_size=1, max_size=32)),
)


def _corrupt(path: Path, how: tuple[str, object]) -> None:
    data = path.read_bytes() if path.exists() else b""
    kind, arg = how
    if kind == "truncate":
        data = data[: int(len(data) * float(arg))]  # type: ignore[arg-type]
    elif kind == "garbage":
        data = bytes(arg)  # type: ignore[arg-type]
    elif kind == "flip" and data:
        i = int(arg) % len(data)  # type: ignore[call-overload]
        data = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1 :]
    elif kind == "append":
        data = data + bytes(arg)  # type: ignore[arg-type]
    path.write_bytes(data)


async def _scenario(base: Path, victim_file: str, how: tuple[str, object]) -> None:
    rtws = write_workspace(base / "ws", RESPONSES)
    engine = Engine(rtws)
    await engine.start()
    victim = engine.create_dialog("lead", "tasks/t.tsk")
    healthy = engine.create_dialog("lead", "tasks/t.tsk")
    for dialog in (victim, healthy):
        engine.submit_user_message(dialog, "hi")
    await engine.wait_idle()
    await engine.close()
    _corrupt(victim.files.dir / victim_file, how)

    engine = Engine(rtws)
    await engine.start()  # must not raise whatever the damage
    try:
        other = engine.get_dialog(healthy.root_id)
        engine.submit_user_message(other, "hi")
        await engine.wait_idle()
        words = [r for r in other.files.read_course(1) if isinstance(r, AgentWordsRecord)]
        assert [w.content for w in words] == ["hello", "hello"]
        try:
            damaged = engine.get_dialog(victim.root_id)
        except StoreError as exc:  # e.g. dialog.yaml destroyed: a typed error naming the file
            assert victim_file in str(exc) or "dialog" in str(exc)
            return
        if damaged.load_error:
            assert str(damaged.files.dir) in damaged.load_error or victim_file in damaged.load_error
            try:
                engine.submit_user_message(damaged, "hi")
            except EngineError as exc:
                assert "cannot be used" in str(exc)
            else:  # pragma: no cover
                raise AssertionError("a dialog with a load error accepted a message")
        else:
            # The damage was harmless (e.g. a torn course tail is ignored by design): it still works.
            engine.submit_user_message(damaged, "hi")
            await engine.wait_idle()
    finally:
        await engine.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(victim_file=st.sampled_from(FILES), how=damage)
def test_random_corruption_is_contained(victim_file: str, how: tuple[str, object]) -> None:
    base = Path(tempfile.mkdtemp(prefix="dominds-fuzz-"))
    try:
        asyncio.run(_scenario(base, victim_file, how))
    finally:
        shutil.rmtree(base, ignore_errors=True)
