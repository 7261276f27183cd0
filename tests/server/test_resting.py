"""Trees at rest are unloaded when no panel displays them (server/resting.py), and come back when needed.

Bug pinned here: a tree the daemon drove stayed in ``engine.roots`` until the daemon stopped (only
recovery unloaded trees at rest), so a daemon's memory grew with every dialog it ever drove.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from deadlines import until
from server_kit import ServeFactory

from dominds.server.keys import HUB
from dominds.server.resting import SWEEP_SECONDS, RestingTrees


def _sayings(shown: dict[str, Any]) -> list[str]:
    return [e["content"] for e in shown["events"] if e["type"] == "saying_finish_evt"]


async def test_trees_at_rest_are_unloaded_unless_displayed_and_are_read_again_when_needed(serve: ServeFactory) -> None:
    served = await serve(rest_sweep_interval=0.05)
    engine = served.engine
    roots = {}
    for name, message in (("idle", "hello"), ("asking", "paint"), ("shown", "hello"), ("delegating", "delegate")):
        _, created = await served.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
        roots[name] = created["rootId"]
        await served.post(f"/api/dialogs/{created['rootId']}/messages", {"content": message})
    await engine.wait_idle()
    sock = await served.ws()
    await sock.request({"type": "display_dialog", "dialog": {"selfId": roots["shown"]}}, "dialog_ready")
    _, tree = await served.get(f"/api/dialogs/{roots['delegating']}/hierarchy")
    [coder] = tree["hierarchy"]["subdialogs"]
    sub = {"selfId": coder["selfId"], "rootId": roots["delegating"]}
    await sock.request({"type": "display_dialog", "dialog": sub, "follow": "add"}, "dialog_ready")

    # displayed: a root, and the tree of a displayed subdialog; every other tree at rest is unloaded
    await until(lambda: set(engine.roots) == {roots["shown"], roots["delegating"]}, seconds=10.0)
    _, listing = await served.get("/api/dialogs")
    states = {d["rootId"]: (d["runState"]["kind"], d["q4hCount"]) for d in listing["dialogs"] if d["selfId"] == d["rootId"]}
    assert states[roots["idle"]] == ("idle", 0) and states[roots["asking"]] == ("blocked", 1)

    # an unloaded tree is read again when it is needed: its question answered, a new message driven
    [question] = (await served.get("/api/q4h"))[1]["questions"]
    status, _ = await served.post(f"/api/q4h/{question['id']}/answer", {"content": "blue"})
    assert status == 202
    await served.post(f"/api/dialogs/{roots['idle']}/messages", {"content": "hello"})
    await engine.wait_idle()
    assert _sayings((await served.get(f"/api/dialogs/{roots['asking']}"))[1])[-1] == "Painting it blue."
    assert len(_sayings((await served.get(f"/api/dialogs/{roots['idle']}"))[1])) == 2

    # the displayed dialog kept its followers: a new turn reaches the socket live
    await served.post(f"/api/dialogs/{roots['shown']}/messages", {"content": "hello"})
    await sock.wait_for(lambda m: m.get("type") == "saying_finish_evt" and m["dialog"]["selfId"] == roots["shown"], 10)
    await until(lambda: set(engine.roots) == {roots["shown"], roots["delegating"]}, seconds=10.0)


async def test_a_tree_the_sweep_unloads_is_freed_at_once_not_left_to_the_cycle_collector(serve: ServeFactory) -> None:
    """Bug pinned here: an unloaded tree is a cycle (a dialog and its root point at each other), so it
    stayed in memory until CPython's next full collection, which runs only once the surviving objects
    grew by a quarter: a daemon that drove 600 dialogs still held ~400 unloaded trees 21 s later.
    With automatic collection off, only the sweep's own collection can free them."""
    served = await serve(rest_sweep_interval=0.05)
    engine = served.engine
    gc.collect()
    # As `dominds serve` does after its imports: a collection walks only what was made since. Without it
    # a collection walked everything earlier tests left in this process (seconds in an xdist worker at
    # load 6), the sweep spaced its collections by ten times that (COLLECT_SHARE), and the 10 s wait ended
    # before the next one.
    gc.freeze()
    gc.disable()
    try:
        trees = []
        for _ in range(3):
            _, created = await served.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
            trees.append(weakref.ref(engine.roots[created["rootId"]]))
            await served.post(f"/api/dialogs/{created['rootId']}/messages", {"content": "hello"})
        await engine.wait_idle()
        await until(lambda: not engine.roots, seconds=10.0)
        await until(lambda: [tree() for tree in trees] == [None, None, None], seconds=10.0)  # by the sweep's collection
    finally:
        gc.enable()
        gc.unfreeze()


