"""Records what each generation sent to its provider (``store/request_log.py``), with its timing.

``run_generation`` calls the provider inside ``capturing()`` (``llm/wire_capture.py``) with a
``TimedReceiver`` in front of its receiver. A ``RequestRecorder`` appends each request to the course's
request log as it goes out (a generation cut by a crash still shows what it sent), and its attempts and
timing when the provider call ends, before the generation's finish record is written (persist before
publish: a panel that sees the reply end can open its request with its figures). Recording never fails a
generation: a request that cannot be stored is a warning in the log.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dominds.dialog.model import Dialog
from dominds.ids import now_iso
from dominds.llm.base import ForwardingReceiver, GenerationReceiver
from dominds.llm.wire_capture import SentRequest, WireCapture
from dominds.store.errors import StoreError
from dominds.store.request_log import RequestEndRecord, RequestLog, RequestRecord, request_log_name

log = logging.getLogger("dominds.driver")

_LOGS: weakref.WeakKeyDictionary[Dialog, RequestLog] = weakref.WeakKeyDictionary()
"""Each loaded dialog's request log writer of its current course (it remembers the chunks already stored)."""


class TimedReceiver(ForwardingReceiver):
    """Passes a provider's stream on, noting when the first output arrived."""

    def __init__(self, inner: GenerationReceiver) -> None:
        super().__init__(inner)
        self.started = time.perf_counter()
        self.first_output: float | None = None

    def output_started(self) -> None:
        if self.first_output is None:
            self.first_output = time.perf_counter()

    async def thinking_finish(self, provider_data: dict[str, Any] | None = None) -> None:
        self.output_started()  # a provider may send a finished thinking block with no start
        await self.inner.thinking_finish(provider_data)

    def first_output_ms(self) -> int | None:
        return None if self.first_output is None else int((self.first_output - self.started) * 1000)


@dataclass
class RequestRecorder:
    """Records one generation's request: each body as it goes out (``sent``, the capture's hook), then the
    attempts and timing when the provider call ends (``finished``)."""

    dialog: Dialog
    genseq: int
    provider: str
    api_type: str
    model: str
    timed: TimedReceiver
    _recorded: bytes | None = None

    def sent(self, sent: SentRequest, attempt: int) -> None:
        if self._recorded == sent.body:
            return  # a retry of the same body: only the count changes, told at the end
        record = RequestRecord(
            ts=now_iso(), course=self.dialog.latest.current_course, genseq=self.genseq, provider=self.provider,
            api_type=self.api_type, model=self.model, method=sent.method, url=sent.url, attempts=attempt,
        )
        if self._write(lambda log: log.append(record, sent.body)):
            self._recorded = sent.body

    def finished(self, capture: WireCapture) -> None:
        if self._recorded is None:
            return  # nothing was sent (or it could not be recorded)
        end = RequestEndRecord(
            ts=now_iso(), genseq=self.genseq, attempts=capture.attempts, first_output_ms=self.timed.first_output_ms(),
            total_ms=int((time.perf_counter() - self.timed.started) * 1000),
        )
        self._write(lambda log: log.append_end(end))

    def _write(self, write: Callable[[RequestLog], object]) -> bool:
        dialog = self.dialog
        writer = _request_log(dialog)
        try:
            write(writer)
            return True
        except (OSError, UnicodeDecodeError, ValueError) as exc:  # what the model saw is not worth a failed turn
            _LOGS.pop(dialog, None)  # read the file again next time
            log.warning("could not record the request of generation %s of %s: %s", self.genseq, dialog.self_id, exc)
            return False


def _request_log(dialog: Dialog) -> RequestLog:
    path = dialog.files.dir / request_log_name(dialog.latest.current_course)
    writer = _LOGS.get(dialog)
    if writer is None or writer.path != path:  # a new course (or the dialog's directory moved)
        writer = _LOGS[dialog] = RequestLog(path)
    return writer


def read_request_log_ahead(dialog: Dialog) -> None:
    """Read the dialog's request log now (in the worker thread that reads the dialog, before the event loop
    sees it), not at its first request after a restart: the log of a long dialog is read whole (every line,
    each laid out over the one before), which held the loop at that request. A log that cannot be read is
    left for the request to report."""
    try:
        _request_log(dialog).load()
    except (OSError, UnicodeDecodeError, ValueError, StoreError):
        _LOGS.pop(dialog, None)
