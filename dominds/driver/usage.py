"""Usage and cost totals per dialog and per root tree, from the ``gen_finish_record``s of every course.

Only the finish lines are decoded (a substring test picks them out), so listing costs for thousands of
dialogs reads files but never validates whole transcripts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dominds.driver.services import EngineServices
from dominds.store.errors import StoreError

_FINISH_MARK = '"type":"gen_finish_record"'
TOTAL_KEYS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "generations", "costUsd")


def _finish_lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StoreError(f"{path}: {exc.strerror or exc}") from exc
    out = []
    for line in text.split("\n"):
        if _FINISH_MARK in line:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a torn last line: the generation's usage was never recorded
    return out


def usage_totals(engine: EngineServices, root_id: str) -> dict[str, Any]:
    status = engine.store.locate_root(root_id)
    catalog = engine.config.get().catalog
    dialogs = []
    tree: dict[str, float] = dict.fromkeys(TOTAL_KEYS, 0)
    for files in engine.store.iter_tree(status, root_id):
        totals: dict[str, float] = dict.fromkeys(TOTAL_KEYS, 0)
        error = None
        try:
            for course in files.course_numbers():
                for finish in _finish_lines(files.course(course)):
                    usage = finish.get("usage")
                    if not isinstance(usage, dict):
                        continue
                    counts = [int(usage.get(k) or 0) for k in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")]
                    for key, value in zip(TOTAL_KEYS, counts, strict=False):
                        totals[key] += value
                    totals["generations"] += 1
                    model = catalog.model(str(finish.get("provider") or ""), str(finish.get("model") or ""))
                    if model is not None and model.pricing is not None:
                        long_writes = int(usage.get("cacheWriteLongTokens") or 0)
                        inputs, outputs, reads, writes = counts
                        totals["costUsd"] += model.pricing.cost_usd(
                            inputs, outputs, reads, writes, long_writes, per_request=True
                        )
        except StoreError as exc:
            error = str(exc)
        dialogs.append({"selfId": files.dir.name, **totals, **({"error": error} if error else {})})
        for key in tree:
            tree[key] += totals[key]
    tree["costUsd"] = round(tree["costUsd"], 6)
    return {"rootId": root_id, "status": status, "total": tree, "dialogs": dialogs}
