"""What keeping a ToT run's snapshot on disk costs: one write and one read of ``tot-run.json``.

    python bench/tot_run_file.py            # trees of 100, 1,000 and 5,000 nodes (the explorer's guard)

A run writes the file when its search starts, at each layer end, at its end, and at most every 0.25 s
in between (``workflows/tot/run_file.py``), on the event loop; the panel reads it for every run that is
not in progress. Prints nodes, file size, median write (temp file + fsync + rename) and read (parse +
validate) times.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from dominds.workflows.tot import run_file
from dominds.workflows.tot.model import Evaluation, SearchConfig, ThoughtTree


def tree_of(size: int) -> ThoughtTree:
    """A BFS-shaped tree of ``size`` nodes with the contents and scores a Game-24 run has."""
    tree = ThoughtTree.start("tot-bench", "4 9 10 13", "math_reasoning", SearchConfig("BFS", 3, 5, 5.0), {"left": ["4", "9", "10", "13"]})
    parents = [tree.root]
    while len(tree.nodes) < size:
        grown = []
        for parent in parents:
            for _ in range(8):
                if len(tree.nodes) >= size:
                    break
                child = tree.add_child(parent, "13 - 9 = 4 (left: 4 4 10)", "-", {"left": ["4", "4", "10"]})
                child.evaluation = Evaluation(7.5, 0.8, "a plausible step that keeps 24 reachable")
                grown.append(child)
        parents = grown
    return tree


def main() -> int:
    print(f"{'nodes':>6} {'size':>9} {'write':>9} {'read':>9}")
    for size in (100, 1_000, 5_000):
        record = run_file.TotRunFile(run_id="tot-bench", root_id="0abc", problem="4 9 10 13", tree=tree_of(size).to_dict(), started_at="-")
        with tempfile.TemporaryDirectory() as temp:
            folder = Path(temp)
            writes, reads = [], []
            for _ in range(9):
                start = time.perf_counter()
                run_file.save(folder, record)
                writes.append(time.perf_counter() - start)
                start = time.perf_counter()
                run_file.load(folder)
                reads.append(time.perf_counter() - start)
            kib = (folder / run_file.RUN_FILE).stat().st_size / 1024
        print(f"{size:>6} {kib:>7.0f} KiB {statistics.median(writes) * 1000:>6.1f} ms {statistics.median(reads) * 1000:>6.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
