"""Which dialogs recovery must look at, from the dialog index's facts alone (no record is loaded).

Light on purpose: ``driver/recovery.py`` asks it of every tree of ``run/`` at start, and the front
application asks it before the engine's modules are loaded (``server/listing.py``: a listing made
before recovery is served only when recovery will change nothing it shows).
"""

from __future__ import annotations

from dominds.store.dialog_facts import Facts
from dominds.store.index_entries import Tree

RESUMABLE_REASONS = frozenset({"server_restart", "server_shutdown", "storage_error"})
"""Interruptions no person asked for: a crash, a graceful daemon stop, an earlier ``--no-resume`` start, or
a write the disk refused (``storage_error``: the daemon stopped before its watcher resumed the dialog; if
the disk is still full, the drive pauses it again and a new watcher waits for space). Dialogs a user
stopped (``user_stop``, ``emergency_stop``) stay stopped."""


def needs_attention(facts: Facts) -> bool:
    """Whether a dialog may have been mid-flight (or is corrupt), from its index facts alone."""
    files = facts.get("files") or ()
    if "q4h.yaml" in files or "subdlg.yaml" in files or "latest.yaml" not in files or facts.get("error"):
        return True
    if facts.get("generating") or facts.get("needsDrive") or facts.get("queuedPrompts"):
        return True
    run_state = facts.get("runState") or {}
    kind = run_state.get("kind")
    if kind in ("proceeding", "stop_requested", "error"):
        return True
    if kind == "interrupted" and run_state.get("reason") in RESUMABLE_REASONS:
        return True
    if kind == "blocked":
        # Blocked with no index file left: the answer that unblocked it arrived, but the daemon died
        # before its revival (needsDrive) was saved. Without this it would wait forever.
        return True
    return bool(facts.get("inboundTellaskBacks"))


def tree_at_rest(tree: Tree) -> bool:
    """Whether recovery leaves a tree of ``run/`` as it is: settled by an earlier start (untouched since),
    or no dialog of it needing attention. The front's early listing is served only when every tree is
    (``server/listing.py``): recovery reconciles exactly the others, and may change what they show."""
    return tree.settled or not any(needs_attention(entry.facts) for entry in tree.entries)
