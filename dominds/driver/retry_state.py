"""The run state a dialog shows while its provider's retry window waits out an outage.

``retrying: attempt 3, next in 12 s, HTTP 529: Overloaded`` is a ``proceeding`` run state with reason
``retrying`` (Stop stays available: it cancels the wait with the stream); when the wait is over the
dialog shows plain ``proceeding`` again. Persisted like every run state, so ``dominds status`` and a
panel opened later see it too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from dominds.dialog.model import Dialog
from dominds.llm.base import RetryNotice
from dominds.store.records import RunState

RETRYING = "retrying"
"""The ``reason`` of a proceeding run state while a retry waits."""


def retry_detail(notice: RetryNotice) -> str:
    return f"attempt {notice.attempt}, next in {notice.wait_s:.0f} s, {notice.reason}"


def announce_retries(dialog: Dialog) -> Callable[[RetryNotice | None], Awaitable[None]]:
    """The generation's ``on_retry``: each wait of the retry window shown as the dialog's run state."""

    async def on_retry(notice: RetryNotice | None) -> None:
        if dialog.latest.run_state.kind != "proceeding":
            return  # a stop was requested meanwhile: that is what the user must see
        if notice is None:
            dialog.set_run_state(RunState(kind="proceeding"))
        else:
            dialog.set_run_state(RunState(kind="proceeding", reason=RETRYING, detail=retry_detail(notice)))

    return on_retry
