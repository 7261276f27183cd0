"""compare_positions on fixed vectors, the seed's own example, the Jaccard fallback, and the cache."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from dominds.workflows.debate.similarity import (
    PositionComparer,
    comparison_from_matrix,
    cosine,
    jaccard,
    jaccard_tokens,
    mean_similarity,
    most_different_pair,
    similarity_matrix,
)


def test_cosine_on_fixed_vectors() -> None:
    assert cosine([1, 0], [0, 1]) == 0.0
    assert cosine([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert cosine([1, 0], [-1, 0]) == pytest.approx(-1.0)
    assert cosine([0, 0], [1, 1]) == 0.0, "a zero vector has no direction: 0, not NaN"
    assert cosine([1, 0], [math.cos(math.radians(60)), math.sin(math.radians(60))]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="dimension 2 and 3"):
        cosine([1, 0], [1, 0, 0])


def test_matrix_mean_and_most_different_pair() -> None:
    vectors = [[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]]
    matrix = similarity_matrix(vectors)
    assert matrix == [[1.0, 0.8, 0.0], [0.8, 1.0, 0.6], [0.0, 0.6, 1.0]]
    assert mean_similarity(matrix) == pytest.approx((0.8 + 0.0 + 0.6) / 3, abs=1e-4)
    assert most_different_pair(matrix) == ((0, 2), 0.0)
    with pytest.raises(ValueError):
        mean_similarity([[1.0]])


def test_the_seeds_compare_positions_example_is_consistent() -> None:
    seed = comparison_from_matrix([[1.0, 0.92, 0.88], [0.92, 1.0, 0.81], [0.88, 0.81, 1.0]], "embedding:x", False)
    assert (seed.mean_similarity, seed.most_different_pair, seed.most_different_similarity) == (0.87, (1, 2), 0.81)


def test_the_seeds_host_example_does_not_reach_its_stated_consensus() -> None:
    # §2.4 claims consensus_level 0.92 for this matrix; its off-diagonal mean is 0.897, which is a `continue`
    host = comparison_from_matrix([[1.0, 0.92, 0.88], [0.92, 1.0, 0.89], [0.88, 0.89, 1.0]], "embedding:x", False)
    assert host.mean_similarity == 0.8967 and host.most_different_pair == (0, 2)


def test_jaccard_tokens_english_and_chinese() -> None:
    assert jaccard_tokens("A plan: 3 phases, a MOCK-test each week!") == {"plan", "phases", "mock", "test", "each", "week"}
    assert jaccard_tokens("采用三个月备考") == {"采用", "用三", "三个", "个月", "月备", "备考"}
    assert jaccard_tokens("写作 IELTS7.0") == {"写作", "ielts7"}
    assert jaccard_tokens("我") == {"我"}, "a lone CJK character still counts"


def test_jaccard_similarity_values() -> None:
    assert jaccard("the plan works", "the plan works") == 1.0
    assert jaccard("plan works", "plan fails") == pytest.approx(1 / 3)
    assert jaccard("", "") == 0.0
    assert jaccard("三个月备考", "三个月冲刺") == pytest.approx(2 / 6)  # 三个 个月 shared; 月备 备考 月冲 冲刺 not
    # Chinese without spaces is compared at all, unlike the origin's whitespace split (which gave 0 here)
    assert jaccard("采用三个月阶段式备考方案", "采用三个月备考方案") > 0.4


class CountingEmbedder:
    name = "counting"

    def __init__(self, fail: bool = False) -> None:
        self.batches: list[list[str]] = []
        self.fail = fail

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.fail:
            raise ConnectionError("embedding endpoint down")
        self.batches.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]


async def test_comparer_caches_embeddings_and_embeds_only_new_texts() -> None:
    embedder = CountingEmbedder()
    comparer = PositionComparer(embedder)
    first = await comparer.compare(["aa", "bbbb"])
    second = await comparer.compare(["bbbb", "cc", "aa"])
    assert embedder.batches == [["aa", "bbbb"], ["cc"]]
    assert first.method == "embedding:counting" and not first.fallback and first.embeddings is not None
    assert second.similarity_matrix[0][0] == 1.0 and second.most_different_pair == (0, 1)
    assert "embeddings" in first.to_tool_output(include_embeddings=True)["data"]
    assert first.to_tool_output()["success"] is True


async def test_a_failing_embedder_falls_back_to_jaccard_and_says_so() -> None:
    comparison = await PositionComparer(CountingEmbedder(fail=True)).compare(["plan works", "plan fails"])
    assert comparison.method == "jaccard_fallback" and comparison.fallback
    assert comparison.error == "ConnectionError: embedding endpoint down"
    assert comparison.mean_similarity == pytest.approx(0.3333)
    data = comparison.to_tool_output()["data"]
    assert data["fallback"] is True and data["error"].startswith("ConnectionError")
    plain = await PositionComparer(None).compare(["a b", "a b"])
    assert plain.fallback and plain.error is None


async def test_word_overlap_chosen_on_purpose_is_not_called_a_fallback() -> None:
    """Bug (issue 36, item 9): a debate configured with ``embedder: {kind: jaccard}`` called its method
    ``jaccard_fallback`` everywhere, as if embeddings had failed. Chosen, it is ``jaccard`` and no
    fallback; records written before still read as word overlap (same calibrated thresholds)."""
    from dominds.workflows.debate.calibration import thresholds_for

    chosen = PositionComparer(None, overlap_chosen=True)
    comparison = await chosen.compare(["plan works", "plan fails"])
    assert chosen.method == comparison.method == "jaccard" and not comparison.fallback and comparison.error is None
    assert comparison.to_tool_output()["data"]["fallback"] is False
    missing = PositionComparer(None)  # the embedder asked for could not be made: a real fallback
    assert missing.method == "jaccard_fallback" and (await missing.compare(["a b", "a c"])).fallback
    texts = ["plan works", "plan fails"]
    assert thresholds_for("jaccard", texts) == thresholds_for("jaccard_fallback", texts), "old records read the same"
