"""`dominds status`: every dialog as a root → subdialog tree, from the files (daemon or not).

Fast on big workspaces through the dialog index (``store/index.py``): the facts of every dialog are kept
in ``.dominds/cache/dialogs.sqlite`` with the signature of the files they came from; each run ``stat``s
those files and reads again only the dialogs that changed (or all of them when the index is gone: it
is a cache, rebuilt at will). ``--json`` assembles each dialog's stored JSON text instead of decoding
it. Tokens and cost: the generations the index keeps, priced by ``driver/usage.py`` with the catalog in
use (like the daemon). ``--no-cache`` reads every file and leaves the index alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from dominds.cli.common import command_name, workspace
from dominds.rtws import DIALOG_STATUSES, Rtws

if TYPE_CHECKING:  # imported where used: `dominds --help` registers this command without the store
    from collections.abc import Iterable

    from dominds.store.index import DialogIndex
    from dominds.store.index_entries import Entry, Tree

Node = dict[str, Any]

DEFAULT_LIMIT = 50
"""Trees shown without ``--limit`` or ``--all``: the most recently active, chosen with one ``stat`` per
tree (``store/index_recent.py``); every tree means a ``stat`` of every file of every dialog, seconds at
100,000 dialogs."""

EPILOG = f"""\
examples:
  dominds status                 the {DEFAULT_LIMIT} most recently active trees of run/
  dominds status --all           every tree, done/ and archive/ too
  dominds status --root ID       one tree (any status)
  dominds status --json | jq '.roots[].runState.kind'
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "status",
        help="show every dialog tree: agents, run states, questions, subdialogs, cost",
        description="Show the dialogs of this workspace as root → subdialog trees: agent, run state, pending "
        "questions for you, pending subdialogs, sessions (`agent!session` → subdialog), last activity, and tokens and cost per tree. "
        "Reads the files (under the workspace lock when no daemon runs), so it works with or without a daemon.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--json", action="store_true", help="print one JSON document (for scripts)")
    p.add_argument("--all", action="store_true", help="every tree, done/ and archive/ too (with --limit: the N most recent of them)")
    p.add_argument("--root", metavar="ID", help="only the tree of this root (or of the subdialog with this id; a unique prefix is enough)")
    p.add_argument("--no-cache", action="store_true", help="read every file; neither use nor update the index")
    p.add_argument(
        "--limit",
        type=_positive,
        metavar="N",
        help=f"the N most recently active trees (default {DEFAULT_LIMIT}, fast on big workspaces; the totals are those of the trees shown)",
    )
    p.set_defaults(func=_status)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of trees, 1 or more, not {text!r}")
    return value


def _warn_config_fallback(rtws: Rtws, daemon: Any) -> None:
    """A ``.minds/`` file with errors whose last good version is in use, said on stderr (config_notice.py)."""
    from dominds.cli import config_notice

    if daemon is None:
        config_notice.warn_from_files(rtws)
        return
    import asyncio

    from dominds.cli.client import DaemonClient

    async def ask() -> None:
        async with DaemonClient(daemon) as client:
            await config_notice.warn_from_daemon(client)

    asyncio.run(ask())


