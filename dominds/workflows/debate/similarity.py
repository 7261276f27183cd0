"""``compare_positions`` (seed §3.1): embeddings → cosine matrix → mean and most-different pair.

When the embedder fails, or the one configured cannot be used, the comparison falls back to token
Jaccard (§7.3 "rule-based keyword matching") and says so: ``method: "jaccard_fallback"``, ``fallback:
true``. Word overlap chosen on purpose (``embedder: {kind: jaccard}``) is no fallback: ``method:
"jaccard"``, ``fallback: false`` (before, it was called ``jaccard_fallback`` everywhere; records that
say so are still read: every reader takes a method starting with ``jaccard`` as word overlap).
Jaccard counts shared words, so its values run far lower than cosine's for the same pair of texts;
the host's cosine thresholds are then only a rough guide (docs/debate.md, "Known limits").

Embeddings are cached by text (§9.1), so a position that did not change is never embedded twice and
each round only embeds its new outputs (§9.3).
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

SCORE_DIGITS = 4
"""Similarities are rounded before the host compares them with its thresholds, so a decision can be
recomputed exactly from the persisted numbers and ``0.9`` means 0.9, not 0.9000000000000001."""

WORD_OVERLAP = "jaccard"
"""The method of word overlap chosen on purpose."""
WORD_OVERLAP_FALLBACK = "jaccard_fallback"
"""The method of word overlap used because embeddings could not be (seed §7.3)."""

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_NON_WORD = re.compile(rf"[^\w\s{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]+")


class Embedder(Protocol):
    """Turns texts into vectors. ``name`` identifies the model in outputs and in the cache key."""

    name: str

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 when either vector is zero. Vectors of different lengths are a bug upstream."""
    if len(a) != len(b):
        raise ValueError(f"cannot compare vectors of dimension {len(a)} and {len(b)}")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 0.0 if norm == 0.0 else dot / norm


