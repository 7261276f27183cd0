"""The §4 session state, persisted as ``debate-state.json`` in the run's root dialog directory.

The file lives with the root (``.dialogs/run/<root>/``), so archiving or moving the run moves its
debate too. It is rewritten atomically after every completed round and after the final report, which
is what makes a run resumable from its last completed round after a crash or a restart.

Format: the seed's §4 fields (``session_id`` … ``updated_at``; ``history[].outputs`` holds the §2
records) plus, under the same top level, what resuming needs: ``format``/``version``, the per-agent
self-similarity series of the stubborn check, the final report and why the run stopped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from dominds.ids import now_iso
from dominds.store.atomic import write_atomic
from dominds.workflows.debate.protocol import AgentOutput, HostDecision

STATE_FILE_NAME = "debate-state.json"
STATE_FORMAT = "dominds.debate-state"
STATE_VERSION = 1
Status = Literal["in_progress", "converged", "terminated", "interrupted"]
"""The seed's three, plus ``interrupted``: stopped by the user, a disconnect or an error; resumable."""
FINISHED: tuple[Status, ...] = ("converged", "terminated")


class DebateStateError(Exception):
    """The state file is missing, unreadable, or of another format or version."""


@dataclass
class AgentSlot:
    """§4 ``agents.<role>``."""

    status: str = "idle"
    """``idle`` | ``running`` | ``completed``; ``skipped`` (timed out or failed, last output reused) or
    ``failed`` (no usable answer: a fallback output stands in)."""
    last_output: AgentOutput | None = None


@dataclass
class RoundRecord:
    """One completed round: the debaters' outputs in speaking order, then the host's control output."""

    round: int
    outputs: list[AgentOutput]
    host: AgentOutput

    @property
    def decision(self) -> HostDecision:
        return HostDecision.from_json(self.host.metadata["decision"])

    @property
    def analysis(self) -> dict[str, Any]:
        return dict(self.host.metadata.get("analysis") or {})