def _status(args: argparse.Namespace) -> int:
    from dominds.cli.client import find_daemon
    from dominds.cli.offline import reach_state

    rtws = workspace()
    statuses = DIALOG_STATUSES if args.all or args.root else ("run",)
    with reach_state(rtws, wait=2.0, read_only=True) as access:
        daemon = find_daemon(rtws)
        from dominds.store.index import DialogIndex

        index = DialogIndex(rtws, persistent=not args.no_cache)
        chosen: list[Tree] | None = None
        more = 0
        limit = None if args.root or (args.all and not args.limit) else args.limit or DEFAULT_LIMIT
        if limit:  # the N most recent without checking every dialog's files
            chosen, total = index.recent_trees(statuses, limit)
            more = total - len(chosen)
        if args.json:
            encoded, totals = report_json(rtws, index, statuses, args.root, nobody_drives=access.locked, trees=chosen)
        else:
            roots = collect(rtws, index, statuses, args.root, trees=chosen)
        index.close()
    _warn_config_fallback(rtws, daemon)
    head = {
        "rtws": str(rtws.root),
        "daemon": {"pid": daemon.pid, "port": daemon.port, "url": daemon.base_url, "panel": daemon.url}
        if daemon
        else None,
    }
    if args.json:  # assembled as text: each tree's JSON comes from the index as it is, written one by one
        out = sys.stdout
        out.write(json.dumps(head, ensure_ascii=False)[:-1] + ',"roots":[')
        for number, text in enumerate(encoded):
            out.write("," + text if number else text)
        out.write(f'],"totals":{totals}' + (f',"more":{more}' if chosen is not None else "") + "}\n")
        return 0
    if access.locked:  # nothing can be driving: a `proceeding` left by a killed process is shown interrupted
        _show_gone_drivers(roots)
    _print_report({**head, "roots": roots, "totals": _totals(roots), "more": more})
    return 0


def _show_gone_drivers(nodes: list[Node]) -> None:
    from dominds.cli.offline import as_seen_now

    for node in nodes:
        node["runState"] = as_seen_now(node.get("runState") or {}, nobody_drives=True)
        _show_gone_drivers(node["subdialogs"])


# ---------------------------------------------------------------- reading


def collect(
    rtws: Rtws, index: DialogIndex, statuses: tuple[str, ...], root_filter: str | None = None, *, trees: list[Tree] | None = None
) -> list[Node]:
    """Trees of the given statuses (or the one tree holding ``root_filter``, or ``trees`` when given),
    most recent activity first."""
    pricing = _Pricing(rtws)
    from dominds.store.derived import Derived

    kept = Derived(index, "status-aggregates", _salt(pricing), preload=True)
    out = []
    if trees is None:
        trees = index.trees(statuses, root=_wanted(rtws, root_filter), facts=True)  # every dialog is shown
    for tree in trees:
        node = _tree(tree)
        value = kept.get(tree)
        if value is None:
            aggregates = _aggregates(tree, pricing)
            kept.put(tree, json.dumps(aggregates, ensure_ascii=False, separators=(",", ":")))
        else:
            aggregates = json.loads(value)
        node.update(aggregates)
        out.append(node)
    kept.save()
    out.sort(key=lambda n: (n.get("lastModified") or "", n["rootId"]), reverse=True)  # a tie: the newer id first
    out.sort(key=lambda n: DIALOG_STATUSES.index(n["status"]))
    return out


def _wanted(rtws: Rtws, root_filter: str | None) -> tuple[str, str] | None:
    from dominds.cli.offline import locate_dialog
    from dominds.cli.resolve import resolve_dialog_id

    return locate_dialog(rtws, resolve_dialog_id(rtws, root_filter)) if root_filter else None


def _node(entry: Entry) -> Node:
    node: Node = {"selfId": entry.self_id, "rootId": entry.root_id, "status": entry.status}
    node.update(json.loads(entry.public))
    node["subdialogs"] = []
    return node


def _tree(tree: Tree) -> Node:
    root = _node(tree.root)
    nodes = {root["selfId"]: root}
    subs = [_node(entry) for entry in tree.subs]
    for sub in subs:
        nodes[sub["selfId"]] = sub
    for sub in subs:  # stored flat; the tree comes from supdialogId
        nodes.get(sub.get("supdialogId") or "", root)["subdialogs"].append(sub)
    return root


def _aggregates(tree: Tree, pricing: _Pricing) -> Node:
    """What a root shows of its whole tree: counts, tokens and cost (``driver/usage.py``), last activity."""
    from dominds.driver.usage import Usage, price_generations, totals

    tree_usage = Usage()
    for entry in tree.entries:
        if entry.generations != "[]":
            tree_usage.add(price_generations(json.loads(entry.generations), pricing.catalog))
    return {
        "subdialogCount": len(tree.subs),
        "q4hTotal": sum(e.q4h_count for e in tree.entries),
        "usage": totals(tree_usage),
        "lastActivity": max((e.last_modified for e in tree.entries), default=""),
    }


