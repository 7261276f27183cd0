"""Saved debates, found on disk: what ``GET /api/multi-agent`` lists.

Each debate is a workflow root holding ``debate-state.json``; the newest are found by walking the store's
root listing newest first (``workflows/run_roots.py``: root ids sort by creation time, one ``stat`` per
root passed, no dialog loaded), so debates from before a restart or a crash are listed too. A state file
that cannot be read is left out of the list (``GET /api/multi-agent/{id}`` says why).
"""

from __future__ import annotations

from typing import Any

from dominds.store.dialog_store import DialogStore
from dominds.workflows.debate.state import (
    STATE_FILE_NAME,
    DebateState,
    DebateStateError,
    as_shown,
    load_state,
)
from dominds.workflows.run_roots import newest_run_roots

SESSIONS_SHOWN = 50
"""How many debates the list holds at most (the newest)."""


def newest_states(store: DialogStore, limit: int = SESSIONS_SHOWN) -> list[DebateState]:
    """The saved states of the newest ``limit`` debates, newest first (blocking: call it in a thread)."""
    states = []
    for root in newest_run_roots(store, STATE_FILE_NAME, limit):
        try:
            states.append(load_state(root.directory))
        except DebateStateError:
            continue
    return states


def summary(state: DebateState, running: bool) -> dict[str, Any]:
    """One debate of the list: enough to choose it (the whole of it is ``GET /api/multi-agent/{id}/session``)."""
    shown = as_shown(state, running)
    return {
        "sessionId": shown.session_id,
        "question": shown.user_query,
        "status": shown.status,
        "currentRound": shown.current_round,
        "maxRounds": shown.max_rounds,
        "createdAt": shown.created_at,
        "updatedAt": shown.updated_at,
        "running": running,
        "resumable": not running and not shown.finished,
    }
