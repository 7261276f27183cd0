"""The offline ``scripted`` provider: a YAML response database in the workspace.

File: ``<rtws>/<baseUrl>/<modelKey>.yaml`` (template: ``.minds/scripted/demo.yaml``), reloaded when it
changes. Each entry matches the *last* context message on its role (``user`` or ``tool``) and text
(the assistant's own output of a generation cut short is skipped: a resumed reply answers the same message),
optionally only for one agent; the first matching entry wins::

    pace: {delay_ms: 25, chunk_chars: 4}   # optional: how fast replies stream (default 0 ms, 24 chars);
                                           # DOMINDS_SCRIPTED_PACE=0 drops the delay (tests)
    responses:
      - message: "hello"            # exact match, case and surrounding space ignored
        # or contains: "part"  /  regex: "^Hi @(\\w+)" (the response and function-call arguments may echo groups: "{1}")
        role: user                  # default user; `tool` matches a function result
        agent: lead                 # optional
        response: "Hi! I am the lead."   # shorthand for one saying segment
        stream:                      # or explicit segments, in order
          - thinking: "Let me think"
          - saying: "!?@researcher find X\n"
          - func_call: {name: add_reminder, arguments: {content: "remember X"}}
        usage: {input_tokens: 100, output_tokens: 20}   # default: estimated from characters
        delay_ms: 0                  # pause before each chunk (default: the database's pace)
        chunk_chars: 16              # saying/thinking chunk size (default: the database's pace)
        error: {kind: rejected, status: 401, message: "bad key"}   # or unavailable; stream = after segments
        finish_reason: max_tokens    # default end_turn (tool_use when it calls a function)

An unmatched message is an error (``ScriptedResponseMissing``) naming the file and the entry to add: the
dialog stops with it, visibly, instead of carrying on with a placeholder as if it were the answer. This provider is the
demo's engine and the test seam; it is product code, not a test hack.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import yaml

from dominds.llm.base import (
    ChatMessage,
    GenerationReceiver,
    GenerationRequest,
    GenerationResult,
    LlmError,
    ProviderRejected,
    ProviderUnavailable,
    StreamBroken,
)
from dominds.llm.neutral_body import NeutralBodies
from dominds.llm.wire_capture import note_sent
from dominds.store.course_records import FinishReason, Usage


@dataclass
class ScriptedEntry:
    role: str
    message: str | None
    contains: str | None
    regex: re.Pattern[str] | None
    agent: str | None
    segments: list[dict[str, Any]]
    usage: dict[str, int] | None
    delay_ms: int | None
    """Pause before each chunk; None: the database's ``pace``."""
    chunk_chars: int | None
    """Saying/thinking chunk size; None: the database's ``pace``."""
    error: dict[str, Any] | None
    finish_reason: FinishReason | None = None

    def matches(self, last: ChatMessage | None, agent_id: str) -> bool:
        if self.agent is not None and self.agent != agent_id:
            return False
        role = last.role if last else "user"
        if role != self.role:
            return False
        text = (last.content if last else "").strip()
        if self.message is not None:
            return text.lower() == self.message.strip().lower()
        if self.contains is not None:
            return self.contains.lower() in text.lower()
        if self.regex is not None:
            return self.regex.search(text) is not None
        return True  # a catch-all entry


@dataclass(frozen=True)
class Pace:
    """How fast replies stream: ``chunk_chars`` characters every ``delay_ms`` milliseconds."""

    delay_ms: int = 0
    chunk_chars: int = 24


@dataclass
class ScriptedDatabase:
    path: Path
    entries: list[ScriptedEntry] = field(default_factory=list)
    pace: Pace = field(default_factory=Pace)
    mtime_ns: int = -1
    load_error: str | None = None
    unmatched: str | None = None
    """The database's own words for a message nothing answers (``unmatched:``): the demo's says plainly
    that it answers only its examples, instead of quoting the framed prompt a workflow sent and suggesting
    an entry whose ``contains:`` (the frame's start) would match every question."""


class ScriptedResponseMissing(LlmError):
    """No entry of the database answers this message: an error the user sees (the dialog stops with it),
    never a reply that would flow on as if it were the agent's answer."""


