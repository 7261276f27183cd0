"""What readers compute per dialog tree from the index (a listed tree's JSON, its tokens and cost),
kept in the index so that an unchanged tree is not computed again (``DialogIndex.derived``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from dominds.store.index import DialogIndex
from dominds.store.index_entries import Tree

T = TypeVar("T")
PREFETCH = 256
"""Trees whose kept values one query reads (``batched``)."""


class Derived:
    """What a reader computes per tree from its entries (a listing's JSON text, tokens and cost), kept in
    the index so an unchanged tree is not computed again.

    A value is found only under the key it was kept with: the tree's signature (``Tree.sig``: every file
    and digest of every dialog, so any change to the tree misses) and the reader's ``salt`` (whatever else
    the value depends on: prices, the code's version).
    ``preload`` reads every kept value at once (a one-shot command); otherwise a batch of trees at a
    time (``prefetch``) or one (the daemon: its memory must not grow with the number of dialogs)."""

    FLUSH = 500

    def __init__(self, index: DialogIndex, purpose: str, salt: str, *, preload: bool) -> None:
        self.index = index
        self.purpose = purpose
        self.salt = salt
        self.known = index.derived(purpose) if preload else None
        self.fresh: list[tuple[str, str, str]] = []

    def prefetch(self, trees: list[tuple[str, str]]) -> None:
        """Read what is kept for these (status, rootId) trees in one query; ``lookup`` then answers from
        it (a listing goes through its trees a batch at a time)."""
        self.known = self.index.derived(self.purpose, [f"{status}/{root_id}" for status, root_id in trees])

    def batched(self, items: Iterable[T], tree_of: Callable[[T], tuple[str, str]]) -> Iterator[T]:
        """``items`` as they come, with what is kept for their trees (``tree_of``: its status and rootId)
        read ``PREFETCH`` at a time: only one batch is ever held, never every tree of 100,000 dialogs."""
        pending: list[T] = []
        for item in items:
            pending.append(item)
            if len(pending) == PREFETCH:
                self.prefetch([tree_of(i) for i in pending])
                yield from pending
                pending.clear()
        if pending:
            self.prefetch([tree_of(i) for i in pending])
            yield from pending

    def get(self, tree: Tree) -> str | None:
        return self.lookup(tree.root.status, tree.root.root_id, tree.sig)

    def put(self, tree: Tree, value: str) -> None:
        self.keep(tree.root.status, tree.root.root_id, tree.sig, value)

    def lookup(self, status: str, root_id: str, sig: str) -> str | None:
        """The value kept for this tree as it is now (``sig``: its ``Tree.sig``), or None."""
        name = f"{status}/{root_id}"
        found = (self.known if self.known is not None else self.index.derived(self.purpose, [name])).get(name)
        return found[1] if found is not None and found[0] == f"{self.salt}:{sig}" else None

    def keep(self, status: str, root_id: str, sig: str, value: str) -> None:
        self.fresh.append((f"{status}/{root_id}", f"{self.salt}:{sig}", value))
        if len(self.fresh) >= self.FLUSH:
            self.save()

    def save(self) -> None:
        self.index.keep_derived(self.purpose, self.fresh)
        self.fresh.clear()
