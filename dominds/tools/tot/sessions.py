"""ToT sessions as the tools see them: the files on disk, the operations over them, and the views they return.

Each session is one file, ``<dir>/<sessionId>.json``, replaced atomically (``write_atomic``) on every
accepted change, so a crash or a restart never loses or tears a session. An operation loads the file,
runs the pure machine, and saves only when the machine accepted the call. Within one process the
operations are synchronous; across processes (two `dominds tot-mcp` of two clients, or one and the
team's toolset in the daemon) each change holds ``<sessionId>.lock`` (``filelock``) from load to save,
so calls on one session are serialised. Without it two clients proposing at once both got OK and one
proposal was lost (the last write won).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import filelock
from pydantic import ValidationError

from dominds.ids import new_dialog_id, now_iso
from dominds.rtws import Rtws
from dominds.store.atomic import write_atomic
from dominds.store.errors import StoreError
from dominds.tools.tot import machine
from dominds.tools.tot.machine import CommitResult, NodeState, ProposedNode, Session, TotError

LOCK_TIMEOUT_S = 30.0
SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


class SessionStore:
    """The session files of one directory (``<rtws>/.dominds/tot`` unless configured)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @classmethod
    def for_rtws(cls, rtws: Rtws) -> SessionStore:
        return cls(rtws.state_dir / "tot")

    @contextlib.contextmanager
    def locked(self, session_id: str) -> Iterator[None]:
        """Hold the session's lock from load to save (serialises writers in other processes)."""
        path = self.path_for(session_id).with_suffix(".lock")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            lock = filelock.FileLock(str(path), timeout=LOCK_TIMEOUT_S)
            lock.acquire()
        except (OSError, filelock.Timeout) as exc:
            raise TotError.of("STORAGE_ERROR", f"cannot lock session {session_id}: {exc}.") from exc
        try:
            yield
        finally:
            lock.release()

    def path_for(self, session_id: str) -> Path:
        if not SESSION_ID_RE.match(session_id):
            raise TotError.of("SESSION_NOT_FOUND", f"{session_id!r} is not a session id.")
        return self.directory / f"{session_id}.json"

    def load(self, session_id: str) -> Session:
        path = self.path_for(session_id)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise TotError.of("SESSION_NOT_FOUND", f"no session {session_id} in {self.directory}.") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise TotError.of("SESSION_CORRUPT", f"cannot read {path}: {exc}.") from exc
        return _parse_session(path, text)

    def save(self, session: Session) -> None:
        text = session.model_dump_json(by_alias=True, indent=2) + "\n"
        try:
            write_atomic(self.path_for(session.session_id), text)
        except StoreError as exc:
            raise TotError.of("STORAGE_ERROR", str(exc)) from exc

    def list(self) -> tuple[list[Session], list[dict[str, str]]]:
        """Every readable session (latest change first) and one problem per unreadable file; never raises."""
        sessions: list[Session] = []
        problems: list[dict[str, str]] = []
        try:
            paths = sorted(self.directory.glob("*.json"))
        except OSError as exc:
            return [], [{"file": str(self.directory), "problem": str(exc)}]
        for path in paths:
            try:
                sessions.append(_parse_session(path, path.read_text(encoding="utf-8")))
            except TotError as exc:
                problems.append({"file": str(path), "problem": exc.violations[0].message})
            except (OSError, UnicodeDecodeError) as exc:
                problems.append({"file": str(path), "problem": str(exc)})
        sessions.sort(key=lambda s: (s.updated_at, s.session_id), reverse=True)  # ids sort by creation time
        return sessions, problems


def _parse_session(path: Path, text: str) -> Session:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise TotError.of("SESSION_CORRUPT", f"{path} is not valid JSON ({exc}).") from exc
    if isinstance(data, dict) and data.get("version") != machine.FORMAT_VERSION:
        raise TotError.of(
            "SESSION_CORRUPT",
            f"{path} has format version {data.get('version')!r}; this dominds reads version {machine.FORMAT_VERSION}.",
        )
    try:
        session = Session.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise TotError.of("SESSION_CORRUPT", f"{path} is not a ToT session ({where}: {first['msg']}).") from exc
    if path.stem != session.session_id:
        raise TotError.of("SESSION_CORRUPT", f"{path} holds session {session.session_id!r}, not {path.stem!r}.")
    broken = _broken_link(session)
    if broken is not None:
        raise TotError.of("SESSION_CORRUPT", f"{path}: {broken}.")
    return session


