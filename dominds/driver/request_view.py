"""What the model saw for one generation: its request as sent and the generation's figures.

One owner of the view that ``GET /api/dialogs/{selfId}/requests/{genseq}`` answers, the panel's Request
view shows and ``dominds show DIALOG --request GENSEQ`` prints: the request record (``store/request_log.py``)
with its body, and from the course file the generation's end (status, tokens, provider time, cost priced
with the catalog in use). Read from the files alone, so it works with or without a daemon.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dominds.llm.catalog import Catalog
from dominds.store.course_records import GenFinishRecord
from dominds.store.dialog_store import DialogFiles
from dominds.store.request_log import REQUEST_LOG_VERSION, StoredRequest, read_request, request_log_name

VIEW_VERSION = REQUEST_LOG_VERSION


class RequestNotFound(LookupError):
    """No request is recorded for that generation (say why, for the person who asked)."""


@dataclass(frozen=True)
class RequestView:
    view: dict[str, Any]
    body: bytes


def request_view(files: DialogFiles, genseq: int, course: int | None, catalog: Catalog | None) -> RequestView:
    """The view of generation ``genseq`` of ``course`` (default: the current course); ``RequestNotFound``
    when none is recorded. ``StoreError`` when the files cannot be read."""
    meta = files.read_meta()
    latest = files.read_latest()
    current = latest.current_course if latest is not None else 1
    wanted = current if course is None else course
    if not 1 <= wanted <= current:
        raise RequestNotFound(f"dialog {meta.id} has courses 1..{current}, not {wanted}")
    stored = read_request(files.dir / request_log_name(wanted), genseq)
    if stored is None:
        raise RequestNotFound(
            f"no request is recorded for generation {genseq} of course {wanted} of dialog {meta.id} (it did not "
            "reach a provider, or it ran before requests were recorded)"
        )
    view = _record_fields(stored)
    view["dialog"] = {"selfId": meta.id, "rootId": meta.root_id}
    finish = next(
        (r for r in reversed(files.read_course(wanted)) if isinstance(r, GenFinishRecord) and r.genseq == genseq), None
    )
    if finish is not None:
        view["generation"] = _generation_fields(finish, catalog)
    try:
        view["body"] = json.loads(stored.body)
    except ValueError:
        view["body"] = None  # not JSON: the raw body is still served as it was sent
    return RequestView(view, stored.body)


def _record_fields(stored: StoredRequest) -> dict[str, Any]:
    record = stored.record
    return {
        "v": VIEW_VERSION,
        "course": record.course,
        "genseq": record.genseq,
        "ts": record.ts,
        "provider": record.provider,
        "apiType": record.api_type,
        "model": record.model,
        "method": record.method,
        "url": record.url,
        "attempts": record.attempts,
        "retries": max(0, record.attempts - 1),
        "size": record.size,
        "sha256": record.sha256,
        "firstOutputMs": record.first_output_ms,
        "totalMs": record.total_ms,
    }


def _generation_fields(finish: GenFinishRecord, catalog: Catalog | None) -> dict[str, Any]:
    from dominds.driver.usage import format_cost

    fields: dict[str, Any] = {"status": finish.status, "finishReason": finish.finish_reason, "durationMs": finish.duration_ms}
    usage = finish.usage
    if usage is None or not usage.available:
        return fields
    fields["usage"] = {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheReadTokens": usage.cache_read_tokens,
        "cacheWriteTokens": usage.cache_write_tokens,
        "reasoningTokens": usage.reasoning_tokens,
    }
    info = catalog.model(finish.provider or "", finish.model or "") if catalog is not None else None
    if info is not None and info.pricing is not None:
        cost = info.pricing.cost_usd(
            usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
            usage.cache_write_long_tokens, per_request=True,
        )
        fields["costUsd"] = round(cost, 6)
        fields["costText"] = format_cost(cost)
    return fields
