"""pubchan keeps a channel only while its dialog is loaded or has events in the replay buffer.

Bug pinned here: a ``_Channel`` was created for every dialog ever published to and never dropped, so
a daemon's memory grew with every dialog it drove, however long ago (and each websocket kept a
``SeqTracker`` per such dialog). A dropped channel that comes back must still number its events above
every seq it handed out before: the panel applies a run state only if its seq is higher than the
one it shows, and a client resuming ``since`` a seq must get exactly what it missed or a replay.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dominds.pubchan import GLOBAL, PubChan

DIALOGS = ["a", "b", "c"]
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), st.sampled_from([*DIALOGS, GLOBAL])),
        st.tuples(st.just("forget"), st.sampled_from(DIALOGS)),
        st.tuples(st.just("resume"), st.sampled_from(DIALOGS)),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(OPS, st.integers(min_value=1, max_value=6))
def test_channels_are_dropped_once_forgotten_and_empty_and_seqs_never_go_back(ops: list[tuple[str, str]], cap: int) -> None:
    chan = PubChan(buffer_events=cap)
    published: dict[str, list[dict[str, Any]]] = {key: [] for key in [*DIALOGS, GLOBAL]}
    forgotten: set[str] = set()
    order: list[str] = []
    """The channel of each event published, in order: the buffer holds the last ``cap`` of them."""
    for op, key in ops:
        if op == "publish":
            event = chan.publish((key, key) if key else None, {"type": "x"})
            history = published[key]
            assert not history or event["seq"] > history[-1]["seq"], "a seq repeated or went back"
            history.append(event)
            order.append(key)
            forgotten.discard(key)
        elif op == "forget":
            chan.forget([key])
            forgotten.add(key)
        else:  # a client resuming from each seq it could have seen: exact, or a replay (None)
            for seen in [chan.seq_floor(key), *(e["seq"] for e in published[key])]:
                missed = chan.events_since(key, chan.epoch, seen)
                if missed is not None:
                    assert missed == [e for e in published[key] if e["seq"] > seen]
        buffered = set(order[-cap:])
        assert chan.channel_keys() == {GLOBAL} | {k for k in DIALOGS if k not in forgotten and published[k]} | buffered
        assert chan.last_seq(key) >= max([chan.seq_floor(key)] + [e["seq"] for e in published[key]][-1:])


def test_a_fresh_daemon_run_numbers_each_dialog_from_one_until_a_channel_was_dropped() -> None:
    chan = PubChan(buffer_events=1)
    assert [chan.publish(("a", "a"), {"type": "x"})["seq"] for _ in range(3)] == [1, 2, 3]
    assert chan.publish(("b", "b"), {"type": "x"})["seq"] == 1
    chan.forget(["a"])  # its events left the buffer: dropped at once
    assert chan.channel_keys() == {GLOBAL, "b"}
    assert chan.publish(("a", "a"), {"type": "x"})["seq"] > 3
