"""The Tree-of-Thoughts state machine: the session record, the rules, and the six operations.

Pure: no I/O and no clock (callers pass ``now``). An operation either raises ``TotError`` and leaves
the session untouched, or applies every change. Every violation of a batch is gathered, so one call
reports all of them. Raw tool arguments are parsed in ``toolset.py``; the status and report views
that the tools return are built in ``sessions.py``.

A node's round is its depth: roots are ``R1.*`` and a child is in its parent's round plus one. The
session's round is the deepest committed round, so lateral roots added later (``R1.F``) stay in round 1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

FORMAT_VERSION: Final = 1
MAX_BATCH = 5
MIN_END_ROUND = 3
MIN_ROOTS_RANGE = (1, MAX_BATCH)  # above MAX_BATCH the first round could never be proposed in one batch
DEFAULT_MIN_ROOTS = 3
NODE_ID_RE = re.compile(r"^R([1-9][0-9]*)\.([A-Za-z0-9]+)$")


class NodeState(StrEnum):
    DRILL = "DRILL"
    VERIFY = "VERIFY"
    DEAD = "DEAD"
    VALID = "VALID"
    SPEC = "SPEC"


CHILDREN_REQUIRED = {
    NodeState.DRILL: 2,
    NodeState.VERIFY: 1,
    NodeState.DEAD: 0,
    NodeState.VALID: 0,
    NodeState.SPEC: 0,
}
TERMINAL_STATES = frozenset({NodeState.DEAD, NodeState.VALID, NodeState.SPEC})

HINTS: dict[str, str] = {
    "INVALID_ID_FORMAT": "Ids follow R[round].[suffix]. A child's round is its parent's plus one, "
    "and its suffix extends the parent's suffix (R1.A -> R2.A1 -> R3.A1a).",
    "NOT_PROPOSED": "Two-phase: a node must be proposed before it is committed; call tot_propose first.",
    "PARENT_NOT_FOUND": "A node's parent must already be committed; tot_commit the parent first.",
    "TERMINAL_PARENT": "A parent in state DEAD, VALID or SPEC cannot take children; tot_reclassify revives it.",
    "INSUFFICIENT_ROOTS": "Round 1 needs at least minRoots roots: propose them together (parent null, R1.A, R1.B, ...).",
    "BATCH_OVERFLOW": f"At most {MAX_BATCH} nodes per batch; split the batch.",
    "RECOVERY_REQUIRED": "Every node terminal before round 3: new lateral roots are needed (R1.F, R1.G, ...); "
    "a further child of a DRILL/VERIFY node or tot_reclassify also reopens a branch.",
    "MIN_ROUNDS": f"tot_end needs a committed node in round {MIN_END_ROUND}: keep drilling.",
    "CHILDREN_MISSING": "Before tot_end every DRILL node needs 2 committed children and every VERIFY node 1.",
    "PROPOSALS_PENDING": "tot_commit every pending proposal first (a branch you dropped can be committed as DEAD).",
    "DUPLICATE_ID": "Each id is used once; pick the next free suffix, or tot_reclassify the existing node.",
    "DUPLICATE_IN_BATCH": "List each node once per batch.",
    "HAS_CHILDREN": "A node with children (committed or proposed) cannot become DEAD, VALID or SPEC.",
    "NODE_NOT_FOUND": "Only committed nodes can be reclassified; tot_status lists them.",
    "INVALID_STATE": "State is one of DRILL (needs 2 children), VERIFY (needs 1), DEAD, VALID, SPEC (terminal).",
    "INVALID_ARGUMENT": "Check the argument against the tool's input schema.",
    "SESSION_ENDED": "This session has ended; tot_start a new one.",
    "SESSION_NOT_FOUND": "Call tot_status without sessionId to list sessions, or tot_start a new one.",
    "SESSION_CORRUPT": "The session file is damaged: restore it from a backup or tot_start a new session.",
    "STORAGE_ERROR": "The session could not be saved: check free space and permissions of the sessions directory.",
}


@dataclass(frozen=True)  # (nothing assigns to one: a mutant dropping `frozen` is equivalent)
class Violation:
    """One broken rule: a stable code, what happened, and how to fix it."""

    code: str
    message: str
    node_id: str | None = None
    hint: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "nodeId": self.node_id, "message": self.message, "hint": self.hint}


def violation(code: str, message: str, node_id: str | None = None, hint: str | None = None) -> Violation:
    return Violation(code, message, node_id, HINTS[code] if hint is None else hint)


class TotError(Exception):
    """The call was rejected and nothing changed. ``code``/``hint`` are those of the first violation."""

    def __init__(self, violations: Sequence[Violation]) -> None:
        if not violations:
            raise ValueError("TotError needs at least one violation")
        self.violations = tuple(violations)
        super().__init__(self.describe())

    @classmethod
    def of(cls, code: str, message: str, node_id: str | None = None, hint: str | None = None) -> TotError:
        return cls([violation(code, message, node_id, hint)])

    @property
    def code(self) -> str:
        return self.violations[0].code

    @property
    def hint(self) -> str:
        return self.violations[0].hint

    def to_json(self) -> dict[str, Any]:
        return {"status": "REJECTED", "errors": [v.to_json() for v in self.violations]}

    def describe(self) -> str:
        lines = ["REJECTED (nothing was changed):"]
        for v in self.violations:
            where = f" [{v.node_id}]" if v.node_id else ""
            lines.append(f"{v.code}{where}: {v.message} Fix: {v.hint}")
        return "\n".join(lines)


class _Record(BaseModel):
    """Snake_case in Python, camelCase on disk and on the wire (the origin's file format)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, use_attribute_docstrings=True)


class Proposal(_Record):
    """A node announced by tot_propose and not yet committed."""

    id: str
    """Node id, ``R[round].[suffix]``."""
    parent: str | None
    """Id of the committed parent, or None for a root."""
    round: int
    """Depth of the node, taken from its id (roots are 1)."""
    title: str
    """Short name of the line of thought."""
    planned_action: str
    """What the agent will do to explore it."""
    proposed_at: str
    """ISO time of the (latest) proposal."""


class Node(Proposal):
    """A committed node: a proposal plus the outcome the agent reported."""

    state: NodeState
    """DRILL/VERIFY keep the branch open; DEAD/VALID/SPEC close it."""
    findings: str
    """What the exploration found; the reason for the state."""
    children: list[str] = Field(default_factory=list)
    """Ids of committed children, in commit order."""
    committed_at: str
    """ISO time of the commit."""


class Session(_Record):
    """One investigation, persisted as ``<sessionId>.json``."""

    version: Literal[1] = FORMAT_VERSION
    """Format version of this record; readers reject versions they do not know."""
    session_id: str
    """Path-safe id, also the file name."""
    query: str
    """The question under investigation."""
    min_roots: int
    """How many roots round 1 needs (1..5)."""
    nodes: dict[str, Node] = Field(default_factory=dict)
    """Committed nodes by id."""
    pending: dict[str, Proposal] = Field(default_factory=dict)
    """Proposed, not yet committed nodes by id."""
    created_at: str
    """ISO time of tot_start."""
    updated_at: str
    """ISO time of the last accepted change."""
    ended_at: str | None = None
    """ISO time of tot_end; an ended session is read-only."""


@dataclass(frozen=True)
class ProposedNode:
    id: str
    parent: str | None
    title: str
    planned_action: str


@dataclass(frozen=True)  # (nothing assigns to one: a mutant dropping `frozen` is equivalent)
class CommitResult:
    node_id: str
    state: NodeState
    findings: str


def new_session(session_id: str, query: str, min_roots: int, now: str) -> Session:
    return Session(session_id=session_id, query=query, min_roots=min_roots, created_at=now, updated_at=now)


def current_round(session: Session) -> int:
    """The deepest committed round, 0 before the first commit."""
    return max((node.round for node in session.nodes.values()), default=0)


def children_needed(session: Session) -> list[dict[str, Any]]:
    """Open (DRILL/VERIFY) nodes with fewer committed children than their state requires."""
    needs = []
    for node in session.nodes.values():
        required = CHILDREN_REQUIRED[node.state]
        if len(node.children) < required:
            needs.append(
                {"nodeId": node.id, "state": node.state.value, "children": len(node.children), "required": required}
            )
    return needs


def recovery_required(session: Session) -> bool:
    """Stuck before round 3: every leaf is terminal and nothing is pending, so no branch can grow."""
    return (
        bool(session.nodes)
        and not session.pending
        and current_round(session) < MIN_END_ROUND
        and not children_needed(session)
    )


def end_blockers(session: Session) -> list[Violation]:
    blockers = []
    if session.pending:
        ids = ", ".join(sorted(session.pending))
        blockers.append(violation("PROPOSALS_PENDING", f"proposed but not committed: {ids}."))
    round_now = current_round(session)
    if round_now < MIN_END_ROUND:
        if recovery_required(session):
            blockers.append(violation("RECOVERY_REQUIRED", f"every branch is closed in round {round_now}."))
        else:
            blockers.append(
                violation("MIN_ROUNDS", f"the deepest committed node is in round {round_now}; tot_end needs {MIN_END_ROUND}.")
            )
    for need in children_needed(session):
        blockers.append(
            violation(
                "CHILDREN_MISSING",
                f"{need['nodeId']} is {need['state']} with {need['children']} committed "
                f"children; it needs {need['required']}.",
                need["nodeId"],
            )
        )
    return blockers


def _require_open(session: Session) -> None:
    if session.ended_at is not None:
        raise TotError.of("SESSION_ENDED", f"session {session.session_id} ended at {session.ended_at}.")


def _parse_id(node_id: str) -> tuple[int, str] | None:
    match = NODE_ID_RE.match(node_id)
    return (int(match.group(1)), match.group(2)) if match else None


def _check_proposed(session: Session, node: ProposedNode) -> list[Violation]:
    parsed = _parse_id(node.id)
    if parsed is None:
        return [violation("INVALID_ID_FORMAT", f"{node.id!r} is not R[round].[suffix] (R1.A, R2.A1, R3.A1a).", node.id)]
    if node.id in session.nodes:
        return [violation("DUPLICATE_ID", f"{node.id} is already committed.", node.id)]
    round_, suffix = parsed
    if node.parent is None:
        if round_ != 1:
            return [violation("INVALID_ID_FORMAT", f"a root (parent null) is in round 1: R1.{suffix}, not {node.id}.", node.id)]
        return []
    parent = session.nodes.get(node.parent)
    if parent is None:
        why = "is proposed but not committed yet" if node.parent in session.pending else "does not exist"
        return [violation("PARENT_NOT_FOUND", f"parent {node.parent} {why}.", node.id)]
    found: list[Violation] = []
    if parent.state in TERMINAL_STATES:
        found.append(violation("TERMINAL_PARENT", f"parent {parent.id} is {parent.state.value}.", node.id))
    parent_suffix = parent.id.split(".", 1)[1]
    if round_ != parent.round + 1 or len(suffix) <= len(parent_suffix) or not suffix.startswith(parent_suffix):
        expected = f"R{parent.round + 1}.{parent_suffix}<more>"
        found.append(violation("INVALID_ID_FORMAT", f"a child of {parent.id} is {expected}, not {node.id}.", node.id))
    return found


def propose(session: Session, nodes: Sequence[ProposedNode], now: str) -> dict[str, Any]:
    """Validate a batch and store it as pending proposals (replacing pending ones with the same id)."""
    _require_open(session)
    found: list[Violation] = []
    if not nodes:
        found.append(violation("INVALID_ARGUMENT", "nodes is empty.", hint="Propose 1 to 5 nodes."))
    if len(nodes) > MAX_BATCH:
        found.append(violation("BATCH_OVERFLOW", f"{len(nodes)} nodes in one batch."))
    seen: set[str] = set()
    for node in nodes:
        if node.id in seen:
            found.append(violation("DUPLICATE_IN_BATCH", f"{node.id} appears twice.", node.id))
        seen.add(node.id)
        found.extend(_check_proposed(session, node))
    batch_roots = {node.id for node in nodes if node.parent is None}
    committed_roots = sum(1 for node in session.nodes.values() if node.parent is None)
    other_pending_roots = sum(1 for p in session.pending.values() if p.parent is None and p.id not in seen)
    roots = committed_roots + other_pending_roots + len(batch_roots)
    if roots < session.min_roots:
        found.append(
            violation("INSUFFICIENT_ROOTS", f"round 1 would have {roots} roots; this session needs {session.min_roots}.")
        )
    if any(v.code == "TERMINAL_PARENT" for v in found) and recovery_required(session):
        found.append(violation("RECOVERY_REQUIRED", f"every branch is closed in round {current_round(session)}."))
    if found:
        raise TotError(found)
    for node in nodes:
        round_ = _parse_id(node.id)
        assert round_ is not None  # checked above
        session.pending[node.id] = Proposal(
            id=node.id,
            parent=node.parent,
            round=round_[0],
            title=node.title,
            planned_action=node.planned_action,
            proposed_at=now,
        )
    session.updated_at = now
    return {"status": "OK", "approved": [node.id for node in nodes]}


def commit(session: Session, results: Sequence[CommitResult], now: str) -> dict[str, Any]:
    """Turn pending proposals into nodes with the reported state; a subset of the pending nodes is fine."""
    _require_open(session)
    found: list[Violation] = []
    if not results:
        found.append(violation("INVALID_ARGUMENT", "results is empty.", hint="Commit 1 to 5 proposed nodes."))
    if len(results) > MAX_BATCH:
        found.append(violation("BATCH_OVERFLOW", f"{len(results)} results in one batch."))
    seen: set[str] = set()
    for result in results:
        node_id = result.node_id
        if node_id in seen:
            found.append(violation("DUPLICATE_IN_BATCH", f"{node_id} appears twice.", node_id))
        seen.add(node_id)
        if node_id in session.nodes:
            found.append(violation("DUPLICATE_ID", f"{node_id} is already committed; tot_reclassify changes its state.", node_id))
            continue
        proposal = session.pending.get(node_id)
        if proposal is None:
            found.append(violation("NOT_PROPOSED", f"{node_id} was never proposed.", node_id))
            continue
        parent = session.nodes.get(proposal.parent) if proposal.parent else None
        if parent is not None and parent.state in TERMINAL_STATES:  # reclassified since the proposal
            found.append(violation("TERMINAL_PARENT", f"parent {parent.id} is now {parent.state.value}.", node_id))
    if found:
        raise TotError(found)
    for result in results:
        proposal = session.pending.pop(result.node_id)
        session.nodes[result.node_id] = Node(
            **proposal.model_dump(), state=result.state, findings=result.findings, committed_at=now
        )
        if proposal.parent is not None:
            session.nodes[proposal.parent].children.append(result.node_id)
    session.updated_at = now
    return {"status": "OK", "committed": [result.node_id for result in results]}


def reclassify(session: Session, node_id: str, state: NodeState, now: str) -> dict[str, Any]:
    """Change a committed node's state; terminal -> DRILL/VERIFY revives a branch."""
    _require_open(session)
    node = session.nodes.get(node_id)
    if node is None:
        why = " (it is only proposed; tot_commit it)" if node_id in session.pending else ""
        raise TotError.of("NODE_NOT_FOUND", f"{node_id} is not a committed node{why}.", node_id)
    pending_children = [p.id for p in session.pending.values() if p.parent == node_id]
    if state in TERMINAL_STATES and (node.children or pending_children):
        kids = ", ".join(node.children + pending_children)
        raise TotError.of("HAS_CHILDREN", f"{node_id} has children ({kids}); it cannot become {state.value}.", node_id)
    previous = node.state
    node.state = state
    session.updated_at = now
    return {"status": "OK", "nodeId": node_id, "previous": previous.value, "state": state.value}


def end(session: Session, now: str) -> None:
    """Close the session once every end rule holds; ending an ended session changes nothing."""
    if session.ended_at is not None:
        return
    blockers = end_blockers(session)
    if blockers:
        raise TotError(blockers)
    session.ended_at = now
    session.updated_at = now


def state_counts(session: Session) -> dict[str, int]:
    """Committed nodes per state, every state listed."""
    counts = {state.value: 0 for state in NodeState}
    for node in session.nodes.values():
        counts[node.state.value] += 1
    return counts
