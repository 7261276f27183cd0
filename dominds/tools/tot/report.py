"""What ``tot_end`` answers: a bounded summary of the final report, the full report kept in two files.

The full report (``sessions.final_report``: every node's texts in full, as a JSON tree and as Markdown)
grows with the tree: 155 nodes with 18,000-character findings made an 8.3 M-character answer, each
finding about three times, that an MCP client took 98 s to take in. ``tot_end`` now answers with the
counts, the VALID paths and SPEC theories with their texts clipped to ``REPORT_TEXT_CHARS``, and the tree
as ``tot_status`` shows it (``STATUS_TREE_CHARS``); the full report goes to
``<sessions dir>/reports/<sessionId>.md`` and ``.json`` (written atomically, again when missing), named
in the answer under ``fullReport``. ``dominds tot-mcp`` also offers them as the resources
``tot://reports/<sessionId>.md`` and ``….json``, for clients that do not share the server's disk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dominds.store.atomic import write_atomic
from dominds.store.errors import StoreError
from dominds.tools.tot.machine import TotError
from dominds.tools.tot.sessions import STATUS_TEXT_CHARS, STATUS_TREE_CHARS, TotService, tree_markdown

REPORT_TEXT_CHARS = 2_000
"""``tot_end`` shows at most this much of each path title and findings text (the files hold all of it)."""
REPORT_ITEMS = 20
"""… and at most this many VALID paths and SPEC theories, counting the rest."""
KINDS = ("md", "json")
RESOURCE_PREFIX = "tot://reports/"


def report_dir(service: TotService) -> Path:
    return service.store.directory / "reports"


def report_path(service: TotService, session_id: str, kind: str) -> Path:
    service.store.path_for(session_id)  # refuses what is not a session id
    return report_dir(service) / f"{session_id}.{kind}"


def end_answer(service: TotService, session_id: str) -> dict[str, Any]:
    """End the session (or find it ended), keep its full report in files, answer with the bounded one."""
    full = service.end(session_id)
    files = {kind: report_path(service, session_id, kind) for kind in KINDS}
    texts = {"md": full["markdown"] + "\n", "json": json.dumps(full, ensure_ascii=False, indent=2) + "\n"}
    try:
        for kind, path in files.items():
            if not path.is_file():
                write_atomic(path, texts[kind])
    except StoreError as exc:
        raise TotError.of("STORAGE_ERROR", str(exc)) from exc
    session = service.store.load(session_id)
    clip = REPORT_TEXT_CHARS
    paths = [{**p, "titles": [_clipped(t, clip) for t in p["titles"]], "findings": _clipped(p["findings"], clip)} for p in full["validPaths"]]
    theories = [{**t, "title": _clipped(t["title"], clip), "findings": _clipped(t["findings"], clip)} for t in full["theories"]]
    answer: dict[str, Any] = {
        **{k: full[k] for k in ("status", "sessionId", "endedAt", "rounds", "totalNodes", "counts", "deadEnds")},
        "query": _clipped(full["query"], clip),
        "validPaths": paths[:REPORT_ITEMS],
        "theories": theories[:REPORT_ITEMS],
        "tree": tree_markdown(session, STATUS_TEXT_CHARS, STATUS_TREE_CHARS),
        "fullReport": {
            "markdown": str(files["md"]),
            "json": str(files["json"]),
            "resources": [f"{RESOURCE_PREFIX}{session_id}.{kind}" for kind in KINDS],
            "characters": len(texts["md"]),
            "note": "this answer clips long texts and the tree; the files (and, in `dominds tot-mcp`, the resources) hold them in full",
        },
    }
    for key, items in (("validPaths", paths), ("theories", theories)):
        if len(items) > REPORT_ITEMS:
            answer[f"{key}More"] = f"{len(items) - REPORT_ITEMS:,} more not shown; the full report lists all"
    return answer


def _clipped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()}… ({len(text):,} characters; the full report holds all of it)"


def read_report(service: TotService, session_id: str, kind: str) -> str:
    """The text of an ended session's full report file (``TotError`` when there is none)."""
    if kind not in KINDS:
        raise TotError.of("INVALID_ARGUMENT", f"a report is .md or .json, not .{kind}.")
    path = report_path(service, session_id, kind)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TotError.of("SESSION_NOT_FOUND", f"no report for {session_id}: tot_end writes it.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TotError.of("STORAGE_ERROR", f"cannot read {path}: {exc}.") from exc


def listed_reports(service: TotService) -> list[tuple[str, str]]:
    """(sessionId, kind) of every report file, sorted."""
    try:
        names = sorted(p.name for p in report_dir(service).iterdir() if p.is_file())
    except OSError:
        return []
    return [(name.rsplit(".", 1)[0], name.rsplit(".", 1)[1]) for name in names if name.rsplit(".", 1)[-1] in KINDS]


