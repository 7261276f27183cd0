"""`dominds status`: every dialog as a root → subdialog tree, from the files (daemon or not).

Fast on big workspaces through the dialog index (``store/index.py``): the facts of every dialog are kept
in ``.dominds/cache/dialogs.sqlite`` with the signature of the files they came from; each run ``stat``s
those files and reads again only the dialogs that changed (or all of them when the index is gone: it
is a cache, rebuilt at will). ``--no-cache`` reads every file and leaves the index alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from typing import Any

from dominds.cli.common import workspace
from dominds.rtws import DIALOG_STATUSES, Rtws
from dominds.store.index import USAGE_FIELDS, DialogIndex, Entry

Node = dict[str, Any]

EPILOG = """\
examples:
  dominds status                 the dialogs in run/ as trees
  dominds status --all           done/ and archive/ too
  dominds status --root ID       one tree (any status)
  dominds status --json | jq '.roots[].runState.kind'
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "status",
        help="show every dialog tree: agents, run states, questions, subdialogs, cost",
        description="Show the dialogs of this workspace as root → subdialog trees: agent, run state, pending "
        "questions (Q4H), pending subdialogs, TYPE B registry keys, last activity, and tokens and cost per tree. "
        "Reads the files (under the workspace lock when no daemon runs), so it works with or without a daemon.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--json", action="store_true", help="print one JSON document (for scripts)")
    p.add_argument("--all", action="store_true", help="include done/ and archive/ dialogs")
    p.add_argument("--root", metavar="ID", help="only the tree of this root (or of the subdialog with this id; a unique prefix is enough)")
    p.add_argument("--no-cache", action="store_true", help="read every file; neither use nor update the index")
    p.set_defaults(func=_status)


def _status(args: argparse.Namespace) -> int:
    from dominds.cli.client import find_daemon
    from dominds.cli.offline import reach_state

    rtws = workspace()
    with reach_state(rtws, wait=2.0, read_only=True) as access:
        daemon = find_daemon(rtws)
        index = DialogIndex(rtws, persistent=not args.no_cache)
        roots = collect(rtws, index, DIALOG_STATUSES if args.all or args.root else ("run",), args.root)
        index.close()
    if access.locked:  # nothing can be driving: a `proceeding` left by a killed process is shown interrupted
        _show_gone_drivers(roots)
    report = {
        "rtws": str(rtws.root),
        "daemon": {"pid": daemon.pid, "port": daemon.port, "url": daemon.base_url, "panel": daemon.url}
        if daemon
        else None,
        "roots": roots,
        "totals": _totals(roots),
    }
    if args.json:  # compact on purpose: json's C encoder is only used without `indent` (10x faster here)
        sys.stdout.write(json.dumps(report, ensure_ascii=False) + "\n")
    else:
        _print_report(report)
    return 0


def _show_gone_drivers(nodes: list[Node]) -> None:
    from dominds.cli.offline import as_seen_now

    for node in nodes:
        node["runState"] = as_seen_now(node.get("runState") or {}, nobody_drives=True)
        _show_gone_drivers(node["subdialogs"])


# ---------------------------------------------------------------- reading


def collect(rtws: Rtws, index: DialogIndex, statuses: tuple[str, ...], root_filter: str | None = None) -> list[Node]:
    """Trees of the given statuses (or the one tree holding ``root_filter``), most recent activity first."""
    from dominds.cli.offline import locate_dialog
    from dominds.cli.resolve import resolve_dialog_id

    pricing = _Pricing(rtws)
    wanted = locate_dialog(rtws, resolve_dialog_id(rtws, root_filter)) if root_filter else None
    out = [_tree(tree.root, tree.subs, pricing) for tree in index.trees(statuses, root=wanted)]
    out.sort(key=lambda n: n.get("lastModified") or "", reverse=True)
    out.sort(key=lambda n: DIALOG_STATUSES.index(n["status"]))
    return out


def _node(entry: Entry) -> Node:
    node: Node = {"selfId": entry.self_id, "rootId": entry.root_id, "status": entry.status}
    node.update((k, v) for k, v in entry.facts.items() if k not in _INTERNAL_FACTS and v is not None)
    node.setdefault("runState", {"kind": "idle"})
    node["subdialogs"] = []
    return node


_INTERNAL_FACTS = frozenset({"selfId", "files", "usage", "conductor", "inboundTellaskBacks", "dead"})


def _tree(root_entry: Entry, sub_entries: list[Entry], pricing: _Pricing) -> Node:
    root = _node(root_entry)
    nodes = {root["selfId"]: root}
    subs = [_node(entry) for entry in sub_entries]
    for sub in subs:
        nodes[sub["selfId"]] = sub
    for sub in subs:  # stored flat; the tree comes from supdialogId
        nodes.get(sub.get("supdialogId") or "", root)["subdialogs"].append(sub)
    by_model: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for entry in (root_entry, *sub_entries):
        for model, counts in (entry.facts.get("usage") or {}).items():
            by_model[model] = [a + b for a, b in zip(by_model[model], counts, strict=True)]
    root["subdialogCount"] = len(subs)
    root["q4hTotal"] = sum(len(n.get("q4h", ())) for n in (root, *subs))
    root["usage"] = pricing.usage(by_model)
    root["lastActivity"] = max((n.get("lastModified") or "" for n in (root, *subs)), default="")
    return root