def report_json(
    rtws: Rtws,
    index: DialogIndex,
    statuses: tuple[str, ...],
    root_filter: str | None,
    *,
    nobody_drives: bool,
    trees: list[Tree] | None = None,
) -> tuple[list[str], str]:
    """The ``--json`` report's roots (each tree's JSON text, in order) and totals (JSON text), assembled
    from the index's JSON text without decoding each dialog (what ``collect`` + ``json.dumps`` give, in a
    fraction of the time)."""
    pricing = _Pricing(rtws)
    from dominds.store.derived import Derived

    kept = Derived(index, "status-json-locked" if nobody_drives else "status-json", _salt(pricing), preload=False)
    encoded: list[tuple[int, str, str, str]] = []
    totals: dict[str, Any] = {"roots": 0, "dialogs": 0, "q4h": 0, "tokens": 0, "costUsd": 0.0}
    wanted = _wanted(rtws, root_filter)
    listed: Iterable[Tree] = trees if trees is not None else index.trees(statuses, root=wanted) if wanted else index.iter_trees(statuses)
    for tree in kept.batched(listed, lambda t: (t.root.status, t.root.root_id)):
        value = kept.get(tree)
        if value is None:
            aggregates = _aggregates(tree, pricing)
            usage = aggregates["usage"]
            figures = [aggregates["q4hTotal"], usage["inputTokens"] + usage["outputTokens"], usage["costUsd"]]
            text = _render(tree, nobody_drives, json.dumps(aggregates, ensure_ascii=False, separators=(",", ":"))[1:-1])
            kept.put(tree, f"{json.dumps(figures)}\n{text}")
        else:
            line, _, text = value.partition("\n")
            figures = json.loads(line)
        totals["roots"] += 1
        totals["dialogs"] += len(tree.entries)
        totals["q4h"] += figures[0]
        totals["tokens"] += figures[1]
        totals["costUsd"] += figures[2]
        encoded.append((DIALOG_STATUSES.index(tree.root.status), tree.root.last_modified, tree.root.root_id, text))
    kept.save()
    encoded.sort(key=lambda t: (t[1], t[2]), reverse=True)  # a tie in activity: the newer id first (as listed)
    encoded.sort(key=lambda t: t[0])
    totals["costUsd"] = round(float(totals["costUsd"]), 6)
    return [t[3] for t in encoded], json.dumps(totals, separators=(",", ":"))


def _render(tree: Tree, nobody_drives: bool, root_extra: str) -> str:
    """One tree as JSON text: each dialog's stored public facts, its children nested by ``supdialogId``."""
    from dominds.cli.offline import DRIVING_KINDS, as_seen_now

    ids = {e.self_id for e in tree.entries}
    children: dict[str, list[Entry]] = defaultdict(list)
    for sub in tree.subs:  # stored flat; the tree comes from supdialogId
        children[sub.sup if sub.sup in ids else tree.root.self_id].append(sub)

    def render(entry: Entry, extra: str) -> str:
        public = entry.public
        if nobody_drives and entry.run_kind in DRIVING_KINDS:
            facts = json.loads(public)
            facts["runState"] = as_seen_now(facts.get("runState") or {}, nobody_drives=True)
            public = json.dumps(facts, ensure_ascii=False, separators=(",", ":"))
        head = json.dumps({"selfId": entry.self_id, "rootId": entry.root_id, "status": entry.status}, separators=(",", ":"))
        parts = [head[1:-1], public[1:-1], f'"subdialogs":[{",".join(render(c, "") for c in children.get(entry.self_id, ()))}]', extra]
        return "{" + ",".join(p for p in parts if p) + "}"

    return render(tree.root, root_extra)


