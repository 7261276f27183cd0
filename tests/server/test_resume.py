"""Replay and resume: a reconnecting client gets exactly what it missed, no socket gets an event twice."""

from __future__ import annotations

import asyncio
from typing import Any

from server_kit import ServeFactory, WsClient

from dominds.server.hub import SeqTracker

STAMPS = {"seq", "epoch", "timestamp", "replay", "dialog", "requestId"}
NOT_IN_FILES = {
    # state snapshots and broadcasts: dialog_ready carries their current value instead
    "dlg_run_state_evt",
    "new_q4h_asked",
    "q4h_answered",
    "questions_count_update",
    "full_reminders_update",
    "course_update",
    "prompt_queued_evt",  # the queue: dialog_ready carries it as queuedPrompts
    "queued_prompt_cancelled_evt",
}


def _content(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events without stamps, consecutive chunks merged (a replay sends a segment as one chunk)."""
    out: list[dict[str, Any]] = []
    for event in events:
        if event["type"] in NOT_IN_FILES:
            continue
        payload = {k: v for k, v in event.items() if k not in STAMPS}
        if out and payload["type"].endswith("_chunk_evt") and out[-1]["type"] == payload["type"]:
            out[-1] = {**out[-1], "chunk": out[-1]["chunk"] + payload["chunk"]}
        else:
            out.append(payload)
    return out


async def _drive(sock: WsClient, dialog: dict[str, str], content: str, until: str) -> None:
    """One turn; two of these may run at once on one socket, so the waits do not move its cursor."""
    ack = await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": content}, "ack")
    said = await sock.wait_after(
        ack, lambda m: m["type"] == "saying_finish_evt" and until in m["content"] and m["dialog"] == dialog
    )
    await sock.wait_after(
        said,
        lambda m: (
            m["type"] == "dlg_run_state_evt"
            and m["dialog"] == dialog
            and m["runState"]["kind"] != "proceeding"
        ),
    )


async def test_replay_from_files_equals_the_live_stream(serve: ServeFactory) -> None:
    served = await serve()
    live = await served.ws()
    ready = await live.request({"type": "create_dialog", "taskDocPath": "tasks/t.tsk"}, "dialog_ready")
    dialog = ready["dialog"]
    await _drive(live, dialog, "hello", "Hello")
    await _drive(live, dialog, "delegate", "X is done")
    await _drive(live, dialog, "think and tool", "Reminder added")
    await _drive(live, dialog, "paint", "Which colour")
    [question] = served.engine.q4h_state()
    await live.request(
        {
            "type": "drive_dialog_by_user_answer",
            "dialog": dialog,
            "questionId": question["id"],
            "content": "blue",
        },
        "ack",
    )
    await live.wait_for(lambda m: m["type"] == "saying_finish_evt" and m["content"] == "Painting it blue.")
    await live.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "fail"}, "ack")
    await live.wait_type("generating_finish_evt", genseq=8)
    await served.engine.wait_idle()

    fresh = await served.ws()
    ready2 = await fresh.request({"type": "display_dialog", "dialog": dialog}, "dialog_ready")
    assert ready2["mode"] == "replay" and ready2["seq"] == served.engine.pubchan.last_seq(dialog["selfId"])
    await fresh.wait_type("generating_finish_evt", genseq=8)
    replayed = fresh.events_of(dialog["selfId"], replay=True)
    assert all(e["seq"] == ready2["seq"] and e["epoch"] == ready2["epoch"] for e in replayed)
    assert replayed[0]["type"] == "course_update"
    live_events = live.events_of(dialog["selfId"])
    assert _content(replayed) == _content(live_events)
    kinds = {e["type"] for e in replayed}
    assert {
        "teammate_call_finish_evt",
        "subdialog_created_evt",
        "teammate_response_evt",
        "func_result_evt",
        "stream_error_evt",
    } <= kinds


async def test_reconnect_with_since_gets_exactly_the_missed_events(serve: ServeFactory) -> None:
    served = await serve()
    witness = await served.ws()  # follows all along: the reference for what was published
    dialog = (await witness.request({"type": "create_dialog", "taskDocPath": "tasks/t.tsk"}, "dialog_ready"))[
        "dialog"
    ]
    first = await served.ws()
    ready = await first.request({"type": "display_dialog", "dialog": dialog}, "dialog_ready")
    await _drive(first, dialog, "hello", "Hello")
    last = first.events_of(dialog["selfId"])[-1]
    await first.close()

    await _drive(witness, dialog, "delegate", "X is done")  # published while `first` is away
    second = await served.ws()
    resumed = await second.request(
        {"type": "display_dialog", "dialog": dialog, "since": {"epoch": last["epoch"], "seq": last["seq"]}},
        "dialog_ready",
    )
    assert resumed["mode"] == "resume" and resumed["epoch"] == ready["epoch"]
    await second.wait_for(lambda m: m.get("seq") == resumed["seq"] and m.get("dialog") == dialog)
    missed = [e["seq"] for e in second.events_of(dialog["selfId"])]
    expected = [e["seq"] for e in witness.events_of(dialog["selfId"]) if e["seq"] > last["seq"]]
    assert missed == expected and missed[0] == last["seq"] + 1 and missed[-1] == resumed["seq"]
    assert second.events_of(dialog["selfId"], replay=True) == [], "a resume is not a replay"

    await _drive(second, dialog, "hello", "Hello")  # and it keeps following live
    assert [e["seq"] for e in second.events_of(dialog["selfId"])] == list(
        range(last["seq"] + 1, served.engine.pubchan.last_seq(dialog["selfId"]) + 1)
    )


async def test_unknown_epoch_or_evicted_seq_falls_back_to_a_replay(serve: ServeFactory) -> None:
    served = await serve()
    sock = await served.ws()
    dialog = (await sock.request({"type": "create_dialog", "taskDocPath": "tasks/t.tsk"}, "dialog_ready"))[
        "dialog"
    ]
    await _drive(sock, dialog, "hello", "Hello")
    other = await served.ws()
    ready = await other.request(
        {"type": "display_dialog", "dialog": dialog, "since": {"epoch": "previous-daemon", "seq": 3}},
        "dialog_ready",
    )
    assert ready["mode"] == "replay"
    finish = await other.wait_type("saying_finish_evt")
    assert finish["replay"] is True and finish["markdownHtml"][0].startswith("<p>Hello")


async def test_one_socket_follows_several_dialogs_and_never_gets_an_event_twice(serve: ServeFactory) -> None:
    served = await serve()
    sock = await served.ws()
    d1 = (await sock.request({"type": "create_dialog", "taskDocPath": "tasks/t.tsk"}, "dialog_ready"))[
        "dialog"
    ]
    d2_ready = await sock.request(
        {"type": "create_dialog", "taskDocPath": "tasks/t.tsk", "follow": "add"}, "dialog_ready"
    )
    assert d2_ready["following"] == sorted([d1["selfId"], d2_ready["dialog"]["selfId"]])
    d2 = d2_ready["dialog"]
    await asyncio.gather(_drive(sock, d1, "delegate", "X is done"), _drive(sock, d2, "hello", "Hello"))
    # ask again for everything since seq 0 of both: all of it was delivered already
    for dialog in (d1, d2):
        again = await sock.request(
            {
                "type": "display_dialog",
                "dialog": dialog,
                "since": {"epoch": d2_ready["epoch"], "seq": 0},
                "follow": "add",
            },
            "dialog_ready",
        )
        assert again["mode"] == "resume"
    await sock.request(
        {"type": "get_q4h_state"}, "q4h_state_response"
    )  # a barrier: everything before it arrived
    for dialog in (d1, d2):
        seqs = [e["seq"] for e in sock.events_of(dialog["selfId"])]
        assert seqs == list(range(1, served.engine.pubchan.last_seq(dialog["selfId"]) + 1)), (
            "complete, ordered, once"
        )
    # the subdialog was not followed: only its broadcasts arrived, each once
    sub_ids = {
        e["dialog"]["selfId"]
        for e in sock.received
        if e.get("dialog") and e["dialog"]["selfId"] not in (d1["selfId"], d2["selfId"])
    }
    for sub_id in sub_ids:
        seqs = [e["seq"] for e in sock.events_of(sub_id)]
        assert len(seqs) == len(set(seqs)) and seqs, "broadcasts of an unfollowed subdialog, once each"


async def test_following_after_broadcasts_does_not_repeat_them(serve: ServeFactory) -> None:
    served = await serve()
    driver = await served.ws()
    watcher = await served.ws()
    dialog = (await driver.request({"type": "create_dialog", "taskDocPath": "tasks/t.tsk"}, "dialog_ready"))[
        "dialog"
    ]
    await _drive(driver, dialog, "hello", "Hello")
    broadcasts = watcher.events_of(dialog["selfId"])
    assert broadcasts and {e["type"] for e in broadcasts} == {"dlg_run_state_evt"}
    ready = await watcher.request(
        {"type": "display_dialog", "dialog": dialog, "since": {"epoch": broadcasts[0]["epoch"], "seq": 0}},
        "dialog_ready",
    )
    assert ready["mode"] == "resume"
    await watcher.request({"type": "get_q4h_state"}, "q4h_state_response")
    seqs = [e["seq"] for e in watcher.events_of(dialog["selfId"])]
    assert sorted(seqs) == list(range(1, ready["seq"] + 1)) and len(seqs) == len(set(seqs))


async def test_global_channel_resume(serve: ServeFactory) -> None:
    served = await serve()
    sock = await served.ws()
    welcome = sock.seen("welcome")[0]
    await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    later = await served.ws()
    ack = await later.request(
        {"type": "resume_global", "since": {"epoch": welcome["epoch"], "seq": welcome["seq"]}}, "ack"
    )
    created = later.seen("dialogs_created")
    assert [e["seq"] for e in created] == [welcome["seq"] + 1, welcome["seq"] + 2] and ack["seq"] == welcome[
        "seq"
    ] + 2
    reset = await later.request(
        {"type": "resume_global", "since": {"epoch": "gone", "seq": 1}}, "global_reset"
    )
    assert reset["seq"] == ack["seq"]


def test_seq_tracker_admits_each_seq_once() -> None:
    tracker = SeqTracker()
    assert [tracker.admit(s) for s in (1, 2, 5, 2, 3, 4, 5, 6)] == [
        True,
        True,
        True,
        False,
        True,
        True,
        False,
        True,
    ]
    assert tracker.upto == 6 and tracker.extra == set()
    tracker.admit(9)
    tracker.cover(7)
    assert not tracker.admit(7) and tracker.admit(8) and tracker.upto == 9


async def test_joining_mid_stream_gets_the_partial_segment_then_the_rest_without_a_gap(
    serve: ServeFactory,
) -> None:
    served = await serve()
    driver = await served.ws()
    dialog = (await driver.request({"type": "create_dialog", "taskDocPath": "tasks/t.tsk"}, "dialog_ready"))[
        "dialog"
    ]
    await driver.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "slow"}, "ack")
    for _ in range(5):
        await driver.wait_type("markdown_chunk_evt")
    late = await served.ws()
    ready = await late.request({"type": "display_dialog", "dialog": dialog}, "dialog_ready")
    assert ready["mode"] == "replay" and ready["generating"] is True
    finish = await late.wait_type("saying_finish_evt", timeout=10)
    replayed = [e for e in late.events_of(dialog["selfId"], replay=True) if e["type"] == "markdown_chunk_evt"]
    live = [e for e in late.events_of(dialog["selfId"]) if e["type"] == "markdown_chunk_evt"]
    assert len(replayed) == 1 and replayed[0]["chunk"].startswith("xxxx"), (
        "the partial text so far, as one chunk"
    )
    seqs = [e["seq"] for e in late.events_of(dialog["selfId"])]
    assert seqs == list(range(ready["seq"] + 1, ready["seq"] + 1 + len(seqs))), (
        "live from the snapshot on, no gap"
    )
    assert replayed[0]["chunk"] + "".join(e["chunk"] for e in live) == finish["content"] == "x" * 400
