"""Provider rejections seen at run time (401 bad key, unknown model …), kept until that provider works again.

The daemon records them here so `dominds check` shows them too, not only the panel. File:
``<rtws>/.dominds/provider-problems.json``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from pydantic import Field

from dominds.rtws import Rtws
from dominds.store.fileio import load_model, save_model
from dominds.store.records import STATE_FORMAT_VERSION, Record


class ProviderProblem(Record):
    """One provider's latest rejection."""

    provider: str
    """Catalog key of the provider."""
    model: str | None = None
    """Model key used when it was rejected."""
    message: str
    """The actionable message (never contains the key)."""
    at: str
    """ISO time."""
    key: str | None = None
    """Which API key the rejected request had: ``unset``, ``keyless`` (the provider needs none), or the
    first 12 hex digits of the key's SHA-256. A problem recorded with another key than the one set now
    is stale (the key was exported or changed since). ``None`` in files written before this field."""


class ProviderProblemsFile(Record):
    v: int = STATE_FORMAT_VERSION
    """Format version."""
    problems: list[ProviderProblem] = Field(default_factory=list)
    """At most one per provider."""


def path(rtws: Rtws) -> Path:
    return rtws.state_dir / "provider-problems.json"


def load(rtws: Rtws) -> list[ProviderProblem]:
    try:
        stored = load_model(path(rtws), ProviderProblemsFile)
    except Exception:  # a damaged cache of problems must never stop the daemon or `check`
        return []
    return list(stored.problems) if stored else []


def record(rtws: Rtws, problem: ProviderProblem) -> None:
    others = [p for p in load(rtws) if p.provider != problem.provider]
    save_model(path(rtws), ProviderProblemsFile(problems=[*others, problem]))


def clear(rtws: Rtws, provider: str) -> bool:
    current = load(rtws)
    remaining = [p for p in current if p.provider != provider]
    if len(remaining) == len(current):
        return False
    save_model(path(rtws), ProviderProblemsFile(problems=remaining))
    return True


def key_fingerprint(env_var: str | None, env: Mapping[str, str]) -> str:
    """What ``ProviderProblem.key`` records for a provider whose key is read from ``env_var``."""
    if not env_var:
        return "keyless"
    value = env.get(env_var, "").strip()
    return hashlib.sha256(value.encode()).hexdigest()[:12] if value else "unset"


def is_current(problem: ProviderProblem, env_var: str | None, env: Mapping[str, str]) -> bool:
    """Whether ``problem`` still describes the provider as ``env`` configures it now."""
    return problem.key is None or problem.key == key_fingerprint(env_var, env)
