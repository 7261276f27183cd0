"""What the dialog index knows of one dialog, read from its files: its *facts* and the *signature* of
the files they came from (``store/index.py`` keeps both per dialog).

``read_dialog`` is the one place that turns a dialog directory into facts, with the digest of the bytes
they were parsed from; ``signature`` is what says whether they are still true (the directory's mtime,
and inode, size and mtime of every file they were read from); ``content_digest`` settles the case a
signature cannot (a file rewritten in place within one clock tick, same size); ``finish_generations`` reads the tokens of a course file's generations
(``driver/usage.py`` prices them).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from typing import Any, NamedTuple

USAGE_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
STATE_FILES = ("dialog.yaml", "latest.yaml", "q4h.yaml", "subdlg.yaml", "registry.yaml", "queue.jsonl")
LATEST_SPARE = ".latest.yaml.spare"
"""``latest.yaml``'s spare (``atomic.spare_path``), named here so that ``dominds status`` imports no writer."""
Facts = dict[str, Any]


# ---------------------------------------------------------------- facts from the files


def read_state_yaml(path: str) -> Any:
    """A state file as plain data (None when missing); ``ValueError`` when it is not valid YAML."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None
    return parse_state_yaml(os.path.basename(path), data)


def parse_state_yaml(name: str, data: bytes) -> Any:
    """A state file's bytes as plain data; ``ValueError`` when they are not valid UTF-8 YAML."""
    from dominds.store import fastyaml  # only when a dialog is read (most refreshes read none)

    text = data.decode("utf-8")
    try:
        return fastyaml.load(text)
    except fastyaml.NotFastYaml:
        import yaml

        try:
            return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            raise ValueError(f"{name} is not valid YAML: {' '.join(str(exc).split())[:200]}") from exc


def queued_count(latest: dict[str, Any], log: bytes) -> int:
    """Prompts queued: ``latest.yaml``'s, then the queue log's lines replayed (store/queue_log.py; a torn
    or unreadable line counts as nothing: the loader reports it)."""
    queued = {str(p.get("msgId")) for p in latest.get("queuedPrompts") or () if isinstance(p, dict)}
    for line in log.split(b"\n"):
        try:
            entry = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if entry.get("op") == "queued":
            queued.add(str((entry.get("prompt") or {}).get("msgId")))
        elif entry.get("op") == "taken":
            queued.discard(str(entry.get("msgId")))
    return len(queued)


class Read(NamedTuple):
    """One dialog as read from its files: its facts, the digest of the bytes they came from, and the
    files a signature must watch (those bytes' files)."""

    facts: Facts
    digest: str
    watch: list[str]


class KeptCourse(NamedTuple):
    """What the index keeps of one course file it read (``facts["courses"][name]``), so that a dialog read
    again after a change reads only the course files that changed, not its whole history."""

    stat: str
    """``stat_key`` (inode.size.mtime) when it was read, at least ``settled_ns`` after its last change."""
    length: int
    digest: str
    """``file_digest`` of its bytes."""
    bad_line: int | None
    """``_bad_course_line`` of its bytes."""
    generations: list[list[Any]]
    """``finish_generations`` of its bytes."""


Kept = dict[str, KeptCourse]


class Snapshot(NamedTuple):
    present: set[str]
    """Names of the regular files of the dialog directory."""
    links: list[str]
    """Names of its symbolic links (never followed; the daemon refuses such a dialog)."""
    data: dict[str, bytes]
    """Bytes of its state and course files, as read."""
    reused: Kept
    """Course files not read because ``kept`` describes them as they still are."""


def snapshot(directory: str, kept: Kept | None = None, *, read_current: bool = False) -> Snapshot:
    """What a dialog directory holds, from one listing of it (``Snapshot``).

    A course file of ``kept`` whose ``stat`` is unchanged is not read (it was read when its mtime was
    already older than the racy window, so equal (inode, size, mtime) mean equal bytes); with
    ``read_current``, the current course is read all the same (what the daemon checks of it is checked
    anew). Facts are parsed from the bytes read and ``content_digest`` hashes the very same bytes (or
    their kept digests), so a digest always describes what the facts were read from. Raises ``OSError``
    when the directory cannot be listed. Only regular files are read (a FIFO or a device named
    ``latest.yaml`` would block a reader)."""
    present: set[str] = set()
    links: list[str] = []
    for entry in os.scandir(directory):  # one listing for the files and for the links the check refuses
        if entry.is_file(follow_symlinks=False):
            present.add(entry.name)
        elif entry.is_symlink():
            links.append(entry.name)
    data: dict[str, bytes] = {}
    reused: Kept = {}
    names = sorted(present)
    for name in names:
        if name in STATE_FILES:
            _read_into(data, directory, name)
    current = _current_course_name(data.get("latest.yaml")) if kept and read_current else None
    for name in names:
        if not _is_course(name):
            continue
        known = kept.get(name) if kept and name != current else None
        if known is not None and stat_key(f"{directory}/{name}") == known.stat:
            reused[name] = known
        else:
            _read_into(data, directory, name)
    return Snapshot(present, sorted(links), data, reused)


