"""The prices in force, kept on disk for the next start: ``.dominds/cache/prices.json``.

Pricing a listing needs the catalog, and loading the catalog needs the configuration's modules (YAML
and pydantic models: 0.1 s on the development machine). While ``dominds serve`` starts, the front
application lists the dialogs before those modules are loaded (server/front.py), pricing them with the
sheet the last configuration load kept here.

The sheet is stamped with what the catalog is made of: the built-in catalog file, ``.minds/llm.yaml``
and its last good copy (used while the live file has errors, ``driver/last_good.py``), each by inode,
size and modification time, and the version of Dominds. ``read`` gives the sheet only while every one
of them is unchanged, so it prices exactly as a configuration loaded now would; otherwise ``None``,
and the caller waits for the configuration. It is a cache: written atomically without a sync, read
defensively (a torn, foreign or older file is ``None``), rewritten when the prices or the stamp change.

Record (version 1)::

    {"version": 1, "stamp": [...], "models": [[provider, model, pricing or null], ...]}

where ``pricing`` is the mapping ``llm.yaml`` takes (``llm/pricing.py``: ``input``, ``output``,
``cache_read``, ``cache_write``, ``cache_write_long``, ``long_context``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dominds import __version__
from dominds.driver.last_good import LastGood
from dominds.driver.usage import PriceSheet
from dominds.llm import BUILTIN_CATALOG_PATH
from dominds.llm.pricing import ModelPricing, parse_pricing
from dominds.rtws import STATE_FILE_MODE, Rtws
from dominds.store.atomic import replace_unsynced

if TYPE_CHECKING:
    from dominds.llm.catalog import Catalog

SHEET_VERSION = 1
SHEET_NAME = "prices.json"

Sources = list[Any]
"""What a catalog was loaded from, read before it was (``sources``)."""


def path(rtws: Rtws) -> Path:
    return rtws.cache_dir / SHEET_NAME


def _signature(file: Path) -> list[int] | None:
    try:
        st = os.stat(file)
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def sources(rtws: Rtws) -> Sources:
    """The built-in catalog and ``llm.yaml`` as they are now: take it before loading the catalog."""
    return [_signature(BUILTIN_CATALOG_PATH), _signature(rtws.llm_yaml)]


def _stamp(rtws: Rtws, loaded_from: Sources) -> list[Any]:
    # the last good copy as it is after the load: a load without errors refreshes it
    last_good = LastGood(rtws)
    return [SHEET_VERSION, __version__, *loaded_from, _signature(last_good.copy_of(rtws.llm_yaml))]


def current_stamp(rtws: Rtws) -> list[Any]:
    """The stamp a sheet kept now would have: equal stamps, equal prices."""
    return _stamp(rtws, sources(rtws))


def keep(rtws: Rtws, catalog: Catalog, loaded_from: Sources) -> None:
    """Keep the prices of ``catalog``, loaded from ``loaded_from`` (``sources``); a failure is no harm."""
    record = sheet_record(PriceSheet.of(catalog), _stamp(rtws, loaded_from))
    data = json.dumps(record, separators=(",", ":")).encode()
    target = path(rtws)
    with contextlib.suppress(OSError):
        if target.read_bytes() == data:
            return
    with contextlib.suppress(OSError):  # a read-only workspace: the next start waits for the configuration
        replace_unsynced(target, data, STATE_FILE_MODE)


def read(rtws: Rtws) -> PriceSheet | None:
    """The kept prices, if they are those a configuration loaded now would have; else ``None``."""
    try:
        record = json.loads(path(rtws).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, unreadable, torn (UnicodeDecodeError is a ValueError)
        return None
    return sheet_from_record(record, current_stamp(rtws))


def sheet_record(sheet: PriceSheet, stamp: list[Any]) -> dict[str, Any]:
    """The record of ``sheet`` (see the module docstring)."""
    models = [
        [provider_key, model_key, None if model.pricing is None else dataclasses.asdict(model.pricing)]
        for (provider_key, model_key), model in sheet.models.items()
    ]
    return {"version": SHEET_VERSION, "stamp": stamp, "models": models}


def sheet_from_record(record: object, stamp: list[Any]) -> PriceSheet | None:
    """The sheet of ``record`` if it is one of this version stamped ``stamp``; else ``None``."""
    if not isinstance(record, dict) or record.get("version") != SHEET_VERSION or record.get("stamp") != stamp:
        return None
    rows = record.get("models")
    if not isinstance(rows, list):
        return None
    models: dict[tuple[str, str], ModelPricing | None] = {}
    for row in rows:
        if not (isinstance(row, list) and len(row) == 3 and isinstance(row[0], str) and isinstance(row[1], str)):
            return None
        pricing = None if row[2] is None else parse_pricing(row[2])
        if isinstance(pricing, str):  # what is wrong with it
            return None
        models[(row[0], row[1])] = pricing
    return PriceSheet(models)
