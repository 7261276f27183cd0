"""Every frame the daemon sends, checked against its model in ``dominds/events/``.

With ``DOMINDS_CHECK_EVENTS=1`` (set by the test suite) each frame a connection sends is validated
against its model; a mismatch is recorded in ``VIOLATIONS`` and logged (never raised: a publisher must
not fail because of it), and the tests fail on it. So an event with an undocumented field, a wrong type
or an unknown ``type`` cannot land. The reference in docs/protocol.md is generated from the same models
(``protocol_doc.py``).
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from pydantic import ValidationError

log = logging.getLogger("dominds.server")

VIOLATIONS: list[str] = []
"""Frames that did not match their model (only collected while checking is on)."""
MAX_VIOLATIONS = 100


def checking() -> bool:
    return os.environ.get("DOMINDS_CHECK_EVENTS") == "1"


def check_outgoing(message: dict[str, Any]) -> None:
    """Record a frame that has no model or does not match it."""
    from dominds import events  # the models load only when checking is on: start-up does not need them

    kind = message.get("type")
    model = events.MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        problem = f"undocumented message type {kind!r}: add a model to dominds/events/"
    else:
        try:
            model.model_validate(message)
            return
        except ValidationError as exc:
            problem = f"{kind} does not match events.{model.__name__}: {exc.errors(include_url=False)[:3]}"
    log.warning("outgoing message: %s", problem)
    if len(VIOLATIONS) < MAX_VIOLATIONS:
        VIOLATIONS.append(problem)


def check_text(text: str) -> None:
    try:
        message = json.loads(text)
    except ValueError:
        if len(VIOLATIONS) < MAX_VIOLATIONS:
            VIOLATIONS.append(f"a frame that is not JSON: {text[:80]!r}")
        return
    check_outgoing(message)