def _broken_link(session: Session) -> str | None:
    """Why the tree in a (hand-edited) file does not hang together, or None. The views walk it, so
    a missing node or a cycle would crash or hang them; parents one round up rule out cycles."""
    for key, record in [*session.nodes.items(), *session.pending.items()]:
        if key != record.id:
            return f"entry {key!r} holds node {record.id!r}"
        parent = session.nodes.get(record.parent) if record.parent is not None else None
        if record.parent is None and record.round != 1:
            return f"root {key} is not in round 1"
        if record.parent is not None and (parent is None or parent.round != record.round - 1):
            return f"{key} has no committed parent {record.parent} one round up"
        if parent is not None and key in session.nodes and key not in parent.children:
            return f"{key} is missing from the children of {record.parent}"
    for node in session.nodes.values():
        for child in node.children:
            if child not in session.nodes or session.nodes[child].parent != node.id:
                return f"{node.id} lists {child!r}, which is not its committed child"
    return None


# ---- views: what the tools return ----------------------------------------------------------------


def progress(session: Session) -> dict[str, Any]:
    """Where the investigation stands and what to do next (part of every successful result)."""
    blockers = machine.end_blockers(session)
    return {
        "sessionId": session.session_id,
        "round": machine.current_round(session),
        "nodes": len(session.nodes),
        "counts": machine.state_counts(session),
        "pending": sorted(session.pending),
        "childrenNeeded": machine.children_needed(session),
        "recoveryRequired": machine.recovery_required(session),
        "canEnd": session.ended_at is None and not blockers,
        "ended": session.ended_at is not None,
        "next": _next_step(session, blockers),
    }


def _next_step(session: Session, blockers: list[machine.Violation]) -> str:
    if session.ended_at is not None:
        return "The session has ended; tot_end returns its report again."
    if session.pending:
        return "tot_commit the results for: " + ", ".join(sorted(session.pending)) + "."
    if not session.nodes:
        return f"tot_propose at least {session.min_roots} roots (R1.A, R1.B, ...) with parent null."
    if machine.recovery_required(session):
        return "RECOVERY_REQUIRED: " + machine.HINTS["RECOVERY_REQUIRED"]
    needs = machine.children_needed(session)
    if needs:
        wanted = ", ".join(f"{n['nodeId']} ({n['required'] - n['children']} more)" for n in needs[: machine.MAX_BATCH])
        return f"tot_propose children for: {wanted}."
    if not blockers:
        return "Every branch is resolved: call tot_end for the report."
    return blockers[0].message


def valid_paths(session: Session) -> list[list[str]]:
    """Root-to-leaf id paths ending in each VALID node (a VALID node is a leaf: terminal nodes take no children)."""
    paths = []
    for node in session.nodes.values():
        if node.state is NodeState.VALID:
            path = [node.id]
            while (parent := session.nodes[path[0]].parent) is not None:
                path.insert(0, parent)
            paths.append(path)
    return sorted(paths)


def tree_json(session: Session, node_id: str | None = None) -> list[dict[str, Any]]:
    """Committed nodes as nested dicts: the roots when ``node_id`` is None, else that node's children."""
    ids = [n.id for n in session.nodes.values() if n.parent is None] if node_id is None else session.nodes[node_id].children
    return [
        {
            "id": node.id,
            "round": node.round,
            "state": node.state.value,
            "title": node.title,
            "plannedAction": node.planned_action,
            "findings": node.findings,
            "children": tree_json(session, node.id),
        }
        for node in (session.nodes[i] for i in ids)
    ]


STATUS_TEXT_CHARS = 240
"""``tot_status`` shows at most this much of each query, title and findings text (``tot_end`` shows all):
a status is asked for often, and a session's texts may total hundreds of kilobytes."""

STATUS_SESSIONS = 50
"""``tot_status`` without an id lists at most this many sessions, the latest changed first, and counts the rest."""

STATUS_TREE_CHARS = 12_000
"""… and at most this much of the tree: clipped texts alone still grow with the number of nodes. The
open work (pending proposals, nodes needing children, the next step) is listed apart, in full."""


def _one_line(text: str, limit: int | None = None) -> str:
    line = " ".join(text.split())
    if limit is None or len(line) <= limit:
        return line
    return f"{line[:limit].rstrip()}… ({len(line):,} characters; tot_end returns the full text)"


def tree_markdown(session: Session, limit: int | None = None, budget: int | None = None) -> str:
    """The committed tree as a nested Markdown list, one node a line, in tree order; ``limit`` clips each
    text, ``budget`` the whole list (the lines that do not fit are counted in a last line)."""
    lines: list[str] = []
    used = 0

    def walk(items: list[dict[str, Any]], depth: int) -> None:
        nonlocal used
        for item in items:
            line = (
                f"{'  ' * depth}- **{item['id']}** `{item['state']}` {_one_line(item['title'], limit)}"
                f": {_one_line(item['findings'], limit)}"
            )
            used += len(line) + 1
            if budget is None or used <= budget:
                lines.append(line)
            walk(item["children"], depth + 1)

    walk(tree_json(session), 0)
    left_out = len(session.nodes) - len(lines)
    if left_out > 0:
        lines.append(
            f"- … {left_out:,} more nodes not shown (a status shows {budget:,} characters of the tree; "
            "tot_end returns all of it)"
        )
    return "\n".join(lines)


