"""Secrets never reach a course file, an event or a log line through tool output.

Every configured provider key (the value of each ``apiKeyEnvVar`` in the environment) and every secret the
daemon registers (its access token) is replaced by ``[redacted: NAME]`` in tool results before they are
stored or published. Short values (under 8 characters) are not treated as secrets: they would redact
ordinary words.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

MIN_SECRET_LENGTH = 8


class SecretRedactor:
    def __init__(self) -> None:
        self._registered: dict[str, str] = {}

    def register(self, name: str, value: str | None) -> None:
        """A secret the process holds that no configuration names (the daemon's access token)."""
        if value and len(value) >= MIN_SECRET_LENGTH:
            self._registered[value] = name

    def redact(self, text: str, env_names: Iterable[str]) -> str:
        secrets = dict(self._registered)
        for name in env_names:
            value = os.environ.get(name, "")
            if len(value) >= MIN_SECRET_LENGTH:
                secrets[value] = name
        for value in sorted(secrets, key=len, reverse=True):  # a key containing another is replaced whole
            if value in text:
                text = text.replace(value, f"[redacted: {secrets[value]}]")
        return text
