"""Dialog lists for the panel and the CLI: trees from root to subdialogs with run state, Q4H and cost.

Built from ``store.listing`` (``dialog.yaml`` + ``latest.yaml`` per dialog, never transcripts). The
cost of a tree comes from ``driver/usage.py`` (the one owner of cost), which re-reads a course file
only when it changed.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from dominds.driver import usage
from dominds.driver.engine import Engine
from dominds.rtws import DIALOG_STATUSES
from dominds.store.errors import StoreError
from dominds.store.listing import DialogSummary, list_roots, summarize

Node = dict[str, Any]


class CostCache:
    """The tree cost of each listed root, from the engine's ``UsageBook`` (cheap when nothing grew)."""

    def totals(self, engine: Engine, root: DialogSummary) -> dict[str, Any] | None:
        paths = [
            summary.files.course(number)
            for summary in (root, *root.subdialogs)
            for number in range(1, (summary.latest.current_course if summary.latest else 1) + 1)
        ]
        try:
            return usage.totals(engine.usage_book.usage(paths, engine.config.get().catalog))
        except StoreError:
            return None


def _node(engine: Engine, summary: DialogSummary, q4h_counts: Counter[str]) -> Node:
    meta, latest = summary.meta, summary.latest
    loaded = engine.find_loaded(summary.self_id)
    if loaded is not None and loaded.load_error and not summary.error:
        summary.error = loaded.load_error  # found when the daemon read it (a corrupt course, a refused write)
    node: Node = {
        "selfId": summary.self_id,
        "rootId": summary.root_id,
        "status": summary.status,
        "title": (latest.title if latest else None) or (meta.title if meta else None),
        "conductor": meta.conductor if meta else None,
        "agentId": meta.agent_id if meta else None,
        "taskDocPath": meta.task_doc_path if meta else None,
        "createdAt": meta.created_at if meta else None,
        "lastModified": latest.last_modified if latest else None,
        "currentCourse": latest.current_course if latest else None,
        "runState": latest.run_state.to_disk()
        if latest and not summary.error
        else {"kind": "error", "detail": summary.error},
        "q4hCount": q4h_counts.get(summary.self_id, 0),
        "waitingForSubdialogs": summary.has_pending_subdialogs,
        "subdialogs": [],
    }
    if summary.error:
        node["error"] = summary.error
    if meta is not None and not meta.is_root:
        node["supdialogId"] = meta.supdialog_id
        node["tellaskSession"] = meta.tellask_session
        if meta.assignment_from_sup is not None:
            node["tellaskHead"] = meta.assignment_from_sup.tellask_head
            node["callType"] = meta.assignment_from_sup.call_type
        node["fbr"] = meta.fbr
    return node


def _tree(engine: Engine, costs: CostCache, root: DialogSummary, q4h_counts: Counter[str]) -> Node:
    top = _node(engine, root, q4h_counts)
    nodes = {root.self_id: top}
    for sub in root.subdialogs:
        nodes[sub.self_id] = _node(engine, sub, q4h_counts)
    for sub in root.subdialogs:  # subdialogs are stored flat; the tree comes from supdialogId
        parent = nodes.get(sub.meta.supdialog_id or "", top) if sub.meta else top
        parent["subdialogs"].append(nodes[sub.self_id])
    top["subdialogCount"] = len(root.subdialogs)
    top["q4hTotal"] = sum(q4h_counts.get(s.self_id, 0) for s in (root, *root.subdialogs))
    top["cost"] = costs.totals(engine, root)
    return top


def _q4h_counts(engine: Engine) -> Counter[str]:
    return Counter(self_id for _root, self_id in engine.q4h_index.values())


def dialog_trees(engine: Engine, costs: CostCache, statuses: tuple[str, ...] = DIALOG_STATUSES) -> list[Node]:
    """Roots of the given statuses, most recently active first, each with its subdialog tree."""
    counts = _q4h_counts(engine)
    roots = list_roots(engine.store, statuses, with_subdialogs=True)
    trees = [_tree(engine, costs, root, counts) for root in roots]
    trees.sort(key=lambda n: n["lastModified"] or "", reverse=True)
    trees.sort(key=lambda n: DIALOG_STATUSES.index(n["status"]))  # stable: newest first within a status
    return trees


def dialog_tree(engine: Engine, costs: CostCache, root_id: str) -> Node:
    """One root's tree; raises ``DialogNotFoundError`` for an unknown root."""
    status = engine.store.locate_root(root_id)
    root = summarize(engine.store, status, root_id)
    root.subdialogs = [
        summarize(engine.store, status, root_id, s) for s in engine.store.subdialog_ids(status, root_id)
    ]
    return _tree(engine, costs, root, _q4h_counts(engine))
