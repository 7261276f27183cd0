"""The one owner of tokens and cost: counted from the course files, priced with the catalog in use.

Every figure a user sees — a row of the panel's dialog list, the dialog header, ``GET /api/dialogs``,
``GET /api/dialogs/{root}/usage``, ``dominds status`` and the workflow pages — comes from here, as one
total per dialog *tree* (a root and all its subdialogs), written by ``format_cost``. Before, the panel's
rows cached the cost by the mtime of ``latest.yaml`` (a coarse clock left a row at "$0" after a
generation the header already counted) and ``dominds status`` had its own counting and pricing.

Counting: ``store.dialog_facts.finish_generations`` decodes only the ``gen_finish_record`` lines of a course
file (and the ``mcp_sampling_record`` ones: a completion an MCP server asked of the member's model is paid for too) (the dialog index keeps them per dialog, so listings never read a course file that did not
change); a torn last line is skipped until it is complete. Each generation is priced on its own
(``per_request``: a long request pays the model's long-context rates), with the catalog in use
(``catalog_in_use``: the last good ``llm.yaml`` while the live one has errors, like the daemon).
``UsageBook`` remembers each file's figures by its (inode, size, mtime) and the prices they were
computed with, so a listing re-reads only the files that grew.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from dominds.driver.last_good import LastGood, has_errors
from dominds.llm.pricing import ModelPricing
from dominds.rtws import Rtws
from dominds.store.dialog_facts import finish_generations
from dominds.store.errors import StoreError

if TYPE_CHECKING:  # `dominds status` prices without loading the store's records (pydantic)
    from dominds.llm.catalog import Catalog
    from dominds.store.dialog_store import DialogStore

USAGE_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
TOTAL_KEYS = (*USAGE_FIELDS, "generations", "costUsd")


@dataclass
class Usage:
    """Tokens per ``provider/model`` ([input, output, cacheRead, cacheWrite, generations]) and their cost."""

    by_model: dict[str, list[int]] = field(default_factory=dict)
    cost_usd: float = 0.0

    def add(self, other: Usage) -> Usage:
        for model, counts in other.by_model.items():
            mine = self.by_model.setdefault(model, [0, 0, 0, 0, 0])
            for index, value in enumerate(counts):
                mine[index] += value
        self.cost_usd += other.cost_usd
        return self

    def to_json(self) -> dict[str, Any]:
        return {"byModel": self.by_model, "costUsd": self.cost_usd}

    @classmethod
    def from_json(cls, raw: Any) -> Usage:
        if not isinstance(raw, dict):
            return cls()
        return cls({k: [int(x) for x in v] for k, v in (raw.get("byModel") or {}).items()}, float(raw.get("costUsd") or 0))


class PricedModel(Protocol):
    @property
    def pricing(self) -> ModelPricing | None: ...


class Prices(Protocol):
    """What pricing needs of a catalog: a model's prices (a ``Catalog``, or a ``PriceSheet`` of one)."""

    def model(self, provider_key: str, model_key: str) -> PricedModel | None: ...


class SheetModel(NamedTuple):
    pricing: ModelPricing | None


class PriceSheet:
    """Every model's prices of a catalog, by (provider, model), without the catalog: what a listing needs
    before the configuration's modules are loaded (``driver/price_sheet.py`` keeps one on disk)."""

    def __init__(self, models: dict[tuple[str, str], ModelPricing | None]) -> None:
        self.models = {key: SheetModel(pricing) for key, pricing in models.items()}
        self.fingerprint = _fingerprint(models.items())

    @classmethod
    def of(cls, catalog: Catalog) -> PriceSheet:
        return cls(
            {
                (provider_key, model_key): info.pricing
                for provider_key, provider in catalog.providers.items()
                for model_key, info in provider.models.items()
            }
        )

    def model(self, provider_key: str, model_key: str) -> SheetModel | None:
        return self.models.get((provider_key, model_key))


def count_finishes(data: bytes, catalog: Catalog) -> Usage:
    """The usage recorded in one course file's bytes, each generation priced on its own."""
    return price_generations(finish_generations(data), catalog)


def price_generations(generations: Iterable[Sequence[Any]], catalog: Prices) -> Usage:
    """Usage of generations as ``store.dialog_facts.finish_generations`` lists them, each priced on its own
    (``per_request``: a long request pays the model's long-context rates)."""
    usage = Usage()
    for key, inputs, outputs, reads, writes, long_writes in generations:
        mine = usage.by_model.setdefault(key, [0, 0, 0, 0, 0])
        for index, value in enumerate((inputs, outputs, reads, writes)):
            mine[index] += value
        mine[4] += 1
        provider, _, model = str(key).partition("/")
        info = catalog.model(provider, model)
        if info is not None and info.pricing is not None:
            usage.cost_usd += info.pricing.cost_usd(inputs, outputs, reads, writes, long_writes, per_request=True)
    return usage


