"""``requests-NNN.jsonl``: the exact request each generation of a course sent to its provider, stored compactly.

A provider request repeats the whole conversation, so a dialog's requests, stored whole, would grow with
the square of its length. Here a request body is cut into chunks at the seams of its JSON (between two
objects of an array, after an array, before a ``cache_control`` mark), each chunk is stored once per
file under its hash, and each line lists its chunks as runs of the previous line's list plus the new
ones. What a line costs is what changed since the previous request, not the whole request. The cuts
only decide what is shared: a body is rebuilt by joining its chunks, byte for byte, whatever they are,
and checked against its SHA-256.

A ``RequestRecord`` line (format version ``REQUEST_LOG_VERSION``) is appended when a generation's request
goes out, so a generation cut by a crash still shows what it sent; a ``RequestEndRecord`` line when its
provider call ends (also when it failed: a refused request is what one wants to see) adds the attempts and
the timing. A retry that sent another body appends a new ``RequestRecord``; the last one wins. A torn last
line (a crash mid-append) is ignored, as in course files. Headers are never recorded.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from dominds.rtws import STATE_FILE_MODE
from dominds.store.atomic import append_line, write_atomic
from dominds.store.errors import CorruptFileError
from dominds.store.fileio import read_text
from dominds.store.records import Record

REQUEST_LOG_VERSION = 1
CUT = re.compile(rb"(?=,\s*\"cache_control\")|(?<=\")(?=\}\s*(?:\]|,\s*\{))|\}(?=\s*,\s*\{|\s*\])|\],\s*(?=\")")
"""Where a body is cut: before a ``cache_control`` and after a string that ends an object of an array
(Anthropic's cache marks move from one request to the next: the block before a mark stays the same, and
an array's last object reads the same once another follows it; these empty matches come first, or the
``}`` after the string would be taken instead); after an object that
another object or the array's end follows (the comma goes with the next object, so an array's last object
is the same chunk once another one follows it); after ``],`` before a key."""
CHUNK_ID_BYTES = 12


def request_log_name(course: int) -> str:
    return f"requests-{course:03d}.jsonl"


Run = tuple[int, int] | str
"""In a line's ``layout``: ``[start, count]``, chunks of the previous line's list; or a chunk id."""


class RequestRecord(Record):
    """One generation's request as sent (the body is in ``layout``/``chunks``; see the module docstring)."""

    type: Literal["request"] = "request"
    v: int = REQUEST_LOG_VERSION
    """Format version."""
    ts: str
    """ISO time the provider call ended."""
    course: int
    genseq: int
    provider: str
    """Provider key (``.minds/llm.yaml``)."""
    api_type: str
    """``anthropic``, ``openai``, ``openai-compatible``, ``openai-responses``, or ``scripted`` (the test
    provider, whose "body" is the provider-neutral request as JSON)."""
    model: str
    """Model key."""
    method: str
    url: str
    """Where it went: scheme, host, port and path (no query, no user info)."""
    attempts: int = 1
    """How many times it was sent (the retry window resends it; the last one is recorded); the
    generation's ``RequestEndRecord`` has the final count."""
    size: int = 0
    """Bytes of the body."""
    sha256: str = ""
    """Of the body."""
    first_output_ms: int | None = None
    """From the request to the model's first output (thinking, text or a tool call); none if there was none
    (set from the ``RequestEndRecord`` when the body is read)."""
    total_ms: int | None = None
    """From the request to the end of the provider call (likewise)."""
    layout: list[tuple[int, int] | str] = []
    """The body's chunks: runs of the previous line's list and chunk ids, in order."""
    chunks: dict[str, str] = {}
    """Chunks first used by this line, by id (the UTF-8 text of the body's bytes)."""


class RequestEndRecord(Record):
    """The end of a generation's provider call: how many attempts it took and how long."""

    type: Literal["request_end"] = "request_end"
    v: int = REQUEST_LOG_VERSION
    ts: str
    genseq: int
    attempts: int
    first_output_ms: int | None = None
    """From the first attempt to the model's first output; none if there was none."""
    total_ms: int | None = None
    """From the first attempt to the end of the provider call."""


LogLine = RequestRecord | RequestEndRecord


@dataclass(frozen=True)
class StoredRequest:
    record: RequestRecord
    body: bytes


def split_body(body: bytes, start: int = 0) -> list[bytes]:
    """``body[start:]`` cut at its seams (``start`` is 0 or a seam of ``body``: the lookarounds see before it)."""
    cuts = [m.end() for m in CUT.finditer(body, start)]
    pieces: list[bytes] = []
    for cut in cuts:
        if cut > start:
            pieces.append(body[start:cut])
            start = cut
    if start < len(body) or not pieces:
        pieces.append(body[start:])
    return pieces


