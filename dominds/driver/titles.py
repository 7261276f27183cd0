"""Dialog titles: taken from the first message, renamed by a user, shown by every list.

A title is kept in ``latest.yaml`` (``LatestState.title``). The first user message of a root sets it
(its first non-empty line, without Tellask markers, at most ``MAX_TITLE`` characters) in the same write
that queues the message; a rename is one write of ``latest.yaml`` and is announced to every panel as the
global event ``dialog_retitled``. A workflow run names its question in ``DialogMeta.title`` instead.
"""

from __future__ import annotations

import re

from dominds.dialog.model import Dialog
from dominds.driver.errors import EngineBadRequest
from dominds.ids import now_iso
from dominds.pubchan import PubChan
from dominds.textcheck import lone_surrogate_at, lone_surrogate_problem

MAX_TITLE = 80
_MARKERS = re.compile(r"^\s*(?:!\?|[#>*\-]+\s)*\s*")
_SPACES = re.compile(r"\s+")


def title_from_message(content: str) -> str | None:
    """The first non-empty line of ``content``, cleaned and cut to ``MAX_TITLE`` characters."""
    for line in content.splitlines():
        text = _SPACES.sub(" ", _MARKERS.sub("", line)).strip()
        if text:
            return text if len(text) <= MAX_TITLE else text[: MAX_TITLE - 1].rstrip() + "…"
    return None


def display_title(dialog: Dialog) -> str | None:
    return dialog.latest.title or dialog.meta.title


def title_first_message(dialog: Dialog, content: str) -> bool:
    """Give an untitled root the title of its first message (persisted by the caller's next save)."""
    if not dialog.is_root or dialog.latest.title or dialog.meta.title or dialog.meta.conductor:
        return False
    title = title_from_message(content)
    if title is None:
        return False
    dialog.latest.title = title
    return True


def rename(pubchan: PubChan, dialog: Dialog, title: str) -> str | None:
    """Set (or, with an empty title, clear) a dialog's title; persisted, then announced."""
    where = lone_surrogate_at({"title": title})
    if where is not None:
        raise EngineBadRequest(lone_surrogate_problem(where))
    cleaned = _SPACES.sub(" ", title).strip()
    if len(cleaned) > 200:
        raise EngineBadRequest("a title is at most 200 characters")
    dialog.latest.title = cleaned or None
    dialog.latest.last_modified = now_iso()
    dialog.save_latest()
    announce(pubchan, dialog)
    return dialog.latest.title


def announce(pubchan: PubChan, dialog: Dialog) -> None:
    pubchan.publish(
        None,
        {"type": "dialog_retitled", "selfId": dialog.self_id, "rootId": dialog.root_id, "title": display_title(dialog)},
    )