def _read_into(data: dict[str, bytes], directory: str, name: str) -> None:
    try:
        with open(f"{directory}/{name}", "rb") as handle:
            data[name] = handle.read()
    except (FileNotFoundError, IsADirectoryError):
        pass


def _current_course_name(latest: bytes | None) -> str:
    """The current course's file name, from ``latest.yaml``'s bytes (course 1 when it cannot be told)."""
    current: Any = 1
    try:
        parsed = parse_state_yaml("latest.yaml", latest) if latest else None
        if isinstance(parsed, dict):
            current = parsed.get("currentCourse", 1)
    except ValueError:
        pass
    return f"course-{current:03d}.jsonl" if isinstance(current, int) and not isinstance(current, bool) else "course-001.jsonl"


def file_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def content_digest(data: dict[str, bytes], reused: Kept | None = None) -> str:
    """What a dialog's state and course files hold, as one short hash (names, lengths and each file's
    ``file_digest``; a kept course file counts by its kept digest, equal to that of its bytes)."""
    pieces = {name: (len(raw), file_digest(raw)) for name, raw in data.items()}
    pieces.update({name: (known.length, known.digest) for name, known in (reused or {}).items()})
    hasher = hashlib.blake2b(digest_size=16)
    for name in sorted(pieces):
        length, digest = pieces[name]
        hasher.update(f"{name}\0{length}\0{digest}\0".encode())
    return hasher.hexdigest()


def current_digest(directory: str, kept: Kept | None = None) -> str | None:
    """``content_digest`` of what the files hold now (None if the directory cannot be listed); course
    files ``kept`` describes as they still are are not read again."""
    try:
        _present, _links, data, reused = snapshot(directory, kept)
    except OSError:
        return None
    return content_digest(data, reused)


def kept_courses(facts: Facts) -> Kept:
    """The ``KeptCourse`` entries of facts the index stored (none in facts of an older shape)."""
    out: Kept = {}
    for name, value in (facts.get("courses") or {}).items():
        try:
            out[name] = KeptCourse(*value)
        except TypeError:
            continue
    return out