def chunk_id(piece: bytes) -> str:
    return hashlib.blake2b(piece, digest_size=CHUNK_ID_BYTES).hexdigest()


def _layout_from(where: dict[str, int], previous: list[str], current: list[str]) -> list[Run]:
    """``current`` as runs of ``previous`` (``(start, count)``) and ids that are not in a run; ``where`` is
    each previous id's first position (kept from one request to the next by ``RequestLog``)."""
    layout: list[Run] = []
    i = 0
    while i < len(current):
        start = where.get(current[i])
        if start is None:
            layout.append(current[i])
            i += 1
            continue
        count = 1
        while i + count < len(current) and start + count < len(previous) and current[i + count] == previous[start + count]:
            count += 1
        layout.append((start, count))
        i += count
    return layout


def _common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix of ``a`` and ``b``: a binary search of ``startswith`` over
    memoryview slices (memcmp, no copy). Each step compares only the bytes not yet known equal, so the
    whole search reads each byte about once (comparing from the start at every step read the body ~20
    times: 2 ms of a turn at 10,000 messages)."""
    view = memoryview(a)
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if b.startswith(view[low:middle], low):
            low = middle
        else:
            high = middle - 1
    return low


def expand_layout(previous: list[str], layout: list[tuple[int, int] | str]) -> list[str]:
    ids: list[str] = []
    for run in layout:
        if isinstance(run, str):
            ids.append(run)
        else:
            start, count = run
            if start < 0 or count < 0 or start + count > len(previous):
                raise ValueError(f"run {list(run)} is outside the previous request's {len(previous)} chunks")
            ids.extend(previous[start : start + count])
    return ids


@dataclass
class RequestLog:
    """Appends the requests of one course file; knows the chunks already stored (read once, lazily)."""

    path: Path
    _known: set[str] = field(default_factory=set)
    _previous: list[str] = field(default_factory=list)
    _loaded: bool = False
    # The previous body, the end offset of each of its chunks and where each chunk id first is: the next
    # request repeats most of it, so only what follows the common prefix is cut, hashed and compared (a
    # turn's work does not grow with the conversation; tests/driver/test_long_dialogs.py).
    _previous_body: bytes = b""
    _previous_ends: list[int] = field(default_factory=list)
    _where: dict[str, int] = field(default_factory=dict)
    # SHA-256 state after the previous body's first ``_hashed`` bytes (where it began to differ from the
    # one before): the next body repeats at least those, so only what follows is hashed again.
    _hashed: int = 0
    _hash_state: hashlib._Hash | None = None

    def append(self, record: RequestRecord, body: bytes) -> RequestRecord:
        """Store ``body`` as ``record``'s (its ``size``, ``sha256``, ``layout`` and ``chunks`` are set here)."""
        self.load()
        keep = self._kept_chunks(body)
        start = self._previous_ends[keep - 1] if keep else 0
        pieces = split_body(body, start)
        tail = [chunk_id(piece) for piece in pieces]
        new = {cid: piece.decode("utf-8") for cid, piece in zip(tail, pieces, strict=True) if cid not in self._known}
        layout: list[Run] = [(0, keep)] if keep else []
        layout.extend(_layout_from(self._where, self._previous, tail))
        stored = record.model_copy(
            update={
                "size": len(body),
                "sha256": self._sha256(body, start),
                "layout": layout,
                "chunks": new,
            }
        )
        append_line(self.path, json.dumps(stored.to_disk(), ensure_ascii=False, separators=(",", ":")))
        self._known.update(new)
        for cid in self._previous[keep:]:  # ids first seen in the replaced part are no longer there
            if self._where.get(cid, -1) >= keep:
                del self._where[cid]
        for index, cid in enumerate(tail, keep):
            self._where.setdefault(cid, index)
        # In place: copying the kept part of both lists was two passes over every chunk of the body
        # (~10,000 at 10,000 messages) at every request.
        ends = self._previous_ends
        del ends[keep:]
        for piece in pieces:
            start += len(piece)
            ends.append(start)
        del self._previous[keep:]
        self._previous.extend(tail)
        self._previous_body = body
        return stored

    def load(self) -> None:
        """Read what the file already holds (once): the chunks stored, the previous request's. A long
        dialog's log is read whole (every line, each laid out over the one before), so a reader of the
        dialog may do it ahead, off the event loop (``driver/loaded_trees.py``)."""
        if self._loaded:
            return
        texts: dict[str, str] = {}
        for line in _lines(self.path, _read_or_empty(self.path)):
            if isinstance(line, RequestRecord):
                texts.update(line.chunks)
                self._previous = expand_layout(self._previous, line.layout)
        self._known.update(texts)
        self._loaded = True
        self._where = {}
        for index, cid in enumerate(self._previous):
            self._where.setdefault(cid, index)
        self._resume(texts)

    def _resume(self, texts: dict[str, str]) -> None:
        """The previous body rebuilt from the file's chunks, as an append leaves it: the first request
        after the log is opened again (a daemon's restart) is then cut and hashed only past what it
        repeats, like the others (cut whole, it was 160 ms of a 10,000-message body, against 5 ms). A
        chunk the file does not hold (a damaged line) leaves nothing to rebuild: that request is cut whole."""
        try:
            pieces = [texts[cid].encode("utf-8") for cid in self._previous]
        except KeyError:
            return
        at = 0
        for piece in pieces:
            at += len(piece)
            self._previous_ends.append(at)
        self._previous_body = b"".join(pieces)

    def _sha256(self, body: bytes, start: int) -> str:
        """SHA-256 of ``body``, which repeats the previous body's first ``start`` bytes; keeps the state at
        ``start`` for the next body."""
        if self._hash_state is not None and self._hashed <= start:
            state = self._hash_state.copy()
            state.update(memoryview(body)[self._hashed : start])
        else:
            state = hashlib.sha256(memoryview(body)[:start])
        self._hashed, self._hash_state = start, state.copy()
        state.update(memoryview(body)[start:])
        return state.hexdigest()

    def _kept_chunks(self, body: bytes) -> int:
        """How many of the previous body's chunks ``body`` repeats at its start (the last of those is cut
        again: the bytes after it, which decide its seam, may differ)."""
        before = self._previous_body
        if not before:
            return 0
        common = _common_prefix(before, body)
        return max(0, bisect.bisect_right(self._previous_ends, common) - 1)

    def append_end(self, end: RequestEndRecord) -> None:
        append_line(self.path, json.dumps(end.to_disk(), ensure_ascii=False, separators=(",", ":")))


