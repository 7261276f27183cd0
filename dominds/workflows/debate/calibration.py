"""The host's thresholds per similarity method and script, calibrated on labelled position pairs.

The seed's numbers (converge above 0.90, oppose at or below 0.70) assume one embedding model's scale.
Each method has its own: word overlap scores agreeing positions around 0.12-0.27, WordLlama around
0.64-0.91, and Chinese text sits higher than English on WordLlama's scale. So the thresholds come from
a labelled set of agreeing and disagreeing position pairs (``tests/workflows/debate/data/
position_pairs.yaml``), by one rule per method and script:

- ``converge_above``: the highest score of a *disagreeing* pair, rounded up to 0.01, so no
  disagreeing pair of the set converges;
- ``oppose_at_or_below``: just under the lowest score of an *agreeing* pair (rounded down to 0.01),
  so no agreeing pair is forced into opposition;
- scores in between mean "continue"; ``stable_delta`` (§9.4's "no significant change") keeps the
  seed's ratio to the spread: a quarter of the gap between the mean agreeing and the mean
  disagreeing score (the seed's 0.05 is a quarter of its 0.20 band).

The test ``test_debate_calibration.py`` re-derives this table from the set with the real methods and
fails when they drift apart; ``bench/debate_calibration.py`` prints the figures that docs/debate.md
reports. Methods without a row (a provider's embedding model) keep the seed's numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dominds.workflows.debate.host import Thresholds

if TYPE_CHECKING:
    from dominds.workflows.debate.similarity import PositionComparer
    from dominds.workflows.debate.state import RoundRecord

JACCARD = "jaccard"
WORDLLAMA = "wordllama"
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
_LETTER = re.compile(r"\w")
SEED_THRESHOLDS = Thresholds()
"""The seed's numbers: for methods without a calibration (a provider's embedding model)."""
CJK_SHARE = 0.2
"""Texts whose letters are at least this share CJK are scored on the CJK scale."""


@dataclass(frozen=True)
class Calibration:
    converge_above: float
    oppose_at_or_below: float
    stable_delta: float

    def thresholds(self) -> Thresholds:
        return replace(
            Thresholds(),
            converge_above=self.converge_above,
            oppose_at_or_below=self.oppose_at_or_below,
            stable_delta=self.stable_delta,
            report_high_above=self.converge_above,
            report_medium_above=self.oppose_at_or_below,
        )


CALIBRATION: dict[tuple[str, str], Calibration] = {
    (JACCARD, "cjk"): Calibration(converge_above=0.14, oppose_at_or_below=0.12, stable_delta=0.0116),
    (JACCARD, "latin"): Calibration(converge_above=0.28, oppose_at_or_below=0.20, stable_delta=0.021),
    (WORDLLAMA, "cjk"): Calibration(converge_above=0.89, oppose_at_or_below=0.83, stable_delta=0.0069),
    (WORDLLAMA, "latin"): Calibration(converge_above=0.65, oppose_at_or_below=0.63, stable_delta=0.0479),
}
"""(method family, script) → thresholds; derived by ``derive`` from the labelled set (see the module doc)."""


def script_of(texts: Sequence[str]) -> str:
    """``cjk`` when at least ``CJK_SHARE`` of the letters are CJK, else ``latin``."""
    joined = "".join(texts)
    letters = len(_LETTER.findall(joined))
    return "cjk" if letters and len(_CJK.findall(joined)) / letters >= CJK_SHARE else "latin"


def family(method: str) -> str | None:
    """The calibrated family of a comparison method (``jaccard_fallback``, ``embedding:wordllama:…``), if any."""
    if method.startswith("jaccard"):
        return JACCARD
    if method.startswith(f"embedding:{WORDLLAMA}"):
        return WORDLLAMA
    return None


def thresholds_for(method: str, texts: Sequence[str], seed: Thresholds = SEED_THRESHOLDS) -> tuple[Thresholds, str]:
    """The thresholds for a comparison made by ``method`` on ``texts``, and what they are based on."""
    kind = family(method)
    script = script_of(texts)
    calibration = CALIBRATION.get((kind, script)) if kind else None
    if calibration is None:
        return seed, "seed"
    return calibration.thresholds(), f"calibrated:{kind}:{script}"


def thresholds_json(thresholds: Thresholds, basis: str) -> dict[str, Any]:
    """What a decision's analysis records about the thresholds it was made with."""
    return {
        "converge_above": thresholds.converge_above,
        "oppose_at_or_below": thresholds.oppose_at_or_below,
        "stable_delta": thresholds.stable_delta,
        "basis": basis,
    }


def thresholds_of(record: RoundRecord | None, default: Thresholds = SEED_THRESHOLDS) -> Thresholds:
    """The thresholds a round's decision was made with (older states without them: ``default``)."""
    saved = record.analysis.get("thresholds") if record is not None else None
    if not isinstance(saved, dict):
        return default
    converge, oppose = float(saved["converge_above"]), float(saved["oppose_at_or_below"])
    return replace(
        default, converge_above=converge, oppose_at_or_below=oppose, stable_delta=float(saved["stable_delta"]),
        report_high_above=converge if saved.get("basis") != "seed" else default.report_high_above,
        report_medium_above=oppose if saved.get("basis") != "seed" else default.report_medium_above,
    )  # fmt: skip


@dataclass(frozen=True)
class LabelledPair:
    label: str
    """``agree`` or ``disagree``."""
    a: str
    b: str


async def score_pairs(comparer: PositionComparer, pairs: Sequence[LabelledPair]) -> dict[str, dict[str, list[float]]]:
    """script → label → the comparer's scores of the pairs, exactly as the host sees them (rounded)."""
    scores: dict[str, dict[str, list[float]]] = {}
    for pair in pairs:
        comparison = await comparer.compare([pair.a, pair.b])
        by_label = scores.setdefault(script_of([pair.a, pair.b]), {"agree": [], "disagree": []})
        by_label[pair.label].append(comparison.mean_similarity)
    return scores


def outcome(score: float, calibration: Calibration) -> str:
    """The host's first-round action for a pair scoring ``score`` (max rounds and stability aside)."""
    if score > calibration.converge_above:
        return "converge"
    return "force_opposition" if score <= calibration.oppose_at_or_below else "continue"


def derive(agree: Sequence[float], disagree: Sequence[float]) -> Calibration:
    """The module doc's rule applied to the scores of agreeing and disagreeing pairs."""
    converge = math.ceil(round(max(disagree) * 100, 6)) / 100
    oppose = math.ceil(round(min(agree) * 100, 6)) / 100 - 0.01
    gap = sum(agree) / len(agree) - sum(disagree) / len(disagree)
    return Calibration(round(converge, 2), round(oppose, 2), round(max(gap, 0.0) / 4, 4))