DERIVED_VERSION = 1
"""Bump when what ``status`` keeps per tree in the index (``Derived``) changes shape or meaning."""


def _salt(pricing: _Pricing) -> str:
    """What a tree's kept tokens, cost and JSON depend on besides its files: prices and this code."""
    from dominds import __version__

    return f"{DERIVED_VERSION}:{__version__}:{pricing.sources}"


class _Pricing:
    """The prices the daemon would use (read once per run, and only when a tree must be priced)."""

    def __init__(self, rtws: Rtws) -> None:
        self.rtws = rtws
        self._catalog: Any = None

    @property
    def sources(self) -> str:
        """What the prices come from, cheaply (``driver/price_sheet.py``'s stamp: the built-in catalog,
        ``llm.yaml`` and its last good copy by inode, size and mtime, and the version). Loading the
        catalog to fingerprint it would cost more than all the rest of a run when nothing changed."""
        from dominds.driver import price_sheet

        return json.dumps(price_sheet.current_stamp(self.rtws))

    @property
    def catalog(self) -> Any:
        """The prices the last daemon kept when they are still in force (no configuration to load), else
        the catalog in use (the LLM layer's modules: 0.1-0.4 s)."""
        if self._catalog is None:
            from dominds.driver import price_sheet
            from dominds.driver.usage import catalog_in_use

            self._catalog = price_sheet.read(self.rtws) or catalog_in_use(self.rtws)
        return self._catalog


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
    from dominds.cli.render import Style, age, at, styled_run_state, tokens
    from dominds.driver.usage import format_cost

    out = sys.stdout
    style = Style.for_stream(out)
    daemon = report["daemon"]
    where = f"daemon pid {daemon['pid']} on port {daemon['port']}" if daemon else "no daemon running"
    lines = [f"{style(report['rtws'], 'bold')} — {where}"]
    if daemon and daemon.get("panel"):
        lines.append(f"panel: {daemon['panel']}")

    def describe(node: Node) -> str:
        parts = [style(node["selfId"], "bold"), at(node.get("agentId"))]
        if node.get("tellaskSession"):
            parts.append(f"session {node['tellaskSession']}")
        parts.append(styled_run_state(style, node.get("runState")))
        if node.get("q4h"):
            parts.append(style(_count(len(node["q4h"]), "question"), "yellow"))
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
            lines.append(f"{indent}{style('session', 'dim')} {entry['key']} → {entry['subdialogId']}")

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
        cost = usage["costText"]
        title = f"  “{root['title']}”" if root.get("title") else ""
        lines.append(f"{describe(root)}  {style(str(root.get('taskDocPath')), 'cyan')}{title}")
        lines.append(
            style(f"   {tokens(usage['inputTokens'])} in / {tokens(usage['outputTokens'])} out tokens, {cost}, "
                  f"{_count(usage['generations'], 'generation')}, {_count(root['subdialogCount'], 'subdialog')}", "dim")
        )
        details(root, "   ")
        subtree(root, "")
    totals = report["totals"]
    if not report["roots"]:
        me = command_name()
        panel = "the panel above" if (report["daemon"] or {}).get("panel") else f"the panel of `{me} serve`"
        lines.append(f"\nno dialogs yet: start one with `{me} run \"…\"` or in {panel}")
    else:
        hint = f" — answer with `{command_name()} answer \"…\"` (`{command_name()} q4h` lists them)" if totals["q4h"] else ""
        lines.append(
            f"\n{_count(totals['roots'], 'tree')}, {_count(totals['dialogs'], 'dialog')}, "
            f"{_count(totals['q4h'], 'pending question')}{hint}; {tokens(totals['tokens'])} tokens, {format_cost(totals['costUsd'])}"
        )
    if report.get("more"):
        lines.append(f"… and {_count(report['more'], 'more tree')}, less recently active (--limit N shows more, --all every tree)")
    out.write("\n".join(lines) + "\n")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