def read_dialog(directory: str, kept: Kept | None = None, settled_ns: int | None = None) -> Read:
    """One dialog's facts from its files; a corrupt file becomes ``error``, never an exception.

    ``kept``: what an earlier read kept of its course files: those unchanged since are not read again
    (a dialog that changed costs its changed files, not its history). ``settled_ns``: a course file
    whose mtime is older than this is kept for the next read (a younger one may still change within
    the same mtime tick)."""
    facts: Facts = {"selfId": os.path.basename(directory)}
    try:
        present, links, data, reused = snapshot(directory, kept, read_current=True)
    except OSError as exc:
        facts.update(error=f"cannot list {directory}: {exc.strerror or exc}", runState={"kind": "error"})
        return Read(facts, "-", [])
    facts["files"] = sorted(n for n in present if n in STATE_FILES)
    strays = sorted(n for n in present if n.startswith(".") and n.endswith(".tmp"))
    if strays:  # temp files of atomic writes (a kill interrupted them, or one is being written now)
        facts["strayTemps"] = strays
    try:
        meta = _valid(data, "dialog.yaml") or {}
        latest = _valid(data, "latest.yaml") or {}
        if "latest.yaml" in data and not data["latest.yaml"].strip() and LATEST_SPARE in present:
            # a write cut short left it empty: the daemon's loader reads the spare, so recovery must load it
            raise ValueError("latest.yaml is empty (a write cut short); the daemon reads its spare when it loads the dialog")
        facts.update(
            agentId=meta.get("agentId"),
            title=latest.get("title") or meta.get("title"),
            taskDocPath=meta.get("taskDocPath"),
            createdAt=meta.get("createdAt"),
            conductor=meta.get("conductor"),
            lastModified=latest.get("lastModified"),
            currentCourse=latest.get("currentCourse", 1),
            runState=latest.get("runState") or {"kind": "idle"},
            generating=bool(latest.get("generating")),
            needsDrive=bool(latest.get("needsDrive")),
            queuedPrompts=queued_count(latest, data.get("queue.jsonl", b"")),
            inboundTellaskBacks=len(latest.get("inboundTellaskBacks") or ()),
            dead=bool(latest.get("dead")),
        )
        _check_what_the_daemon_checks(present, links, data, facts["currentCourse"])
        if meta.get("id") != meta.get("rootId"):
            assignment = meta.get("assignmentFromSup") or {}
            facts.update(
                supdialogId=meta.get("supdialogId"),
                tellaskSession=meta.get("tellaskSession"),
                callType=assignment.get("callType"),
                tellaskHead=assignment.get("tellaskHead"),
                fbr=bool(meta.get("fbr")),
            )
        if "q4h.yaml" in data:
            questions = (_valid(data, "q4h.yaml") or {}).get("questions") or []
            facts["q4h"] = [{"id": q.get("id"), "tellaskHead": q.get("tellaskHead")} for q in questions]
        if "subdlg.yaml" in data:
            pending = (_valid(data, "subdlg.yaml") or {}).get("pending") or []
            facts["pendingSubdialogs"] = [
                {k: p.get(k) for k in ("subdialogId", "agentId", "callType", "tellaskSession")} for p in pending
            ]
        if "registry.yaml" in data:
            registry = _valid(data, "registry.yaml") or {}
            facts["registry"] = [{"key": key, "subdialogId": e.get("subdialogId")} for key, e in registry.items()]
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        facts["error"] = f"{type(exc).__name__}: {exc}"
        facts.setdefault("runState", {"kind": "error", "detail": str(exc)})
    facts["generations"] = _course_usage(sorted(n for n in (*data, *reused) if _is_course(n)), data, reused, facts)
    several = sum(map(_is_course, (*data, *reused))) > 1  # a one-course dialog has no finished course to keep
    if settled_ns is not None and several and (kept_now := _keep(directory, data, reused, settled_ns, _current_course_name(data.get("latest.yaml")))):
        facts["courses"] = kept_now  # bookkeeping of the index (private), only where a course finished
    return Read(facts, content_digest(data, reused), sorted((*data, *reused)))


def _keep(directory: str, data: dict[str, bytes], reused: Kept, settled_ns: int, current: str) -> dict[str, list[Any]]:
    """``KeptCourse`` of every finished course file read whose mtime is older than ``settled_ns``, and of
    those reused. Not the current course's: it is read whenever the dialog changed (it is what changes),
    and keeping it would only double what the index holds of a one-course dialog."""
    out = {name: list(known) for name, known in reused.items()}
    for name, raw in data.items():
        if not _is_course(name) or name == current:
            continue
        key = stat_key(f"{directory}/{name}")
        parts = key.split(".")
        if len(parts) != 3 or int(parts[1]) != len(raw) or int(parts[2]) >= settled_ns:
            continue  # changed since it was read, or young enough to change unseen
        out[name] = [key, len(raw), file_digest(raw), _bad_course_line(raw), finish_generations(raw)]
    return out


def _check_what_the_daemon_checks(present: set[str], links: list[str], data: dict[str, bytes], current_course: Any) -> None:
    """``ValueError`` for what makes the daemon refuse a dialog (409/404) although its state files parse:
    so that the listing flags it with the reason, as it flags a file that does not parse. Found by an
    adversarial run: these were refused but listed as healthy."""
    if links:  # never followed (``DialogFiles.check_real_directories``, ``fileio.read_text``)
        raise ValueError(f"{links[0]} is a symbolic link; dialog files are never followed through links")
    if "dialog.yaml" not in present:
        raise ValueError("dialog.yaml is missing")
    if not isinstance(current_course, int):
        return
    name = f"course-{current_course:03d}.jsonl"
    if current_course > 1 and name not in present:  # a course 1 not written yet is a fresh dialog
        raise ValueError(f"currentCourse is {current_course} but there is no {name}")
    try:  # the daemon reads the current course whole when it loads the dialog
        data.get(name, b"").decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[name].count(b"\n", 0, exc.start) + 1
        raise ValueError(f"{name}:{line}: not valid UTF-8 ({exc.reason})") from exc


def _is_course(name: str) -> bool:
    return name.startswith("course-") and name.endswith(".jsonl")


