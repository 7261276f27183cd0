"""Records what each generation sent to its provider (``store/request_log.py``), with its timing.

``run_generation`` calls the provider inside ``capturing()`` (``llm/wire_capture.py``) with a
``TimedReceiver`` in front of its receiver, then ``save_request`` appends the captured request to the
course's request log before the generation's finish record is written (persist before publish: a panel
that sees the reply end can open its request). Saving never fails a generation: a request that cannot be
stored is a warning in the log.
"""

from __future__ import annotations

import logging
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from dominds.dialog.model import Dialog
from dominds.ids import now_iso
from dominds.llm.base import GenerationReceiver
from dominds.llm.wire_capture import WireCapture
from dominds.store.course_records import Usage
from dominds.store.request_log import RequestLog, RequestRecord, request_log_name

log = logging.getLogger("dominds.driver")

_LOGS: weakref.WeakKeyDictionary[Dialog, RequestLog] = weakref.WeakKeyDictionary()
"""Each loaded dialog's request log writer of its current course (it remembers the chunks already stored)."""


@dataclass
class TimedReceiver:
    """Passes a provider's stream on, noting when the first output arrived."""

    inner: GenerationReceiver
    started: float = field(default_factory=time.perf_counter)
    first_output: float | None = None

    def _output(self) -> None:
        if self.first_output is None:
            self.first_output = time.perf_counter()

    async def thinking_start(self) -> None:
        self._output()
        await self.inner.thinking_start()

    async def thinking_chunk(self, text: str) -> None:
        await self.inner.thinking_chunk(text)

    async def thinking_finish(self, provider_data: dict[str, Any] | None = None) -> None:
        self._output()
        await self.inner.thinking_finish(provider_data)

    async def saying_start(self) -> None:
        self._output()
        await self.inner.saying_start()

    async def saying_chunk(self, text: str) -> None:
        await self.inner.saying_chunk(text)

    async def saying_finish(self) -> None:
        await self.inner.saying_finish()

    async def func_call(self, call_id: str, name: str, arguments_json: str) -> None:
        self._output()
        await self.inner.func_call(call_id, name, arguments_json)

    async def usage_so_far(self, usage: Usage) -> None:
        await self.inner.usage_so_far(usage)

    def first_output_ms(self) -> int | None:
        return None if self.first_output is None else int((self.first_output - self.started) * 1000)


def save_request(
    dialog: Dialog,
    capture: WireCapture,
    *,
    genseq: int,
    provider: str,
    api_type: str,
    model: str,
    timed: TimedReceiver,
) -> None:
    """Append the request ``capture`` holds (if the provider sent one) to the course's request log."""
    sent = capture.last
    if sent is None:
        return
    course = dialog.latest.current_course
    path = dialog.files.dir / request_log_name(course)
    writer = _LOGS.get(dialog)
    if writer is None or writer.path != path:  # a new course (or the dialog's directory moved)
        writer = _LOGS[dialog] = RequestLog(path)
    record = RequestRecord(
        ts=now_iso(),
        course=course,
        genseq=genseq,
        provider=provider,
        api_type=api_type,
        model=model,
        method=sent.method,
        url=sent.url,
        attempts=capture.attempts,
        first_output_ms=timed.first_output_ms(),
        total_ms=int((time.perf_counter() - timed.started) * 1000),
    )
    try:
        writer.append(record, sent.body)
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # what the model saw is not worth a failed turn
        _LOGS.pop(dialog, None)  # read the file again next time
        log.warning("could not record the request of generation %s of %s: %s", genseq, dialog.self_id, exc)
