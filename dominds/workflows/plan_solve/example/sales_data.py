"""The sample data set of the data-to-slides example: two years of order lines, generated deterministically.

``rtws-template/plan-solve/sales.csv.gz`` is this module's output, committed compressed (a test checks
that it still is); the offline example workspace writes it from here. The numbers follow simple patterns
a deck can show — growth from 2024 to 2025, a Q4 peak, regional differences, online sales gaining share —
with enough noise that only a real query gives the exact totals.

Only ``random.Random.random`` is used: its sequence for an integer seed is the same on every CPython
version and platform, so the file is the same everywhere.
"""

from __future__ import annotations

import csv
import gzip
import io
import random
from datetime import date, timedelta
from pathlib import Path

from dominds.store.atomic import write_atomic

DATA_VERSION = 1
"""Raised whenever the generated rows change (copies outside the workspace are keyed by it)."""
SEED = 20250101
START, END = date(2024, 1, 1), date(2025, 12, 31)
COLUMNS = ("order_id", "order_date", "region", "channel", "category", "product", "units", "unit_price", "revenue")
REGIONS = (("East", 0.34), ("South", 0.27), ("North", 0.22), ("West", 0.17))
PRODUCTS = {
    "Electronics": (("Laptop", 899.0), ("Headphones", 129.0), ("Smartwatch", 249.0)),
    "Home": (("Blender", 79.0), ("Desk lamp", 39.0), ("Air purifier", 189.0)),
    "Apparel": (("Jacket", 119.0), ("Sneakers", 89.0), ("T-shirt", 19.0)),
    "Sports": (("Yoga mat", 29.0), ("Bicycle", 549.0), ("Tennis racket", 99.0)),
}
CATEGORY_WEIGHTS = (("Electronics", 0.30), ("Home", 0.25), ("Apparel", 0.28), ("Sports", 0.17))
ORDERS_PER_DAY = 40
"""About 36,000 rows over the two years."""


def _pick(rng: random.Random, weighted: tuple[tuple[str, float], ...]) -> str:
    point, total = rng.random(), 0.0
    for name, weight in weighted:
        total += weight
        if point < total:
            return name
    return weighted[-1][0]


def rows() -> list[tuple[object, ...]]:
    rng = random.Random(SEED)
    out: list[tuple[object, ...]] = []
    day, order_id = START, 100_000
    while day <= END:
        growth = 1.0 + 0.18 * ((day - START).days / 365.0)  # about +18 % a year
        season = 1.35 if day.month in (11, 12) else 1.1 if day.month in (9, 10) else 0.9 if day.month in (1, 2) else 1.0
        count = int(ORDERS_PER_DAY * growth * season * (0.8 + 0.4 * rng.random()))
        for _ in range(count):
            order_id += 1
            region = _pick(rng, REGIONS)
            online_share = 0.30 + 0.10 * ((day - START).days / 730.0)  # online gains share over time
            channel = "Online" if rng.random() < online_share else "Retail" if rng.random() < 0.68 else "Partner"
            category = _pick(rng, CATEGORY_WEIGHTS)
            products = PRODUCTS[category]
            product, list_price = products[int(rng.random() * len(products))]
            units = 1 + int(rng.random() ** 2 * (8 if list_price < 100 else 3))
            discount = 0.0 if rng.random() < 0.6 else round(0.05 * (1 + int(rng.random() * 4)), 2)
            unit_price = round(list_price * (1 - discount), 2)
            out.append((order_id, day.isoformat(), region, channel, category, product, units, unit_price, round(units * unit_price, 2)))
        day += timedelta(days=1)
    return out


def csv_text() -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(rows())
    return buffer.getvalue()


def write_sales_csv(path: Path) -> Path:
    """Write the data set to ``path`` (gzip-compressed when the name ends in ``.gz``)."""
    data = csv_text().encode("utf-8")
    write_atomic(path, gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)
    return path