def similarity_matrix(vectors: Sequence[Sequence[float]]) -> list[list[float]]:
    n = len(vectors)
    matrix = [[1.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            matrix[i][j] = matrix[j][i] = round(cosine(vectors[i], vectors[j]), SCORE_DIGITS)
    return matrix


def mean_similarity(matrix: Sequence[Sequence[float]]) -> float:
    """Mean over the upper triangle: the diagonal (self-similarity, always 1) would inflate it."""
    pairs = [matrix[i][j] for i in range(len(matrix)) for j in range(i + 1, len(matrix))]
    if not pairs:
        raise ValueError("a consensus needs at least two positions")
    return round(sum(pairs) / len(pairs), SCORE_DIGITS)


def most_different_pair(matrix: Sequence[Sequence[float]]) -> tuple[tuple[int, int], float]:
    """The least similar pair (first one on ties) and its similarity."""
    pairs = [((i, j), matrix[i][j]) for i in range(len(matrix)) for j in range(i + 1, len(matrix))]
    if not pairs:
        raise ValueError("a pair needs at least two positions")
    return min(pairs, key=lambda item: item[1])


def jaccard_tokens(text: str) -> set[str]:
    """Lower-cased words of two or more characters; CJK runs become character bigrams.

    The origin splits on whitespace only, so a Chinese sentence became one or two huge "words" and any
    rewording scored 0. Bigrams are the usual cheap segmentation for Chinese.
    """
    cleaned = _NON_WORD.sub(" ", text.lower())
    tokens: set[str] = set()
    for chunk in cleaned.split():
        for run in _CJK_RUN.findall(chunk):
            tokens.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
        tokens.update(word for word in _CJK_RUN.sub(" ", chunk).split() if len(word) > 1)
    return tokens


def jaccard(a: str, b: str) -> float:
    tokens_a, tokens_b = jaccard_tokens(a), jaccard_tokens(b)
    union = tokens_a | tokens_b
    return 0.0 if not union else len(tokens_a & tokens_b) / len(union)


@dataclass(frozen=True)
class Comparison:
    """The §3.1 ``compare_positions`` result, plus how it was computed."""

    similarity_matrix: list[list[float]]
    mean_similarity: float
    most_different_pair: tuple[int, int]
    most_different_similarity: float
    method: str
    """``embedding:<model>``, ``jaccard`` (word overlap chosen) or ``jaccard_fallback``."""
    fallback: bool
    error: str | None = None
    """Why the embedder was not used (``None`` when it was, or when none is configured)."""
    embeddings: list[list[float]] | None = None

    def to_tool_output(self, *, include_embeddings: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "similarity_matrix": self.similarity_matrix,
            "mean_similarity": self.mean_similarity,
            "most_different_pair": list(self.most_different_pair),
            "most_different_similarity": self.most_different_similarity,
            "method": self.method,
            "fallback": self.fallback,
        }
        if include_embeddings and self.embeddings is not None:
            data = {"embeddings": self.embeddings, **data}
        if self.error:
            data["error"] = self.error
        return {"success": True, "data": data}


def comparison_from_matrix(
    matrix: list[list[float]], method: str, fallback: bool, error: str | None = None, embeddings: list[list[float]] | None = None
) -> Comparison:
    pair, value = most_different_pair(matrix)
    return Comparison(matrix, mean_similarity(matrix), pair, value, method, fallback, error, embeddings)


class PositionComparer:
    """``compare_positions`` over an optional embedder, with an LRU embedding cache and the Jaccard fallback."""

    def __init__(self, embedder: Embedder | None, cache_size: int = 1024, *, overlap_chosen: bool = False) -> None:
        self.embedder = embedder
        self.overlap_chosen = overlap_chosen and embedder is None
        """Word overlap is what the settings ask for (``kind: jaccard``), not a stand-in for embeddings."""
        self.cache_size = cache_size
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self.embedded_texts = 0
        """How many texts were sent to the embedder (the cache's effect is visible in tests)."""

    @property
    def method(self) -> str:
        """The method a comparison uses when nothing fails: ``embedding:<model>``, ``jaccard`` or ``jaccard_fallback``."""
        if self.embedder is not None:
            return f"embedding:{self.embedder.name}"
        return WORD_OVERLAP if self.overlap_chosen else WORD_OVERLAP_FALLBACK

    async def compare(self, texts: Sequence[str]) -> Comparison:
        if len(texts) < 2:
            raise ValueError("compare_positions needs at least two texts")
        if self.embedder is not None:
            try:
                vectors = await self._embed(texts)
                matrix = similarity_matrix(vectors)
                return comparison_from_matrix(matrix, f"embedding:{self.embedder.name}", False, embeddings=vectors)
            except Exception as exc:  # any failure of the tool falls back (seed §7.3); the reason is kept
                error: str | None = f"{type(exc).__name__}: {exc}"
        else:
            error = None
        n = len(texts)
        matrix = [[1.0] * n for _ in range(n)]
        for i in range(n):
            for j in range(i + 1, n):
                matrix[i][j] = matrix[j][i] = round(jaccard(texts[i], texts[j]), SCORE_DIGITS)
        if self.overlap_chosen:
            return comparison_from_matrix(matrix, WORD_OVERLAP, False)
        return comparison_from_matrix(matrix, WORD_OVERLAP_FALLBACK, True, error)

    async def similarity(self, a: str, b: str) -> Comparison:
        return await self.compare([a, b])

    async def aclose(self) -> None:
        """Close what the embedder holds open (a provider embedder's connection); the comparer stays usable."""
        close = getattr(self.embedder, "aclose", None)
        if close is not None:
            await close()

    async def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        assert self.embedder is not None
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vectors = await self.embedder.embed(missing)
            if len(vectors) != len(missing):
                raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(missing)} texts")
            self.embedded_texts += len(missing)
            for text, vector in zip(missing, vectors, strict=True):
                self._cache[text] = [float(x) for x in vector]
        out = []
        for text in texts:
            self._cache.move_to_end(text)
            out.append(self._cache[text])
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return out
