"""What the dialog index knows of one dialog, read from its files: its *facts* and the *signature* of
the files they came from (``store/index.py`` keeps both per dialog).

``read_facts`` is the one place that turns a dialog directory into facts; ``signature`` is what says
whether they are still true (the directory's mtime, and inode, size and mtime of the state files and
the current course file); ``finish_generations`` reads the tokens of a course file's generations
(``driver/usage.py`` prices them).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from dominds.store import fastyaml

USAGE_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
STATE_FILES = ("dialog.yaml", "latest.yaml", "q4h.yaml", "subdlg.yaml", "registry.yaml")
Facts = dict[str, Any]


# ---------------------------------------------------------------- facts from the files


def read_state_yaml(path: str) -> Any:
    """A state file as plain data (None when missing); ``ValueError`` when it is not valid YAML."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    try:
        return fastyaml.load(text)
    except fastyaml.NotFastYaml:
        import yaml

        try:
            return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            raise ValueError(f"{os.path.basename(path)} is not valid YAML: {' '.join(str(exc).split())[:200]}") from exc


def read_facts(directory: str) -> Facts:
    """One dialog's facts from its files; a corrupt file becomes ``error``, never an exception."""
    facts: Facts = {"selfId": os.path.basename(directory)}
    try:
        present = {e.name for e in os.scandir(directory) if e.is_file()}
    except OSError as exc:
        return {**facts, "error": f"cannot list {directory}: {exc.strerror or exc}", "runState": {"kind": "error"}}
    facts["files"] = sorted(n for n in present if n in STATE_FILES)
    strays = sorted(n for n in present if n.startswith(".") and n.endswith(".tmp"))
    if strays:  # temp files of atomic writes (a kill interrupted them, or one is being written now)
        facts["strayTemps"] = strays
    try:
        meta = _valid(directory, "dialog.yaml") or {}
        latest = _valid(directory, "latest.yaml") or {}
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
            queuedPrompts=len(latest.get("queuedPrompts") or ()),
            inboundTellaskBacks=len(latest.get("inboundTellaskBacks") or ()),
            dead=bool(latest.get("dead")),
        )
        if meta.get("id") != meta.get("rootId"):
            assignment = meta.get("assignmentFromSup") or {}
            facts.update(
                supdialogId=meta.get("supdialogId"),
                tellaskSession=meta.get("tellaskSession"),
                callType=assignment.get("callType"),
                tellaskHead=assignment.get("tellaskHead"),
                fbr=bool(meta.get("fbr")),
            )
        if "q4h.yaml" in present:
            questions = (_valid(directory, "q4h.yaml") or {}).get("questions") or []
            facts["q4h"] = [{"id": q.get("id"), "tellaskHead": q.get("tellaskHead")} for q in questions]
        if "subdlg.yaml" in present:
            pending = (_valid(directory, "subdlg.yaml") or {}).get("pending") or []
            facts["pendingSubdialogs"] = [
                {k: p.get(k) for k in ("subdialogId", "agentId", "callType", "tellaskSession")} for p in pending
            ]
        if "registry.yaml" in present:
            registry = _valid(directory, "registry.yaml") or {}
            facts["registry"] = [{"key": key, "subdialogId": e.get("subdialogId")} for key, e in registry.items()]
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        facts["error"] = f"{type(exc).__name__}: {exc}"
        facts.setdefault("runState", {"kind": "error", "detail": str(exc)})
    courses = sorted(n for n in present if n.startswith("course-") and n.endswith(".jsonl"))
    facts["generations"] = _course_usage(directory, courses, facts)
    return facts


def _valid(directory: str, name: str) -> Any:
    """A state file's data, checked against its record type as the daemon checks it when it loads it."""
    from pydantic import ValidationError

    from dominds.store import records

    data = read_state_yaml(f"{directory}/{name}")
    if data is None:
        return None
    models: dict[str, type[records.Record]] = {
        "dialog.yaml": records.DialogMeta,
        "latest.yaml": records.LatestState,
        "q4h.yaml": records.Q4hFile,
        "subdlg.yaml": records.SubdlgFile,
    }
    model = models.get(name)
    try:
        if not isinstance(data, dict):
            raise ValueError(f"expected a mapping, found {type(data).__name__}")
        if model is not None:
            model.model_validate(data)
        else:  # registry.yaml: a map of agentId!tellaskSession -> entry
            for entry in data.values():
                records.RegistryEntry.model_validate(entry)
    except (ValidationError, ValueError, AttributeError) as exc:
        raise ValueError(f"{name} does not match its format: {' '.join(str(exc).split())[:300]}") from exc
    return data


def finish_generations(data: bytes) -> list[list[Any]]:
    """The generations recorded in one course file's bytes: ``[provider/model, input, output, cacheRead,
    cacheWrite, cacheWriteLong]`` each. Only the ``gen_finish_record`` lines are decoded (found by a byte
    search); a torn last line is skipped until it is complete. ``driver/usage.py`` prices them."""
    out: list[list[Any]] = []
    start = 0
    while (found := data.find(_FINISH_MARK, start)) != -1:
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
        out.append([key, *(_count(raw.get(f)) for f in (*USAGE_FIELDS, "cacheWriteLongTokens"))])
    return out


_FINISH_MARK = b'"gen_finish_record"'


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _course_usage(directory: str, course_files: list[str], facts: Facts) -> list[list[Any]]:
    """Every generation of every course (``finish_generations``); a line in the middle of a course that
    is not a JSON record marks the dialog with an error (the daemon refuses such a dialog); a torn last
    line does not (it is what a crash leaves)."""
    gens: list[list[Any]] = []
    for name in course_files:
        try:
            with open(os.path.join(directory, name), "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        bad = _bad_course_line(data)
        if bad is not None and "error" not in facts:
            facts["error"] = f"{name}:{bad}: not a JSON record (the dialog refuses messages until it is repaired)"
            facts["runState"] = {"kind": "error", "detail": facts["error"]}
        gens += finish_generations(data)
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


_ALWAYS_READ = frozenset({"dialog.yaml", "latest.yaml"})


def signature(directory: str, course: int, files: Iterable[str]) -> tuple[str, int]:
    """What the facts of this directory were read from: (signature, newest mtime in ns).

    The directory's mtime (a file created, replaced by rename, or removed), and inode, size and mtime of
    ``dialog.yaml``, ``latest.yaml``, the current course file and the other state files that exist
    (a file edited in place)."""
    try:
        newest = os.stat(directory).st_mtime_ns
    except OSError:
        return "gone", 0
    names = ["dialog.yaml", "latest.yaml", f"course-{course:03d}.jsonl"]
    names += [n for n in files if n not in _ALWAYS_READ]
    parts = [str(newest)]
    for name in names:
        try:
            st = os.stat(f"{directory}/{name}")
        except OSError:
            parts.append("-")
            continue
        parts.append(f"{st.st_ino}.{st.st_size}.{st.st_mtime_ns}")
        if st.st_mtime_ns > newest:
            newest = st.st_mtime_ns
    return "|".join(parts), newest


def course_of(facts: Facts) -> int:
    try:
        return int(facts.get("currentCourse") or 1)
    except (TypeError, ValueError):
        return 1
