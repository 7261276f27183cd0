"""A kill -9 at any step of a one-message turn never leaves that message recorded and unanswered.

Bug this pins (found in review of "A turn renames latest.yaml once", fb66309, since reverted): the queue
save of a user message was a *held* replace (its rename waited for the group commit), and the appends of
the generation that consumes it (its ``gen_start_record``, then the message's ``human_text_record``)
could land in the course before that rename. A daemon killed between those appends and the group commit
left ``latest.yaml`` as it was before the message — idle, nothing queued, not generating — beside a
course whose last generation was open and held the message. Recovery picks the trees it loads from the
facts of ``latest.yaml`` alone (``recovery.needs_attention``), so it never loaded this one: the open
generation was never closed and the message never answered; the client, never acknowledged, sent it
again with the same id and was told ``message 'crash-msg-1' was already accepted``: the message was lost
for good. (``tests/driver/test_crashpoints.py`` cannot see it: its audit checks nothing when no message
was acknowledged.) Whatever write economy comes next must keep this test green.

It found the same loss again with ``latest.yaml`` written over its spare and swapped (``atomic.py``): a
kill between the spare's write and the swap (a crash point of its own, "swap") left the queued message
whole under the spare's name, and the loader preferred the spare when it looked later. Recovery, which
reads ``latest.yaml``, never loaded the tree; the retry was refused as already accepted and nothing
drove it. The loader now reads the spare only when ``latest.yaml`` itself is torn.

Every crash point of a one-message turn is run here: after the restart the client retries an
unacknowledged message (as any client does), and the message must then be recorded once and answered.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_crashpoints import Scenario, _crash_run
from workspace_kit import write_workspace

from dominds.driver.engine import Engine
from dominds.driver.errors import EngineError
from dominds.rtws import Rtws
from dominds.store.course_records import AgentWordsRecord, GenFinishRecord, GenStartRecord, HumanTextRecord
from dominds.store.dialog_store import DialogStore

MSG_ID = "crash-msg-1"
SCENARIO = Scenario("one_turn", [{"agent": "lead", "message": "hello", "response": "Hi there."}], ["hello"], "Hi there.")


async def _restart_and_retry(rtws: Rtws, acked: bool) -> str | None:
    """Recover in a fresh engine; a client never acknowledged sends its message again (same id).

    Returns the engine's refusal of the retry, if any."""
    engine = Engine(rtws)
    await engine.start()
    refusal = None
    try:
        await engine.wait_idle(timeout=60)
        root_ids = DialogStore(rtws).root_ids("run")
        if not acked and root_ids:
            root = engine.load_root(root_ids[0])
            try:
                engine.submit_user_message(root, "hello", msg_id=MSG_ID)
            except EngineError as exc:
                refusal = str(exc)
            await engine.durable()
            await engine.wait_idle(timeout=60)
    finally:
        await engine.close()
    return refusal


def _audit(rtws: Rtws, point: int, refusal: str | None) -> None:
    store = DialogStore(rtws)
    roots = store.root_ids("run")
    if not roots:
        return  # killed before the dialog existed: the client had nothing to retry into
    files = store.files("run", roots[0], roots[0])
    course = [r for n in files.course_numbers() for r in files.read_course(n)]
    where = f"crash point {point}: {[type(r).__name__ for r in course]} (retry refused: {refusal})"
    humans = [i for i, r in enumerate(course) if isinstance(r, HumanTextRecord) and r.msg_id == MSG_ID]
    assert len(humans) == 1, f"{where}: the message is recorded {len(humans)} times"
    answered = any(isinstance(r, AgentWordsRecord) for r in course[humans[0] + 1 :])
    assert answered, f"{where}: the message is recorded but never answered"
    started = {r.genseq for r in course if isinstance(r, GenStartRecord)}
    finished = {r.genseq for r in course if isinstance(r, GenFinishRecord)}
    assert started == finished, f"{where}: generations {sorted(started - finished)} were left open"
    latest = files.read_latest()
    assert latest is not None and latest.run_state.kind == "idle" and not files.read_queue(), where


@pytest.mark.timeout(300)
def test_a_kill_at_any_step_of_a_turn_leaves_its_message_answered_once(tmp_path: Path) -> None:
    problems: list[str] = []
    for point in range(1, 60):
        rtws = write_workspace(tmp_path / f"p{point}", SCENARIO.responses)
        crashed, acked = _crash_run(rtws, SCENARIO, point)
        refusal = asyncio.run(_restart_and_retry(rtws, bool(acked))) if crashed else None
        try:
            _audit(rtws, point, refusal)
        except AssertionError as exc:
            problems.append(str(exc).splitlines()[0])
        if not crashed:
            assert acked == [MSG_ID]
            assert not problems, "\n".join(problems)
            return
    raise AssertionError("the turn never finished within 60 durable steps")