@dataclass
class DebateState:
    session_id: str
    """The run's root dialog id."""
    user_query: str
    max_rounds: int
    mode: str = "multi_agent"
    status: Status = "in_progress"
    current_round: int = 0
    """The last *completed* round (0 before round 1 finished)."""
    agents: dict[str, AgentSlot] = field(default_factory=dict)
    history: list[RoundRecord] = field(default_factory=list)
    consensus_trend: list[float] = field(default_factory=list)
    created_at: str = field(default_factory=now_iso)
    updated_at: str = field(default_factory=now_iso)
    self_similarity: dict[str, list[float | None]] = field(default_factory=dict)
    """Per debater, one entry per round from round 2: similarity to its own previous position (§5.4)."""
    final_report: AgentOutput | None = None
    stop_reason: str | None = None
    """Why an ``interrupted`` run stopped (``user_stop``, ``client_disconnected``, ``error: …``)."""
    similarity_method: str | None = None
    """How positions are compared in this run: ``embedding:<model>`` or ``jaccard_fallback`` (word overlap)."""
    similarity_note: str | None = None
    """Why the run compares by word overlap instead of an embedder (``None`` when it uses the one it was given)."""

    def __post_init__(self) -> None:
        for role in ("planner", "critic", "host", "reporter"):
            self.agents.setdefault(role, AgentSlot())

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def last_round(self) -> RoundRecord | None:
        return self.history[-1] if self.history else None

    def last_output(self, role: str) -> AgentOutput | None:
        return self.agents[role].last_output

    def complete_round(self, record: RoundRecord, consensus: float) -> None:
        self.history.append(record)
        self.current_round = record.round
        self.consensus_trend.append(consensus)
        for output in record.outputs:
            self.agents[output.agent_id] = AgentSlot(slot_status(output), output)
        self.agents["host"] = AgentSlot("completed", record.host)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "session_id": self.session_id,
            "user_query": self.user_query,
            "mode": self.mode,
            "status": self.status,
            "current_round": self.current_round,
            "max_rounds": self.max_rounds,
            "agents": {
                role: {"status": slot.status, "last_output": slot.last_output.to_json() if slot.last_output else None}
                for role, slot in self.agents.items()
            },
            "history": [
                {"round": r.round, "outputs": [o.to_json() for o in r.outputs], "host_decision": r.host.to_json()}
                for r in self.history
            ],
            "consensus_trend": list(self.consensus_trend),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "self_similarity": self.self_similarity,
            "final_report": self.final_report.to_json() if self.final_report else None,
            "stop_reason": self.stop_reason,
            "similarity_method": self.similarity_method,
            "similarity_note": self.similarity_note,
        }

    @classmethod
    def from_json(cls, raw: Any) -> DebateState:
        if not isinstance(raw, dict) or raw.get("format") != STATE_FORMAT:
            raise DebateStateError("not a debate state file")
        if raw.get("version") != STATE_VERSION:
            raise DebateStateError(f"debate state version {raw.get('version')!r} is not supported (expected {STATE_VERSION})")
        if raw.get("status") not in ("in_progress", *FINISHED, "interrupted"):
            raise DebateStateError(f"unknown debate status {raw.get('status')!r}")
        try:
            agents = {
                role: AgentSlot(slot["status"], AgentOutput.from_json(slot["last_output"]) if slot["last_output"] else None)
                for role, slot in raw["agents"].items()
            }
            history = [
                RoundRecord(
                    r["round"], [AgentOutput.from_json(o) for o in r["outputs"]], AgentOutput.from_json(r["host_decision"])
                )
                for r in raw["history"]
            ]
            final = raw.get("final_report")
            return cls(
                session_id=raw["session_id"],
                user_query=raw["user_query"],
                max_rounds=int(raw["max_rounds"]),
                mode=raw.get("mode", "multi_agent"),
                status=raw["status"],
                current_round=int(raw["current_round"]),
                agents=agents,
                history=history,
                consensus_trend=[float(x) for x in raw["consensus_trend"]],
                created_at=raw["created_at"],
                updated_at=raw["updated_at"],
                self_similarity={k: list(v) for k, v in (raw.get("self_similarity") or {}).items()},
                final_report=AgentOutput.from_json(final) if final else None,
                stop_reason=raw.get("stop_reason"),
                similarity_method=raw.get("similarity_method"),
                similarity_note=raw.get("similarity_note"),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DebateStateError(f"malformed debate state: {type(exc).__name__}: {exc}") from exc


ORPHANED_REASON = "process_ended"
"""``stop_reason`` shown for a debate left ``in_progress`` by a process that ended without saving (a crash,
a kill): nothing drives it any more, and it resumes from its last completed round like any interrupted one."""


def as_shown(state: DebateState, live: bool) -> DebateState:
    """The state as readers should see it: a saved ``in_progress`` that no live run drives is
    ``interrupted`` (derived when read; the file stays as its run left it, and a resume rewrites it).
    Returns ``state`` itself when nothing changes, else a copy."""
    if live or state.status != "in_progress":
        return state
    agents = {
        role: AgentSlot("idle" if slot.status in ("running", "waiting") else slot.status, slot.last_output)
        for role, slot in state.agents.items()
    }
    return replace(state, status="interrupted", stop_reason=ORPHANED_REASON, agents=agents)


def slot_status(output: AgentOutput) -> str:
    """§4 ``agents.<role>.status`` after a round: how the agent's output came about."""
    if output.fallback is None:
        return "completed"
    return "skipped" if output.fallback == "reused_last_output" else "failed"


def state_path(root_dir: Path) -> Path:
    return root_dir / STATE_FILE_NAME


def save_state(root_dir: Path, state: DebateState) -> None:
    state.updated_at = now_iso()
    write_atomic(state_path(root_dir), json.dumps(state.to_json(), ensure_ascii=False, indent=1) + "\n")


def load_state(root_dir: Path) -> DebateState:
    path = state_path(root_dir)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise DebateStateError(f"{path} does not exist: this run is not a debate or never started") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DebateStateError(f"cannot read {path}: {exc}") from exc
    return DebateState.from_json(raw)