def final_report(session: Session) -> dict[str, Any]:
    """The report of an ended session: counts, VALID paths, SPEC theories, the tree as JSON and Markdown."""
    paths = valid_paths(session)
    solutions = [
        {
            "path": path,
            "titles": [session.nodes[i].title for i in path],
            "findings": session.nodes[path[-1]].findings,
        }
        for path in paths
    ]
    theories = [
        {"nodeId": n.id, "title": n.title, "findings": n.findings}
        for n in session.nodes.values()
        if n.state is NodeState.SPEC
    ]
    counts = machine.state_counts(session)
    md = [f"# Tree of Thoughts: {_one_line(session.query)}", ""]
    md.append(
        f"Session `{session.session_id}`, {machine.current_round(session)} rounds, {len(session.nodes)} nodes ("
        + ", ".join(f"{k} {v}" for k, v in counts.items())
        + ")."
    )
    md += ["", "## Valid paths", ""]
    md += [
        f"{i}. " + " -> ".join(f"{p} {_one_line(session.nodes[p].title)}" for p in path)
        + f"\n   Findings: {_one_line(session.nodes[path[-1]].findings)}"
        for i, path in enumerate(paths, 1)
    ] or ["None."]
    if theories:
        md += ["", "## Theories (SPEC)", ""]
        md += [f"- **{t['nodeId']}** {_one_line(t['title'])}: {_one_line(t['findings'])}" for t in theories]
    md += ["", "## Tree", "", tree_markdown(session), ""]
    return {
        "status": "ENDED",
        "sessionId": session.session_id,
        "query": session.query,
        "endedAt": session.ended_at,
        "rounds": machine.current_round(session),
        "totalNodes": len(session.nodes),
        "counts": counts,
        "validPaths": solutions,
        "theories": theories,
        "deadEnds": counts[NodeState.DEAD.value],
        "tree": tree_json(session),
        "markdown": "\n".join(md),
    }


# ---- operations ----------------------------------------------------------------------------------


class TotService:
    """The six ToT operations on the sessions of one store. Results are JSON-ready dicts; refusals ``TotError``."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def start(self, query: str, min_roots: int) -> dict[str, Any]:
        session = machine.new_session(new_dialog_id(), query, min_roots, now_iso())
        self.store.save(session)
        return {"status": "OK", "query": query, "minRoots": min_roots, **progress(session)}

    def propose(self, session_id: str, nodes: Sequence[ProposedNode]) -> dict[str, Any]:
        return self._change(session_id, lambda s: machine.propose(s, nodes, now_iso()))

    def commit(self, session_id: str, results: Sequence[CommitResult]) -> dict[str, Any]:
        return self._change(session_id, lambda s: machine.commit(s, results, now_iso()))

    def reclassify(self, session_id: str, node_id: str, state: NodeState) -> dict[str, Any]:
        return self._change(session_id, lambda s: machine.reclassify(s, node_id, state, now_iso()))

    def end(self, session_id: str) -> dict[str, Any]:
        with self.store.locked(session_id):
            session = self.store.load(session_id)
            if session.ended_at is None:
                machine.end(session, now_iso())
                self.store.save(session)
        return final_report(session)

    def status(self, session_id: str | None) -> dict[str, Any]:
        """One session in detail, or (without an id) a summary of every session in the store."""
        if session_id is None:
            sessions, problems = self.store.list()
            listed = [
                {
                    "sessionId": s.session_id,
                    "query": _one_line(s.query, STATUS_TEXT_CHARS),
                    "round": machine.current_round(s),
                    "nodes": len(s.nodes),
                    "ended": s.ended_at is not None,
                    "updatedAt": s.updated_at,
                }
                for s in sessions[:STATUS_SESSIONS]
            ]
            listing = {"status": "OK", "directory": str(self.store.directory), "total": len(sessions), "sessions": listed}
            if len(sessions) > STATUS_SESSIONS:
                older = len(sessions) - STATUS_SESSIONS
                listing["more"] = f"{older:,} older sessions not listed; tot_status with a sessionId shows any of them"
            return {**listing, "unreadable": problems}
        session = self.store.load(session_id)
        return {
            "status": "OK",
            "query": _one_line(session.query, STATUS_TEXT_CHARS),
            "minRoots": session.min_roots,
            "createdAt": session.created_at,
            "updatedAt": session.updated_at,
            **progress(session),
            "endBlockers": [v.to_json() for v in machine.end_blockers(session)] if not session.ended_at else [],
            "tree": tree_markdown(session, STATUS_TEXT_CHARS, STATUS_TREE_CHARS),
        }

    def _change(self, session_id: str, operation: Callable[[Session], dict[str, Any]]) -> dict[str, Any]:
        """Load, apply, save under the session's lock: the file is written only when the machine accepted the call."""
        with self.store.locked(session_id):
            session = self.store.load(session_id)
            result = operation(session)
            self.store.save(session)
        return {**result, **progress(session)}