def totals(usage: Usage) -> dict[str, Any]:
    """The figures every place shows: token counts, generations, cost (USD, 6 places) and their text."""
    total: dict[str, Any] = dict.fromkeys(TOTAL_KEYS, 0)
    for counts in usage.by_model.values():
        for index, key in enumerate((*USAGE_FIELDS, "generations")):
            total[key] += counts[index]
    total["costUsd"] = round(usage.cost_usd, 6)
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
    # imported here: it loads the LLM layer (0.4 s of imports), which `status` rarely needs
    from dominds.llm.catalog_yaml import load_catalog

    catalog, problems = load_catalog(rtws)
    if has_errors(problems):
        last_good = LastGood(rtws)
        if last_good.saved_at(rtws.llm_yaml) is not None:
            catalog = load_catalog(last_good.shadow)[0]
    return catalog


def pricing_fingerprint(catalog: Catalog | PriceSheet) -> str:
    """Changes when any price changes (cached figures are then recomputed); a catalog and its sheet agree."""
    return catalog.fingerprint if isinstance(catalog, PriceSheet) else PriceSheet.of(catalog).fingerprint


def _fingerprint(models: Iterable[tuple[tuple[str, str], ModelPricing | None]]) -> str:
    prices = sorted((provider_key, model_key, repr(pricing)) for (provider_key, model_key), pricing in models)
    return hashlib.blake2b(repr(prices).encode(), digest_size=8).hexdigest()


BOOK_FILES = 1024
"""Course files whose figures ``UsageBook`` keeps, the most recently asked for: the panel asks for the
usage of every dialog it shows, and a book that kept every file ever asked for grew with every dialog
a person ever looked at, driven or not."""


class UsageBook:
    """Figures per course file, recomputed only when the file (inode, size, mtime) or the prices changed."""

    def __init__(self) -> None:
        self._files: OrderedDict[str, tuple[tuple[int, int, int, str], Usage]] = OrderedDict()
        self._prices: tuple[Catalog, str] | None = None
        self._lock = threading.Lock()
        """Figures are counted in worker threads (``Engine.usage_totals_off_loop``) as well as on the loop;
        a file is read and counted outside it."""

    def __len__(self) -> int:
        """Course files whose figures are kept (at most ``BOOK_FILES``)."""
        return len(self._files)

    def _fingerprint(self, catalog: Catalog) -> str:
        if self._prices is None or self._prices[0] is not catalog:
            self._prices = (catalog, pricing_fingerprint(catalog))
        return self._prices[1]

    def file_usage(self, path: Path, catalog: Catalog) -> Usage:
        key = str(path)
        try:
            info = os.stat(path)
        except FileNotFoundError:
            with self._lock:
                self._files.pop(key, None)
            return Usage()
        except OSError as exc:
            raise StoreError(f"{path}: {exc.strerror or exc}") from exc
        with self._lock:
            signature = (info.st_ino, info.st_size, info.st_mtime_ns, self._fingerprint(catalog))
            cached = self._files.get(key)
            if cached is not None and cached[0] == signature:
                self._files.move_to_end(key)
                return cached[1]
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return Usage()
        except OSError as exc:
            raise StoreError(f"{path}: {exc.strerror or exc}") from exc
        usage = count_finishes(data, catalog)
        with self._lock:
            self._files[key] = (signature, usage)
            self._files.move_to_end(key)
            while len(self._files) > BOOK_FILES:
                self._files.popitem(last=False)
        return usage

    def usage(self, course_files: Iterable[Path], catalog: Catalog) -> Usage:
        total = Usage()
        for path in course_files:
            total.add(self.file_usage(path, catalog))
        return total


def usage_totals(store: DialogStore, catalog: Catalog, book: UsageBook, root_id: str) -> dict[str, Any]:
    """The tree total of one root and each of its dialogs' own figures (``GET /api/dialogs/{root}/usage``)."""
    status = store.locate_root(root_id)
    dialogs = []
    tree = Usage()
    for files in store.iter_tree(status, root_id):
        error = None
        own = Usage()
        try:
            own = book.usage((files.course(n) for n in sorted(files.course_numbers())), catalog)
        except (StoreError, OSError) as exc:
            error = str(exc)
        tree.add(own)
        dialogs.append({"selfId": files.dir.name, **totals(own), **({"error": error} if error else {})})
    return {"rootId": root_id, "status": status, "total": totals(tree), "dialogs": dialogs}
