"""The host's thresholds are calibrated per similarity method on labelled position pairs (Chinese, English).

The bug: the default similarity was word overlap judged by the seed's cosine thresholds (converge
above 0.90): closely related positions scored 0.05-0.27, so a debate almost never converged. The
calibration table (calibration.py) must be exactly what the rule derives from the labelled set with
the real methods, and must sort the set's pairs: no agreeing pair is forced into opposition, no
disagreeing pair converges, and on WordLlama most English pairs are decided at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dominds.workflows.debate.calibration import (
    CALIBRATION,
    JACCARD,
    WORDLLAMA,
    LabelledPair,
    derive,
    outcome,
    score_pairs,
)
from dominds.workflows.debate.embedders import WordLlamaEmbedder
from dominds.workflows.debate.host import Thresholds
from dominds.workflows.debate.similarity import PositionComparer

PAIRS_FILE = Path(__file__).resolve().parent / "data" / "position_pairs.yaml"


def labelled_pairs() -> list[LabelledPair]:
    raw = yaml.safe_load(PAIRS_FILE.read_text(encoding="utf-8"))["pairs"]
    return [LabelledPair(p["label"], p["a"], p["b"]) for p in raw]


def test_the_labelled_set_is_balanced_per_language() -> None:
    raw = yaml.safe_load(PAIRS_FILE.read_text(encoding="utf-8"))["pairs"]
    counts = {(p["lang"], p["label"]) for p in raw}
    assert counts == {("zh", "agree"), ("zh", "disagree"), ("en", "agree"), ("en", "disagree")}
    for lang in ("zh", "en"):
        assert [p["label"] for p in raw if p["lang"] == lang].count("agree") == 6
        assert [p["label"] for p in raw if p["lang"] == lang].count("disagree") == 6


@pytest.mark.parametrize("family", [JACCARD, WORDLLAMA])
async def test_the_table_is_what_the_labelled_set_gives(family: str) -> None:
    comparer = PositionComparer(WordLlamaEmbedder() if family == WORDLLAMA else None)
    scores = await score_pairs(comparer, labelled_pairs())
    assert set(scores) == {"cjk", "latin"}
    for script, by_label in scores.items():
        calibration = CALIBRATION[(family, script)]
        assert derive(by_label["agree"], by_label["disagree"]) == calibration, (family, script, by_label)
        assert {outcome(x, calibration) for x in by_label["agree"]} <= {"converge", "continue"}
        assert {outcome(x, calibration) for x in by_label["disagree"]} <= {"force_opposition", "continue"}


async def test_wordllama_decides_most_english_pairs_and_the_seed_thresholds_decide_none_on_word_overlap() -> None:
    english = (await score_pairs(PositionComparer(WordLlamaEmbedder()), labelled_pairs()))["latin"]
    calibration = CALIBRATION[(WORDLLAMA, "latin")]
    assert sum(outcome(x, calibration) == "converge" for x in english["agree"]) >= 4
    assert sum(outcome(x, calibration) == "force_opposition" for x in english["disagree"]) >= 5
    overlap = await score_pairs(PositionComparer(None), labelled_pairs())
    seed = Thresholds()
    every_score = [x for by_label in overlap.values() for xs in by_label.values() for x in xs]
    assert max(every_score) < seed.oppose_at_or_below, "the bug: under the seed's numbers word overlap never converges"