PACE_ENV = "DOMINDS_SCRIPTED_PACE"
"""Set to ``0``, the database's ``pace`` streams without delay (tests); an entry's own ``delay_ms`` still holds."""
PARSED_ON_THE_LOOP_BYTES = 64 * 1024
"""A database smaller than this is parsed on the event loop (``ScriptedGenerator.current_database``)."""
_FAST_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser where PyYAML has it: several times faster than the Python one. It refuses a few
documents the Python one reads (a lone surrogate's escape, which tests of broken text use): those are
read again by the Python one (``_parsed``)."""
YIELD_EVERY_CHUNKS = 64
"""With no delay, the event loop runs its other work after this many chunks, as it does between a real
provider's network reads (each brings a few hundred small chunks). A reply streamed without ever yielding
held the whole daemon until it ended: no request was answered, and no chunk reached the panel, since the
group commit never ran to release their events (``tests/driver/test_long_dialogs.py``)."""


class ScriptedDatabaseError(ValueError):
    """The response database is malformed."""


def parse_pace(raw: Any, path: Path) -> Pace:
    """The database's ``pace: {delay_ms, chunk_chars}`` (default: no delay, 24 characters a chunk)."""
    pace = raw.get("pace") if isinstance(raw, dict) else None
    if pace is None:
        return Pace()
    if not isinstance(pace, dict) or not set(pace) <= {"delay_ms", "chunk_chars"}:
        raise ScriptedDatabaseError(f"{path}: `pace:` must be a mapping with delay_ms and/or chunk_chars")
    try:
        return Pace(max(0, int(pace.get("delay_ms", 0))), max(1, int(pace.get("chunk_chars", 24))))
    except (TypeError, ValueError) as exc:
        raise ScriptedDatabaseError(f"{path}: `pace:` values must be whole numbers") from exc


def parse_entries(raw: Any, path: Path) -> list[ScriptedEntry]:
    if raw is None:
        return []
    if not isinstance(raw, dict) or not isinstance(raw.get("responses", []), list):
        raise ScriptedDatabaseError(f"{path}: expected a mapping with a `responses:` list")
    entries = []
    for index, item in enumerate(raw.get("responses") or []):
        where = f"{path}: responses[{index}]"
        if not isinstance(item, dict):
            raise ScriptedDatabaseError(f"{where}: each entry must be a mapping")
        segments: list[dict[str, Any]] = []
        if "response" in item:
            segments.append({"saying": str(item["response"])})
        for seg in item.get("stream") or []:
            if (
                not isinstance(seg, dict)
                or len(seg) != 1
                or next(iter(seg)) not in ("thinking", "saying", "func_call")
            ):
                raise ScriptedDatabaseError(f"{where}: each stream item is one of thinking/saying/func_call")
            segments.append(seg)
        finish_reason = item.get("finish_reason")
        if finish_reason is not None and finish_reason not in get_args(FinishReason):
            raise ScriptedDatabaseError(
                f"{where}: finish_reason must be one of {', '.join(get_args(FinishReason))}"
            )
        regex = item.get("regex")
        try:
            compiled = re.compile(str(regex)) if regex is not None else None
        except re.error as exc:
            raise ScriptedDatabaseError(f"{where}: bad regex: {exc}") from exc
        entries.append(
            ScriptedEntry(
                role=str(item.get("role", "user")),
                message=None if item.get("message") is None else str(item["message"]),
                contains=None if item.get("contains") is None else str(item["contains"]),
                regex=compiled,
                agent=None if item.get("agent") is None else str(item["agent"]),
                segments=segments,
                usage=item.get("usage"),
                delay_ms=None if item.get("delay_ms") is None else max(0, int(item["delay_ms"])),
                chunk_chars=None if item.get("chunk_chars") is None else max(1, int(item["chunk_chars"])),
                error=item.get("error"),
                finish_reason=finish_reason,
            )
        )
    return entries


def _parsed(text: str) -> Any:
    try:
        return yaml.load(text, Loader=_FAST_YAML_LOADER)
    except yaml.YAMLError:
        return yaml.safe_load(text)  # what it says is the error a person sees


class ScriptedGenerator:
    """Generator over a scripted response database (one instance per daemon; caches parsed files)."""

    def __init__(self) -> None:
        self._databases: dict[Path, ScriptedDatabase] = {}
        self._locks: dict[Path, threading.Lock] = {}
        """Databases are parsed in worker threads (``current_database``): each one once at a time, and a
        big one being parsed never makes the loop wait to read a small one."""

    async def current_database(self, path: Path) -> ScriptedDatabase:
        """``database(path)``, a big one parsed again in a worker thread when its file changed: parsing a
        bench's 1.5 MB database on the event loop held the whole daemon for seconds. A small one (the
        demo's, a test's) is parsed on the loop, in well under a millisecond: going to a thread would let
        the group commit run meanwhile, a second round of fsyncs in that turn."""
        db = self._databases.get(path)
        try:
            info = os.stat(path)  # one stat: cheap enough here
        except OSError:
            return self.database(path)  # gone or unreadable: ``database`` says so
        if db is not None and db.mtime_ns == info.st_mtime_ns:
            return db
        if info.st_size < PARSED_ON_THE_LOOP_BYTES:
            return self.database(path)
        return await asyncio.to_thread(self.database, path)

    def database(self, path: Path) -> ScriptedDatabase:
        with self._locks.setdefault(path, threading.Lock()):
            return self._database(path)

    def _database(self, path: Path) -> ScriptedDatabase:
        db = self._databases.setdefault(path, ScriptedDatabase(path))
        try:
            mtime = path.stat().st_mtime_ns
        except FileNotFoundError:
            db.entries, db.mtime_ns, db.load_error = [], -1, None
            return db
        if mtime != db.mtime_ns:
            try:
                raw = _parsed(path.read_text(encoding="utf-8"))
                db.entries, db.pace = parse_entries(raw, path), parse_pace(raw, path)
                unmatched = raw.get("unmatched") if isinstance(raw, dict) else None
                db.unmatched = " ".join(unmatched.split()) if isinstance(unmatched, str) and unmatched.strip() else None
                db.load_error = None
            except (yaml.YAMLError, ScriptedDatabaseError, ValueError, TypeError) as exc:
                db.entries, db.pace, db.load_error = [], Pace(), " ".join(str(exc).split())
            db.mtime_ns = mtime
        return db

    def db_path(self, request: GenerationRequest) -> Path:
        base = str(request.provider_config.get("baseUrl") or ".minds/scripted")
        return Path(request.rtws_root) / base / f"{request.model_key}.yaml"

    async def generate(self, request: GenerationRequest, receiver: GenerationReceiver) -> GenerationResult:
        sent = _NEUTRAL_BODIES.build(request)
        note_sent("SCRIPTED", "scripted:", sent.data)
        path = self.db_path(request)
        db = await self.current_database(path)
        candidates = answered_candidates(request.messages)
        found = next(
            ((e, m) for m in candidates for e in db.entries if e.matches(m, request.agent_id)), None
        )
        if found is None:
            prompt = next((m for m in candidates if not is_note(m)), candidates[0] if candidates else None)
            raise ScriptedResponseMissing(_missing_text(path, Path(request.rtws_root), db, prompt, request.agent_id))
        entry, last = found
        if entry.error and entry.error.get("kind") != "stream":
            _raise_error(entry.error)
        completion_chars = 0
        called = False
        groups = _regex_groups(entry, last)
        pace = db.pace if os.environ.get(PACE_ENV) != "0" else Pace(0, db.pace.chunk_chars)
        delay_ms = pace.delay_ms if entry.delay_ms is None else entry.delay_ms
        chunk_chars = entry.chunk_chars or pace.chunk_chars
        for seg in entry.segments:
            kind, value = next(iter(seg.items()))
            if kind == "func_call":
                call = value if isinstance(value, dict) else {}
                args = _fill_in(call.get("arguments", {}), groups)
                args_json = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                # Unique like a real provider's ids: the same script line may run many times in one dialog.
                call_id = str(call.get("id") or f"call-{secrets.token_hex(6)}")
                await receiver.func_call(call_id, str(call.get("name", "")), args_json)
                completion_chars += len(args_json)
                called = True
                continue
            text = _fill_groups(str(value), groups)
            completion_chars += len(text)
            start, chunk, finish = (
                (receiver.thinking_start, receiver.thinking_chunk, receiver.thinking_finish)
                if kind == "thinking"
                else (receiver.saying_start, receiver.saying_chunk, receiver.saying_finish)
            )
            await start()
            for number, offset in enumerate(range(0, len(text), chunk_chars), 1):
                if delay_ms:
                    await asyncio.sleep(delay_ms / 1000)
                elif number % YIELD_EVERY_CHUNKS == 0:
                    await asyncio.sleep(0)
                await chunk(text[offset : offset + chunk_chars])
            await finish()
        if entry.error:  # kind: stream — fails after its segments were streamed
            _raise_error(entry.error)
        return GenerationResult(
            usage=_usage(entry, len(request.system_prompt) + sent.content_chars, completion_chars),
            model=request.model_name,
            finish_reason=entry.finish_reason or ("tool_use" if called else "end_turn"),
        )


def is_note(message: ChatMessage) -> bool:
    """A note of the runtime's (the previous reply was cut), not a message a person or a teammate wrote."""
    return message.runtime_note


def answered_candidates(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The messages a reply may answer, the likeliest first: entries are tried on each in turn.

    Normally that is the last message alone. After a generation was cut short (a crash, a stop, a
    stream that broke) the context ends with what the model had already produced (its thinking, part
    of its text) and possibly the runtime's note that it was cut; the resumed generation answers the
    same message as the reply it replaces, unless an entry answers the note itself.
    """
    out: list[ChatMessage] = []
    for message in reversed(messages):
        if message.role == "assistant":
            continue
        out.append(message)
        if not is_note(message):
            break
    return out or messages[-1:]


def _regex_groups(entry: ScriptedEntry, last: ChatMessage | None) -> tuple[str, ...]:
    """The groups a ``regex`` entry captured from the message it matched (for ``{1}`` in its response)."""
    if entry.regex is None or last is None:
        return ()
    found = entry.regex.search(last.content.strip())
    return tuple(g or "" for g in found.groups()) if found else ()


def _fill_in(value: Any, groups: tuple[str, ...]) -> Any:
    """A function call's arguments with the groups filled into every string (``{1}``, as in a response)."""
    if isinstance(value, str):
        return _fill_groups(value, groups)
    if isinstance(value, dict):
        return {k: _fill_in(v, groups) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill_in(v, groups) for v in value]
    return value


def _fill_groups(text: str, groups: tuple[str, ...]) -> str:
    for number, group in enumerate(groups, start=1):
        text = text.replace(f"{{{number}}}", group)
    return text


def _raise_error(error: dict[str, Any]) -> None:
    kind = str(error.get("kind", "rejected"))
    message = str(error.get("message", "scripted error"))
    if kind == "rejected":
        raise ProviderRejected(
            message, status=int(error.get("status", 400)), fix_hint=str(error.get("hint", ""))
        )
    if kind == "unavailable":
        raise ProviderUnavailable(message)
    raise StreamBroken(message)


def _usage(entry: ScriptedEntry, prompt_chars: int, completion_chars: int) -> Usage:
    if entry.usage:
        return Usage.model_validate(entry.usage)
    return Usage(input_tokens=(prompt_chars + 3) // 4, output_tokens=(completion_chars + 3) // 4)


def _missing_text(path: Path, rtws_root: Path, db: ScriptedDatabase, last: ChatMessage | None, agent_id: str) -> str:
    """One line: which database, why nothing answered, and the entry that would."""
    try:
        where = path.relative_to(rtws_root).as_posix()
    except ValueError:
        where = str(path)
    if db.load_error:
        return f"the scripted database {where} does not load, so @{agent_id} has no answer: {db.load_error}"
    if db.mtime_ns < 0:
        return f"no scripted database {where} for @{agent_id}: create it with a `responses:` list (`dominds docs configuration`)"
    if db.unmatched:
        return db.unmatched
    role = last.role if last else "user"
    text = " ".join((last.content if last else "").split())
    key, shown = ("message", text) if len(text) <= 120 else ("contains", text[:60])
    quoted = json.dumps(shown, ensure_ascii=False)
    return (
        f"no scripted response for @{agent_id}: nothing in {where} matches its last {role} message {quoted}; "
        f"add an entry under `responses:` such as {{role: {role}, agent: {agent_id}, {key}: {quoted}, response: \"…\"}}"
    )


_NEUTRAL_BODIES = NeutralBodies()
"""What the scripted provider "receives": the provider-neutral request as JSON (no HTTP is involved),
recorded as the generation's request (``llm/wire_capture.py``); built per new message only."""