class _Pricing:
    """Cost from the workspace's model catalog (read once per run; prices may change, counts do not)."""

    def __init__(self, rtws: Rtws) -> None:
        self.rtws = rtws
        self._catalog: Any = None

    def usage(self, by_model: dict[str, list[int]]) -> dict[str, Any]:
        total: dict[str, Any] = dict.fromkeys((*USAGE_FIELDS, "generations"), 0) | {"costUsd": 0.0}
        for model, counts in by_model.items():
            for index, field in enumerate((*USAGE_FIELDS, "generations")):
                total[field] += counts[index]
            pricing = self._model_pricing(model)
            if pricing is not None:
                total["costUsd"] += pricing.cost_usd(*counts[:4])
        total["costUsd"] = round(total["costUsd"], 6)
        return total

    def _model_pricing(self, key: str) -> Any:
        if self._catalog is None:
            from dominds.llm.catalog import load_catalog

            self._catalog = load_catalog(self.rtws)[0]
        provider, _, model = key.partition("/")
        info = self._catalog.model(provider, model)
        return info.pricing if info is not None else None


# ---------------------------------------------------------------- output


def _totals(roots: list[Node]) -> dict[str, Any]:
    def walk(node: Node) -> int:
        return 1 + sum(walk(child) for child in node["subdialogs"])

    return {
        "roots": len(roots),
        "dialogs": sum(walk(root) for root in roots),
        "q4h": sum(root["q4hTotal"] for root in roots),
        "tokens": sum(root["usage"]["inputTokens"] + root["usage"]["outputTokens"] for root in roots),
        "costUsd": round(sum(root["usage"]["costUsd"] for root in roots), 6),
    }


def _print_report(report: dict[str, Any]) -> None:
    from dominds.cli.render import Style, age, styled_run_state, tokens

    out = sys.stdout
    style = Style.for_stream(out)
    daemon = report["daemon"]
    where = f"daemon pid {daemon['pid']} on port {daemon['port']}" if daemon else "no daemon running"
    lines = [f"{style(report['rtws'], 'bold')} — {where}"]
    if daemon and daemon.get("panel"):
        lines.append(f"panel: {daemon['panel']}")

    def describe(node: Node) -> str:
        parts = [style(node["selfId"], "bold"), f"@{node.get('agentId')}"]
        if node.get("tellaskSession"):
            parts.append(f"!{node['tellaskSession']}")
        parts.append(styled_run_state(style, node.get("runState")))
        if node.get("q4h"):
            parts.append(style(f"Q4H {len(node['q4h'])}", "yellow"))
        if node.get("pendingSubdialogs"):
            parts.append(f"waits for {len(node['pendingSubdialogs'])}")
        if node.get("queuedPrompts"):
            parts.append(f"{node['queuedPrompts']} queued")
        parts.append(style(age(node.get("lastModified")), "dim"))
        if node.get("error"):
            parts.append(style(f"error: {node['error']}", "red"))
        return "  ".join(parts)

    def details(node: Node, indent: str) -> None:
        for question in node.get("q4h", ()):
            lines.append(f"{indent}{style('?', 'yellow')} {question['id']}  {question.get('tellaskHead') or ''}".rstrip())
        for entry in node.get("registry", ()):
            lines.append(f"{indent}{style('TYPE B', 'dim')} {entry['key']} → {entry['subdialogId']}")

    def subtree(node: Node, prefix: str) -> None:
        children = node["subdialogs"]
        for index, child in enumerate(children):
            last = index == len(children) - 1
            lines.append(f"{prefix}{'└─ ' if last else '├─ '}{describe(child)}")
            details(child, prefix + ("   " if last else "│  ") + "  ")
            subtree(child, prefix + ("   " if last else "│  "))

    current_status = None
    for root in report["roots"]:
        if root["status"] != current_status:
            current_status = root["status"]
            count = sum(1 for r in report["roots"] if r["status"] == current_status)
            lines.append(style(f"\n{current_status}/ — {_count(count, 'dialog tree')}", "bold"))
        usage = root["usage"]
        cost = f"${usage['costUsd']:.4f}" if usage["costUsd"] else "$0"
        lines.append(f"{describe(root)}  {style(str(root.get('taskDocPath')), 'cyan')}")
        lines.append(
            style(f"   {tokens(usage['inputTokens'])} in / {tokens(usage['outputTokens'])} out tokens, {cost}, "
                  f"{_count(usage['generations'], 'generation')}, {_count(root['subdialogCount'], 'subdialog')}", "dim")
        )
        details(root, "   ")
        subtree(root, "")
    totals = report["totals"]
    if not report["roots"]:
        lines.append("\nno dialogs yet: `dominds new --taskdoc tasks/x.tsk \"…\"` or the panel (`dominds serve`)")
    else:
        hint = " — answer with `dominds q4h` / `dominds answer`" if totals["q4h"] else ""
        lines.append(
            f"\n{_count(totals['roots'], 'tree')}, {_count(totals['dialogs'], 'dialog')}, "
            f"{_count(totals['q4h'], 'pending question')}{hint}; {tokens(totals['tokens'])} tokens, ${totals['costUsd']:.4f}"
        )
    out.write("\n".join(lines) + "\n")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