def _valid(data: dict[str, bytes], name: str) -> Any:
    """A state file's data, checked against its record type as the daemon checks it when it loads it."""
    from pydantic import ValidationError

    from dominds.store import records

    raw = data.get(name)
    if raw is None:
        return None
    parsed = parse_state_yaml(name, raw)
    if parsed is None:
        return None
    models: dict[str, type[records.Record]] = {
        "dialog.yaml": records.DialogMeta,
        "latest.yaml": records.LatestState,
        "q4h.yaml": records.Q4hFile,
        "subdlg.yaml": records.SubdlgFile,
    }
    model = models.get(name)
    try:
        if not isinstance(parsed, dict):
            raise ValueError(f"expected a mapping, found {type(parsed).__name__}")
        if model is not None:
            model.model_validate(parsed)
        else:  # registry.yaml: a map of agentId!tellaskSession -> entry
            for entry in parsed.values():
                records.RegistryEntry.model_validate(entry)
    except (ValidationError, ValueError, AttributeError) as exc:
        raise ValueError(f"{name} does not match its format: {' '.join(str(exc).split())[:300]}") from exc
    return parsed


def finish_generations(data: bytes) -> list[list[Any]]:
    """The model requests recorded in one course file's bytes: ``[provider/model, input, output, cacheRead,
    cacheWrite, cacheWriteLong]`` each, in file order: every generation (``gen_finish_record``) and every
    completion an MCP server asked of the member's model (``mcp_sampling_record``: it is paid for like a
    generation). Only those lines are decoded (found by a byte search); a torn last line is skipped until
    it is complete. ``driver/usage.py`` prices them."""
    found_at: list[tuple[int, list[Any]]] = []
    for mark in _USAGE_MARKS:
        start = 0
        while (found := data.find(mark, start)) != -1:
            line_start = data.rfind(b"\n", 0, found) + 1
            line_end = data.find(b"\n", found)
            start = len(data) if line_end == -1 else line_end
            try:
                record = json.loads(data[line_start:start])
            except ValueError:
                continue  # a torn last line: that generation is counted once it is complete
            raw = record.get("usage") if isinstance(record, dict) else None
            if not isinstance(raw, dict):
                continue
            key = f"{record.get('provider') or ''}/{record.get('model') or ''}"
            found_at.append((line_start, [key, *(_count(raw.get(f)) for f in (*USAGE_FIELDS, "cacheWriteLongTokens"))]))
    return [entry for _, entry in sorted(found_at, key=lambda pair: pair[0])]


_USAGE_MARKS = (b'"gen_finish_record"', b'"mcp_sampling_record"')


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _course_usage(course_files: list[str], data: dict[str, bytes], reused: Kept, facts: Facts) -> list[list[Any]]:
    """Every generation of every course (``finish_generations``, or what was kept of a course file not
    read again); a line in the middle of a course that is not a JSON record marks the dialog with an
    error (the daemon refuses such a dialog); a torn last line does not (it is what a crash leaves)."""
    gens: list[list[Any]] = []
    for name in course_files:
        known = reused.get(name)
        bad = known.bad_line if known is not None else _bad_course_line(data[name])
        if bad is not None and "error" not in facts:
            facts["error"] = f"{name}:{bad}: not a JSON record (the dialog refuses messages until it is repaired)"
            facts["runState"] = {"kind": "error", "detail": facts["error"]}
        gens += known.generations if known is not None else finish_generations(data[name])
    return gens


def _bad_course_line(data: bytes) -> int | None:
    """Number of the first line before the last that is not shaped like a JSON object, or None (cheap)."""
    lines = data.rstrip(b"\n").split(b"\n")
    for number, line in enumerate(lines[:-1], start=1):
        stripped = line.strip()
        if stripped and not (stripped.startswith(b"{") and stripped.endswith(b"}")):
            return number
    return None


# ---------------------------------------------------------------- signatures


def stat_key(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_ino}.{st.st_size}.{st.st_mtime_ns}"


def signature(directory: str, watch: Iterable[str]) -> tuple[str, int]:
    """What the facts of this directory were read from: (signature, newest mtime in ns).

    The directory's mtime (a file created, replaced by rename, or removed), and inode, size and mtime of
    each file the facts were read from (``Read.watch``: a file edited in place). The hottest loop of a
    refresh (a ``stat`` per file of every dialog): kept lean."""
    stat = os.stat
    try:
        newest = stat(directory).st_mtime_ns
    except OSError:
        return "gone", 0
    parts = [str(newest)]
    prefix = directory + "/"
    for name in watch:
        try:
            st = stat(prefix + name)
        except OSError:
            parts.append("-")
            continue
        mtime = st.st_mtime_ns
        parts.append(f"{st.st_ino}.{st.st_size}.{mtime}")
        if mtime > newest:
            newest = mtime
    return "|".join(parts), newest