def read_request(path: Path, genseq: int) -> StoredRequest | None:
    """The request generation ``genseq`` sent (the last one recorded for it), or None."""
    text = read_text(path)
    if text is None:
        return None
    chunks: dict[str, str] = {}
    previous: list[str] = []
    found: tuple[RequestRecord, list[str]] | None = None
    for line in _lines(path, text):
        if isinstance(line, RequestEndRecord):
            if found is not None and line.genseq == genseq:
                update = {"attempts": line.attempts, "first_output_ms": line.first_output_ms, "total_ms": line.total_ms}
                found = (found[0].model_copy(update=update), found[1])
            continue
        chunks.update(line.chunks)
        try:
            previous = expand_layout(previous, line.layout)
        except ValueError as exc:
            raise CorruptFileError(path, f"request of generation {line.genseq}: {exc}") from exc
        if line.genseq == genseq:
            found = (line, previous)
    if found is None:
        return None
    record, ids = found
    missing = [cid for cid in ids if cid not in chunks]
    if missing:
        raise CorruptFileError(path, f"request of generation {genseq}: chunk {missing[0]} is not stored")
    body = b"".join(chunks[cid].encode("utf-8") for cid in ids)
    if hashlib.sha256(body).hexdigest() != record.sha256 or len(body) != record.size:
        raise CorruptFileError(path, f"request of generation {genseq}: the rebuilt body does not match its SHA-256")
    return StoredRequest(record.model_copy(update={"layout": [], "chunks": {}}), body)


def copy_requests_before(source: Path, target: Path, genseq: int | None) -> int:
    """Write at ``target`` the lines of ``source`` before the request of generation ``genseq`` (all of them
    for ``None``): what a fork copies with the history it starts from. The lines are self-contained as a
    prefix (each refers only to the lines before it). Returns the number of lines written."""
    text = read_text(source)
    if not text:
        return 0
    kept: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError:
            break  # a torn last line
        if genseq is not None and isinstance(raw, dict) and raw.get("type") == "request" and raw.get("genseq", 0) >= genseq:
            break
        kept.append(line)
    if kept:
        write_atomic(target, "".join(f"{line}\n" for line in kept), mode=STATE_FILE_MODE)
    return len(kept)


def recorded_genseqs(path: Path) -> list[int]:
    text = read_text(path)
    return [] if text is None else sorted({line.genseq for line in _lines(path, text) if isinstance(line, RequestRecord)})


def _read_or_empty(path: Path) -> str:
    return read_text(path) or ""


def _lines(path: Path, text: str) -> list[LogLine]:
    lines = text.split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    records: list[LogLine] = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            raw: Any = json.loads(line)
        except json.JSONDecodeError as exc:
            if index == last:
                break  # torn tail: the append never completed
            raise CorruptFileError(path, f"bad JSON line: {exc.msg}", line=index + 1) from exc
        try:
            kind = RequestEndRecord if isinstance(raw, dict) and raw.get("type") == "request_end" else RequestRecord
            records.append(kind.model_validate(raw))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise CorruptFileError(path, f"bad request record ({where}: {err['msg']})", line=index + 1) from exc
    return records