async def test_the_channels_of_unloaded_trees_are_dropped_and_a_tree_that_comes_back_numbers_on(serve: ServeFactory) -> None:
    """Bug pinned here: pubchan kept a channel for every dialog ever published to, and every open
    websocket a ``SeqTracker`` for every dialog whose run state it heard, so a daemon (and a panel
    left open) grew with each dialog it ever drove. Once a tree is unloaded and its events have left
    the replay buffer, neither holds anything for it; when it comes back its events are numbered above
    those the panel saw, so the panel applies its new run state."""
    served = await serve(rest_sweep_interval=0.05)
    engine = served.engine
    engine.pubchan.buffer_events = 4  # its events leave the buffer after a few others
    panel = await served.ws()  # open all along, following nothing: it hears the run states
    hub = served.client.app[HUB]
    roots = []
    for _ in range(3):
        _, created = await served.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
        roots.append(created["rootId"])
        await served.post(f"/api/dialogs/{created['rootId']}/messages", {"content": "hello"})
        await engine.wait_idle()
    await until(lambda: not engine.roots, seconds=10.0)
    _, filler = await served.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
    await served.post(f"/api/dialogs/{filler['rootId']}/messages", {"content": "hello"})  # fills the buffer
    await engine.wait_idle()
    await until(lambda: not engine.roots, seconds=10.0)
    assert not engine.pubchan.channel_keys() & set(roots)
    assert not {key for conn in hub.connections for key in conn.trackers} & set(roots)

    first = roots[0]
    heard = max(e["seq"] for e in panel.events_of(first) if e["type"] == "dlg_run_state_evt")
    await served.post(f"/api/dialogs/{first}/messages", {"content": "hello"})
    idle = await panel.wait_for(
        lambda m: m.get("type") == "dlg_run_state_evt" and m["dialog"]["selfId"] == first and m["seq"] > heard
        and m["runState"]["kind"] == "idle",
        10,
    )
    assert idle["epoch"] == panel.seen("welcome")[0]["epoch"]
    await engine.wait_idle()
    assert len(_sayings((await served.get(f"/api/dialogs/{first}"))[1])) == 2


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_tree_is_unloaded_after_two_quiet_sweep_intervals_by_default(serve: ServeFactory) -> None:
    """Bug pinned here: the sweep ran every 10 s and unloaded a tree at the second sweep that found it
    at rest, so every tree a burst of work left behind stayed in memory for 10–20 s; a daemon that drove
    1,000 dialogs one after another held hundreds at once, and CPython's allocator kept that peak's
    arenas (69.6 MiB after 1,000 dialogs, 71.0 after 2,000). With the daemon's own sweep settings a
    tree is now gone within about a second of quiet."""
    served = await serve()  # the daemon's defaults: a sweep every SWEEP_SECONDS
    engine = served.engine
    assert SWEEP_SECONDS <= 0.5
    _, created = await served.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
    await served.post(f"/api/dialogs/{created['rootId']}/messages", {"content": "hello"})
    await engine.wait_idle()
    # a generous bound for a loaded machine; the sweep settings give 1–1.5 s
    await until(lambda: created["rootId"] not in engine.roots, seconds=8.0)
    assert len(_sayings((await served.get(f"/api/dialogs/{created['rootId']}"))[1])) == 1


