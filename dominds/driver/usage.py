"""Usage and cost totals per dialog and per root tree, from the ``gen_finish_record``s of every course."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dominds.store.course_records import GenFinishRecord
from dominds.store.errors import StoreError

if TYPE_CHECKING:
    from dominds.driver.engine import Engine


def usage_totals(engine: Engine, root_id: str) -> dict[str, Any]:
    status = engine.store.locate_root(root_id)
    catalog = engine.config.get().catalog
    dialogs = []
    tree: dict[str, float] = {"inputTokens": 0, "outputTokens": 0, "cacheReadTokens": 0, "cacheWriteTokens": 0, "generations": 0, "costUsd": 0.0}
    for files in engine.store.iter_tree(status, root_id):
        totals: dict[str, float] = {key: 0 for key in tree} | {"costUsd": 0.0}
        error = None
        try:
            for course in files.course_numbers():
                for record in files.read_course(course):
                    if not isinstance(record, GenFinishRecord) or record.usage is None:
                        continue
                    u = record.usage
                    totals["inputTokens"] += u.input_tokens
                    totals["outputTokens"] += u.output_tokens
                    totals["cacheReadTokens"] += u.cache_read_tokens
                    totals["cacheWriteTokens"] += u.cache_write_tokens
                    totals["generations"] += 1
                    model = catalog.model(record.provider or "", record.model or "")
                    if model is not None and model.pricing is not None:
                        totals["costUsd"] += model.pricing.cost_usd(
                            u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens
                        )
        except StoreError as exc:
            error = str(exc)
        dialogs.append({"selfId": files.dir.name, **totals, **({"error": error} if error else {})})
        for key in tree:
            tree[key] += totals[key]
    tree["costUsd"] = round(tree["costUsd"], 6)
    return {"rootId": root_id, "status": status, "total": tree, "dialogs": dialogs}
