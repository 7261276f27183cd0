"""The one owner of tokens and cost: counted from the course files, priced with the catalog in use.

Every figure a user sees — a row of the panel's dialog list, the dialog header, ``GET /api/dialogs``,
``GET /api/dialogs/{root}/usage``, ``dominds status`` and the workflow pages — comes from here, as one
total per dialog *tree* (a root and all its subdialogs), written by ``format_cost``. Before, the panel's
rows cached the cost by the mtime of ``latest.yaml`` (a coarse clock left a row at "$0" after a
generation the header already counted) and ``dominds status`` had its own counting and pricing.

Counting: only the ``gen_finish_record`` lines of a course file are decoded (found by a byte search);
a torn last line is skipped until it is complete. ``UsageBook`` remembers each file's counts by its
(inode, size, mtime), so a listing re-reads only the files that grew. Pricing uses the catalog in use
(``catalog_in_use``: the last good ``llm.yaml`` while the live one has errors, like the daemon).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dominds.driver.last_good import LastGood, has_errors
from dominds.llm.catalog import Catalog, load_catalog
from dominds.rtws import Rtws
from dominds.store.dialog_store import DialogStore
from dominds.store.errors import StoreError

USAGE_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
TOTAL_KEYS = (*USAGE_FIELDS, "generations", "costUsd")
ModelCounts = dict[str, list[int]]
"""``provider/model`` → [input, output, cacheRead, cacheWrite, generations]."""

_FINISH_MARK = b'"gen_finish_record"'


def count_finishes(data: bytes) -> ModelCounts:
    """Token counts per model of the ``gen_finish_record`` lines in one course file's bytes."""
    totals: ModelCounts = {}
    start = 0
    while (found := data.find(_FINISH_MARK, start)) != -1:  # decode only those lines
        line_start = data.rfind(b"\n", 0, found) + 1
        line_end = data.find(b"\n", found)
        start = len(data) if line_end == -1 else line_end
        try:
            record = json.loads(data[line_start:start])
        except ValueError:
            continue  # a torn last line: that generation is counted once it is complete
        usage = record.get("usage") if isinstance(record, dict) else None
        if not isinstance(usage, dict):
            continue
        counts = totals.setdefault(f"{record.get('provider') or ''}/{record.get('model') or ''}", [0, 0, 0, 0, 0])
        for index, field in enumerate(USAGE_FIELDS):
            value = usage.get(field)
            counts[index] += value if isinstance(value, int) and not isinstance(value, bool) else 0
        counts[4] += 1
    return totals


def add_counts(into: ModelCounts, more: ModelCounts) -> ModelCounts:
    for model, counts in more.items():
        mine = into.setdefault(model, [0, 0, 0, 0, 0])
        for index, value in enumerate(counts):
            mine[index] += value
    return into


def price(by_model: ModelCounts, catalog: Catalog) -> dict[str, Any]:
    """Totals of ``by_model`` with their cost (USD, rounded to 6 places) and the text every place shows."""
    total: dict[str, Any] = dict.fromkeys(TOTAL_KEYS, 0) | {"costUsd": 0.0}
    for model_key, counts in by_model.items():
        for index, field in enumerate((*USAGE_FIELDS, "generations")):
            total[field] += counts[index]
        provider, _, model = model_key.partition("/")
        info = catalog.model(provider, model)
        if info is not None and info.pricing is not None:
            total["costUsd"] += info.pricing.cost_usd(*counts[:4])
    total["costUsd"] = round(total["costUsd"], 6)
    total["costText"] = format_cost(total["costUsd"])
    total["tokensText"] = format_tokens(total["inputTokens"] + total["outputTokens"])
    return total


def format_cost(usd: float) -> str:
    """``$0.00``, ``$0.0612``, ``$3.21``: the one way a cost is written (panel rows, header, CLI)."""
    if usd <= 0:
        return "$0.00"
    return f"${usd:.4f}" if usd < 1 else f"${usd:,.2f}"


def format_tokens(count: float) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 1000:
        return f"{count / 1000:.1f}k"
    return str(int(count))


def catalog_in_use(rtws: Rtws) -> Catalog:
    """The catalog a daemon would use now: ``llm.yaml``, or its last good copy while it has errors."""
    catalog, problems = load_catalog(rtws)
    if has_errors(problems):
        last_good = LastGood(rtws)
        if last_good.saved_at(rtws.llm_yaml) is not None:
            catalog = load_catalog(last_good.shadow)[0]
    return catalog


class UsageBook:
    """Counts per course file, re-read only when the file's (inode, size, mtime) changed."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[tuple[int, int, int], ModelCounts]] = {}

    def file_counts(self, path: Path) -> ModelCounts:
        key = str(path)
        try:
            info = os.stat(path)
        except FileNotFoundError:
            self._files.pop(key, None)
            return {}
        except OSError as exc:
            raise StoreError(f"{path}: {exc.strerror or exc}") from exc
        signature = (info.st_ino, info.st_size, info.st_mtime_ns)
        cached = self._files.get(key)
        if cached is not None and cached[0] == signature:
            return cached[1]
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StoreError(f"{path}: {exc.strerror or exc}") from exc
        counts = count_finishes(data)
        self._files[key] = (signature, counts)
        return counts

    def counts(self, course_files: Iterable[Path]) -> ModelCounts:
        total: ModelCounts = {}
        for path in course_files:
            add_counts(total, self.file_counts(path))
        return total


def usage_totals(store: DialogStore, catalog: Catalog, book: UsageBook, root_id: str) -> dict[str, Any]:
    """The tree total of one root and each of its dialogs' own figures (``GET /api/dialogs/{root}/usage``)."""
    status = store.locate_root(root_id)
    dialogs = []
    tree: ModelCounts = {}
    for files in store.iter_tree(status, root_id):
        error = None
        own: ModelCounts = {}
        try:
            own = book.counts(files.course(n) for n in sorted(files.course_numbers()))
        except (StoreError, OSError) as exc:
            error = str(exc)
        add_counts(tree, own)
        dialogs.append({"selfId": files.dir.name, **price(own, catalog), **({"error": error} if error else {})})
    return {"rootId": root_id, "status": status, "total": price(tree, catalog), "dialogs": dialogs}
