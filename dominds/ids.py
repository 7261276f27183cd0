"""Identifiers and timestamps.

Dialog ids are path-safe (no ``/``), short and sort by creation time: 9 base-36 digits of the
epoch-millisecond clock, a dash, then 4 random base-36 digits. Within one process ids are
strictly increasing even when many are made in the same millisecond.
"""

from __future__ import annotations

import re
import threading
import time
from datetime import datetime, tzinfo

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
DIALOG_ID_RE = re.compile(r"^[0-9a-z]{9}-[0-9a-z]{4}$")

_lock = threading.Lock()
_last_ms = 0


def _base36(n: int, width: int) -> str:
    out = []
    for _ in range(width):
        n, r = divmod(n, 36)
        out.append(_ALPHABET[r])
    return "".join(reversed(out))


def new_dialog_id() -> str:
    """A fresh dialog id such as ``0mi7x2k3a-9f3c``."""
    global _last_ms
    with _lock:
        ms = int(time.time() * 1000)
        if ms <= _last_ms:
            ms = _last_ms + 1
        _last_ms = ms
    import secrets  # here: `dominds status` only checks ids, and secrets loads OpenSSL

    suffix = "".join(secrets.choice(_ALPHABET) for _ in range(4))
    return f"{_base36(ms, 9)}-{suffix}"


def is_dialog_id(value: str) -> bool:
    return bool(DIALOG_ID_RE.match(value))


_ZONE_CHECK_SECONDS = 30.0
_zone: tuple[float, tzinfo | None] = (float("-inf"), None)
_last_stamp: tuple[int, str] = (-1, "")


def now_iso() -> str:
    """The current local time as ISO 8601 with offset, millisecond precision.

    The local offset is looked up at most every 30 s (the lookup asks the C library, which checks the
    zone file each time; a turn takes dozens of timestamps): after a change of offset (daylight saving)
    a few timestamps may still carry the old one, each still naming the right instant."""
    global _zone, _last_stamp
    now = time.time()
    millis = int(now * 1000)
    if millis == _last_stamp[0]:
        return _last_stamp[1]  # a turn takes dozens of timestamps, many in the same millisecond
    checked, zone = _zone
    if zone is None or now - checked > _ZONE_CHECK_SECONDS:
        zone = datetime.fromtimestamp(now).astimezone().tzinfo
        _zone = (now, zone)
    text = datetime.fromtimestamp(now, zone).isoformat(timespec="milliseconds")
    _last_stamp = (millis, text)
    return text


def short_token(nbytes: int = 6) -> str:
    import secrets

    return secrets.token_hex(nbytes)
