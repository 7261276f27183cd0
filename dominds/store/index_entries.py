"""What the dialog index (``store/index.py``) hands out: one dialog (``Entry``) and one tree (``Tree``).

An entry's *light* columns (agent-free figures a listing sorts and counts by, and the signature and
digest that say which bytes its facts came from) come with every refresh; its *heavy* ones (the facts,
their public JSON, the generations) are fetched only when asked for, so a reader that finds a tree's
result already kept (``store/derived.py``) never loads them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dominds.store.dialog_facts import Facts

PRIVATE_FACTS = frozenset({"selfId", "files", "generations", "conductor", "inboundTellaskBacks", "dead", "strayTemps", "courses"})
"""Facts the index keeps for the daemon (recovery, cost) but a listing does not show as they are."""

LIGHT_COLUMNS = "root_id, self_id, sig, digest, racy, watch, files, sup, last_modified, q4h_count, run_kind"
"""The columns of ``dialogs`` every refresh reads (``Entry.light`` in this order, after root and self id)."""

Heavy = tuple[str, str, str]
"""(facts JSON, public JSON, generations JSON) of one dialog."""


class Entry:
    """One dialog as the index knows it. ``public`` (the facts a listing shows, as JSON text) and
    ``generations`` (JSON text) are kept apart so a listing is assembled without decoding the facts;
    all three are fetched on first use."""

    __slots__ = (
        "_facts", "_heavy", "_load", "digest", "files", "last_modified", "q4h_count", "racy", "root_id", "run_kind",
        "self_id", "sig", "status", "sup", "watch",
    )

    def __init__(
        self, status: str, root_id: str, self_id: str, light: tuple[Any, ...], heavy: Heavy | None,
        load: Callable[[Entry], Heavy] | None = None, facts: Facts | None = None,
    ) -> None:
        self.status = status
        self.root_id = root_id
        self.self_id = self_id
        sig, self.digest, racy, watch, files, self.sup, self.last_modified, self.q4h_count, self.run_kind = light
        self.sig: str = sig
        """The signature of its files when its facts were read (``dialog_facts.signature``)."""
        self.racy = bool(racy)
        """Its files had changed too recently to trust the signature alone: the digest decides."""
        self.watch: list[str] = watch.split()
        self.files: list[str] = files.split()
        """The state files it has (``q4h.yaml`` and so on)."""
        self._heavy = heavy
        self._load = load
        self._facts = _facts_only(facts) if facts is not None else None

    @property
    def key(self) -> str:
        """What its facts were read from: signature and digest of the bytes."""
        return f"{self.sig}#{self.digest}"

    def _heavy_columns(self) -> Heavy:
        if self._heavy is None:
            assert self._load is not None, "an entry without its facts knows where to fetch them"
            self._heavy = self._load(self)
        return self._heavy

    @property
    def facts(self) -> Facts:
        if self._facts is None:
            self._facts = _facts_only(json.loads(self._heavy_columns()[0] or "{}"))
        return self._facts

    @property
    def public(self) -> str:
        return self._heavy_columns()[1]

    @property
    def generations(self) -> str:
        return self._heavy_columns()[2]


def _facts_only(facts: Facts) -> Facts:
    """The facts without the index's own bookkeeping (``courses``: what it kept of finished course files)."""
    if "courses" in facts:
        facts = {k: v for k, v in facts.items() if k != "courses"}
    return facts


def columns(facts: Facts) -> tuple[tuple[Any, ...], Heavy]:
    """((files, supdialogId, lastModified, questions, run state kind), (facts, public, generations JSON))."""
    public = {k: v for k, v in facts.items() if k not in PRIVATE_FACTS and v is not None}
    public.setdefault("runState", {"kind": "idle"})
    light = (
        " ".join(facts.get("files") or ()),
        facts.get("supdialogId"),
        facts.get("lastModified") or "",
        len(facts.get("q4h") or ()),
        str((public.get("runState") or {}).get("kind")),
    )
    heavy = (
        json.dumps(facts, separators=(",", ":")),
        json.dumps(public, ensure_ascii=False, separators=(",", ":")),
        json.dumps(facts.get("generations") or [], separators=(",", ":")),
    )
    return light, heavy


@dataclass
class Tree:
    """A root and its subdialogs (flat, in id order) as the index knows them."""

    root: Entry
    subs: list[Entry]
    settled: bool
    """Its files are exactly as they were when the daemon last left the whole tree at rest."""
    key: str | None = None
    """``tree_key`` of its entries, once computed."""

    @property
    def entries(self) -> list[Entry]:
        return [self.root, *self.subs]

    @property
    def sig(self) -> str:
        """What every dialog of the tree was read from, as one key (``tree_key``)."""
        if self.key is None:
            self.key = tree_key(self.entries)
        return self.key


def tree_key(entries: list[Entry]) -> str:
    """The signatures and digests of every dialog of a tree together: equal keys, equal bytes."""
    return hashlib.blake2b("\n".join(f"{e.self_id}:{e.key}" for e in entries).encode(), digest_size=12).hexdigest()
