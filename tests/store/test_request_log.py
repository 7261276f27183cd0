"""``requests-NNN.jsonl``: bodies come back byte for byte, shared parts are stored once, damage is reported."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dominds.store.errors import CorruptFileError
from dominds.store.request_log import (
    RequestEndRecord,
    RequestLog,
    RequestRecord,
    read_request,
    recorded_genseqs,
    split_body,
)


def record(genseq: int) -> RequestRecord:
    return RequestRecord(
        ts="2026-11-29T00:00:00Z", course=1, genseq=genseq, provider="p", api_type="anthropic", model="m",
        method="POST", url="http://127.0.0.1:1/v1/messages",
    )


def body(turns: int, marker_at: int | None = None) -> bytes:
    messages = []
    for n in range(turns):
        block: dict[str, object] = {"type": "text", "text": f"turn {n} " + "x" * 500}
        if n == marker_at:
            block["cache_control"] = {"type": "ephemeral"}
        messages.append({"role": "user" if n % 2 == 0 else "assistant", "content": [block]})
    return json.dumps({"model": "m", "messages": messages, "max_tokens": 10, "stream": True}, ensure_ascii=False).encode()


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=40, deadline=None)
@given(st.lists(JSONISH, min_size=1, max_size=5), st.sampled_from([None, 2]))
def test_any_sequence_of_bodies_comes_back_byte_for_byte(tmp_path_factory: pytest.TempPathFactory, values: list[object], indent: int | None) -> None:
    path = tmp_path_factory.mktemp("log") / "requests-001.jsonl"
    bodies = [json.dumps({"messages": values[: n + 1]}, ensure_ascii=False, indent=indent).encode() for n in range(len(values))]
    log = RequestLog(path)
    for genseq, each in enumerate(bodies, start=1):
        log.append(record(genseq), each)
    for genseq, each in enumerate(bodies, start=1):
        stored = read_request(path, genseq)
        assert stored is not None and stored.body == each
    assert b"".join(split_body(bodies[-1])) == bodies[-1]


EDITS = st.lists(
    st.tuples(st.sampled_from(["grow", "cut", "change", "new"]), st.integers(0, 10), st.text(max_size=6)),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(EDITS)
def test_each_records_sha256_is_its_bodys_whatever_it_shares_with_the_one_before(tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, int, str]]) -> None:
    """The SHA-256 goes on from the state kept where the previous body began to differ (hashing the whole
    body was 1.6 ms of a turn at 10,000 messages); a body that shares less (cut, changed early, unrelated)
    must still get its own digest."""
    path = tmp_path_factory.mktemp("log") / "requests-001.jsonl"
    log = RequestLog(path)
    messages: list[str] = ["first"]
    for genseq, (kind, place, text) in enumerate(edits, start=1):
        if kind == "grow":
            messages = messages + [text] * (place + 1)
        elif kind == "cut":
            messages = messages[: place % (len(messages) + 1)]
        elif kind == "change" and messages:
            messages = [*messages[: place % len(messages)], text + "!", *messages[place % len(messages) + 1 :]]
        else:
            messages = [text]
        each = json.dumps({"m": "x", "messages": [{"text": t} for t in messages], "tools": []}).encode()
        stored = log.append(record(genseq), each)
        assert stored.sha256 == hashlib.sha256(each).hexdigest() and stored.size == len(each)
    again = read_request(path, len(edits))
    assert again is not None and again.record.sha256 == hashlib.sha256(again.body).hexdigest()


def test_a_growing_conversation_stores_each_part_once(tmp_path: Path) -> None:
    path = tmp_path / "requests-001.jsonl"
    log = RequestLog(path)
    bodies = [body(n, marker_at=n - 1) for n in range(1, 30)]
    for genseq, each in enumerate(bodies, start=1):
        log.append(record(genseq), each)
    size = path.stat().st_size
    assert size < 2 * len(bodies[-1]), "about the last request's size: each block once, and each line's own fields"
    assert sum(map(len, bodies)) > 8 * size
    assert recorded_genseqs(path) == list(range(1, 30))
    # A new writer (a restarted daemon) goes on from what the file holds.
    RequestLog(path).append(record(30), body(30, marker_at=29))
    assert path.stat().st_size - size < 3 * 600, "only the new turn and the moved mark are stored"
    stored = read_request(path, 30)
    assert stored is not None and stored.body == body(30, marker_at=29)
    assert stored.record.genseq == 30 and stored.record.size == len(stored.body)


def test_a_torn_last_line_is_ignored_and_damage_elsewhere_reported(tmp_path: Path) -> None:
    path = tmp_path / "requests-001.jsonl"
    log = RequestLog(path)
    log.append(record(1), body(2))
    log.append(record(2), body(3))
    with path.open("ab") as file:
        file.write(b'{"type":"request","v":1,"genseq":3')  # a crash mid-append
    stored = read_request(path, 2)
    assert stored is not None and stored.body == body(3)
    assert read_request(path, 3) is None
    RequestLog(path).append(record(3), body(4))  # the torn tail is mended before the next append
    stored = read_request(path, 3)
    assert stored is not None and stored.body == body(4)

    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["chunks"] = {cid: text.replace("turn", "TURN") for cid, text in first["chunks"].items()}
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    with pytest.raises(CorruptFileError, match="does not match its SHA-256"):
        read_request(path, 1)


def test_the_end_line_gives_the_attempts_and_timing_and_a_resent_body_wins(tmp_path: Path) -> None:
    path = tmp_path / "requests-001.jsonl"
    log = RequestLog(path)
    log.append(record(1), body(2))
    stored = read_request(path, 1)
    assert stored is not None and stored.record.total_ms is None, "still running: no timing yet"
    log.append(record(1), body(3))  # a retry that sent another body
    log.append_end(RequestEndRecord(ts="2026-11-29T00:00:01Z", genseq=1, attempts=2, first_output_ms=40, total_ms=90))
    stored = read_request(path, 1)
    assert stored is not None and stored.body == body(3)
    assert (stored.record.attempts, stored.record.first_output_ms, stored.record.total_ms) == (2, 40, 90)
    assert recorded_genseqs(path) == [1]


@pytest.mark.parametrize("marker_moves", [False, True])
def test_the_first_request_after_a_restart_is_cut_only_past_what_it_repeats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marker_moves: bool) -> None:
    """The bug: a log opened again (a daemon's restart) knew the previous request's chunks but not its body,
    so the first request after it was cut and hashed whole: 160 ms of the first turn of a 10,000-message
    dialog, on the event loop, against 5 ms for the next. Held: the log opened again writes the very line
    the log that stayed open writes, and cuts only past the start the two requests share."""
    from dominds.store import request_log

    bodies = [body(n, marker_at=n - 2 if marker_moves else None) for n in (30, 31, 32)]
    stayed, reopened = tmp_path / "stayed.jsonl", tmp_path / "reopened.jsonl"
    kept = RequestLog(stayed)
    for number, each in enumerate(bodies[:2], 1):
        kept.append(record(number), each)
    reopened.write_bytes(stayed.read_bytes())
    kept.append(record(3), bodies[2])

    starts: list[int] = []
    real = request_log.split_body

    def counted(data: bytes, start: int = 0) -> list[bytes]:
        starts.append(start)
        return real(data, start)

    monkeypatch.setattr(request_log, "split_body", counted)
    RequestLog(reopened).append(record(3), bodies[2])
    assert stayed.read_text().splitlines()[-1] == reopened.read_text().splitlines()[-1]
    assert starts and starts[0] > len(bodies[2]) * 0.8, (starts, len(bodies[2]))
    stored = read_request(reopened, 3)
    assert stored is not None and stored.body == bodies[2]


def test_a_log_whose_chunks_cannot_all_be_found_cuts_the_next_request_whole(tmp_path: Path) -> None:
    """A line whose chunks are not all in the file (edited, damaged): nothing to rebuild the previous body
    from, so the next request is cut whole, as it was before, and still reads back byte for byte."""
    path = tmp_path / "requests-001.jsonl"
    log = RequestLog(path)
    log.append(record(1), body(5))
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    dropped = next(iter(first["chunks"]))
    del first["chunks"][dropped]
    path.write_text(json.dumps(first) + "\n")
    RequestLog(path).append(record(2), body(6))
    stored = read_request(path, 2)
    assert stored is not None and stored.body == body(6)
