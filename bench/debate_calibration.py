"""The debate host's calibration figures: how each similarity method scores the labelled position pairs.

    python bench/debate_calibration.py

Reads tests/workflows/debate/data/position_pairs.yaml (6 agreeing and 6 disagreeing pairs in Chinese,
the same in English), scores every pair with word overlap (Jaccard) and with WordLlama (when the
embeddings extra is installed), and prints per method and script: the score ranges and means, the
AUC (the chance that an agreeing pair scores above a disagreeing one), the thresholds the rule of
dominds/workflows/debate/calibration.py derives, and what the host would do with each pair in
round 1 under those thresholds and under the seed's (0.90 / 0.70). docs/debate.md reports them.
"""

from __future__ import annotations

import asyncio
import statistics
from pathlib import Path

import yaml

from dominds.workflows.debate.calibration import Calibration, LabelledPair, derive, outcome, score_pairs
from dominds.workflows.debate.similarity import PositionComparer

PAIRS = Path(__file__).resolve().parents[1] / "tests" / "workflows" / "debate" / "data" / "position_pairs.yaml"
SEED = Calibration(converge_above=0.90, oppose_at_or_below=0.70, stable_delta=0.05)


def auc(agree: list[float], disagree: list[float]) -> float:
    wins = sum((a > d) + 0.5 * (a == d) for a in agree for d in disagree)
    return wins / (len(agree) * len(disagree))


def tally(scores: list[float], calibration: Calibration) -> str:
    actions = [outcome(x, calibration) for x in scores]
    return f"converge {actions.count('converge')}, continue {actions.count('continue')}, oppose {actions.count('force_opposition')}"


async def main() -> None:
    raw = yaml.safe_load(PAIRS.read_text(encoding="utf-8"))["pairs"]
    pairs = [LabelledPair(p["label"], p["a"], p["b"]) for p in raw]
    methods: list[tuple[str, PositionComparer]] = [("word overlap (Jaccard)", PositionComparer(None))]
    try:
        from dominds.workflows.debate.embedders import WordLlamaEmbedder

        methods.append(("WordLlama l2_supercat-256", PositionComparer(WordLlamaEmbedder())))
    except Exception as exc:  # the extra is optional
        print(f"WordLlama skipped: {exc}\n")
    for name, comparer in methods:
        scores = await score_pairs(comparer, pairs)
        for script in ("cjk", "latin"):
            agree, disagree = scores[script]["agree"], scores[script]["disagree"]
            calibration = derive(agree, disagree)
            print(f"{name}, {'Chinese' if script == 'cjk' else 'English'} ({len(agree)}+{len(disagree)} pairs)")
            print(f"  agreeing    {min(agree):.3f}..{max(agree):.3f}  mean {statistics.fmean(agree):.3f}")
            print(f"  disagreeing {min(disagree):.3f}..{max(disagree):.3f}  mean {statistics.fmean(disagree):.3f}")
            print(f"  AUC {auc(agree, disagree):.2f}; thresholds: converge > {calibration.converge_above:.2f}, "
                  f"oppose <= {calibration.oppose_at_or_below:.2f}, stable delta {calibration.stable_delta}")
            print(f"  calibrated: agreeing pairs {tally(agree, calibration)}; disagreeing pairs {tally(disagree, calibration)}")
            print(f"  seed 0.90/0.70: agreeing pairs {tally(agree, SEED)}; disagreeing pairs {tally(disagree, SEED)}\n")


if __name__ == "__main__":
    asyncio.run(main())