async def test_a_tree_handed_out_or_busy_lately_is_not_unloaded_under_its_holder(serve: ServeFactory) -> None:
    """Bug pinned here: a tree was unloaded at a sweep if it had been loaded and at rest at the previous
    one, however recently it was handed out. A request that fetched a dialog of a long-loaded tree and
    then awaited (a durable write, a lock) could find the tree forgotten meanwhile: what it wrote went
    into a copy no one else saw, while the next request read the files into a new one. A tree is now
    unloaded only after two sweep intervals with no fetch, no display and no work."""
    served = await serve(rest_sweep_interval=3600)  # the test sweeps itself, on its own clock
    engine = served.engine
    clock = _Clock()
    resting = RestingTrees(engine, lambda: set(), clock)
    _, created = await served.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
    root_id = created["rootId"]
    await served.post(f"/api/dialogs/{root_id}/messages", {"content": "hello"})
    await engine.wait_idle()
    engine.fetched_at[root_id] = clock.now  # as if handed out at the clock's now (engine uses time.monotonic)

    assert resting.sweep(quiet_for=1.0) == []
    clock.now += 0.9
    assert resting.sweep(quiet_for=1.0) == []
    dialog = engine.get_dialog(root_id)  # a request takes the dialog…
    engine.fetched_at[root_id] = clock.now
    clock.now += 0.9
    assert resting.sweep(quiet_for=1.0) == []  # …and holds it across an await: the tree stays
    assert engine.roots[root_id] is dialog

    async with dialog.drive_mutex:  # busy at a sweep: its quiet starts again afterwards
        clock.now += 5.0
        assert resting.sweep(quiet_for=1.0) == []
    clock.now += 0.5
    assert resting.sweep(quiet_for=1.0) == []
    clock.now += 0.5
    assert resting.sweep(quiet_for=1.0) == [root_id]
    assert root_id not in engine.roots and root_id not in engine.fetched_at


async def test_a_displayed_tree_stays_and_its_quiet_starts_when_the_panel_leaves(serve: ServeFactory) -> None:
    served = await serve(rest_sweep_interval=3600)
    engine = served.engine
    clock = _Clock()
    shown: set[str] = set()
    resting = RestingTrees(engine, lambda: shown, clock)
    _, created = await served.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
    root_id = created["rootId"]
    await served.post(f"/api/dialogs/{root_id}/messages", {"content": "hello"})
    await engine.wait_idle()
    engine.fetched_at[root_id] = clock.now
    shown.add(root_id)
    clock.now += 60.0
    assert resting.sweep(quiet_for=1.0) == []
    shown.clear()
    assert resting.sweep(quiet_for=1.0) == []  # the panel just left
    clock.now += 1.0
    assert resting.sweep(quiet_for=1.0) == [root_id]


async def test_a_slow_collection_is_not_repeated_at_every_sweep_and_the_garbage_still_goes(
    serve: ServeFactory, monkeypatch: Any
) -> None:
    """A full collection after every sweep that unloaded trees cost ~120 ms with 900,000 objects alive;
    at a sweep every half second that could be a quarter of the daemon's time. A collection now waits
    until the time since the last one is ten times what that one took, and is never skipped."""
    served = await serve(rest_sweep_interval=3600)
    engine = served.engine
    clock = _Clock()
    resting = RestingTrees(engine, lambda: set(), clock)
    collections: list[float] = []

    def slow_collect(*_: Any) -> int:
        collections.append(clock.now)
        clock.now += 0.1  # each collection takes a tenth of a second
        return 0

    monkeypatch.setattr(gc, "collect", slow_collect)
    roots = []
    for _ in range(2):
        _, created = await served.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
        roots.append(created["rootId"])
    await engine.wait_idle()
    for root_id in roots:
        engine.fetched_at[root_id] = clock.now
    assert resting.sweep(quiet_for=1.0) == [] and collections == []
    clock.now += 0.5
    engine.fetched_at[roots[1]] = clock.now  # fetched meanwhile: quiet half a second later
    clock.now += 0.5
    assert resting.sweep(quiet_for=1.0) == [roots[0]] and collections == [1001.0]  # a 0.1 s collection…
    clock.now += 0.5
    assert resting.sweep(quiet_for=1.0) == [roots[1]] and collections == [1001.0]  # …waits 1 s for the next
    clock.now += 0.5
    assert resting.sweep(quiet_for=1.0) == [] and collections == pytest.approx([1001.0, 1002.1])  # the due one ran
    clock.now += 5.0
    assert resting.sweep(quiet_for=1.0) == [] and len(collections) == 2  # nothing unloaded: none due
