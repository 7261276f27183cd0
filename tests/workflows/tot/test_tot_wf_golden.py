"""A full offline run on `4 9 10 13` with the symbolic pair: a valid answer, and a log folder in the
seed's format, byte for byte against golden files (fake clock, the seed's example task id).

Regenerate the golden folder after an intended format change with ``TOT_WF_UPDATE_GOLDEN=1``.
The golden run uses comparative voting (one evaluator call per layer) to keep the files short;
the format is the same for independent scoring, which ``test_a_real_clock_run_has_the_same_format`` covers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

from tot_wf_kit import FakeClock

from dominds.workflows.tot.orchestrator import TotRequest, run_tot
from dominds.workflows.tot.settings import SearchOverrides
from dominds.workflows.tot.symbolic import SymbolicGame24Backend, symbolic_request

GOLDEN = Path(__file__).resolve().parent / "golden"
TASK_ID = "tot-20251030-143056-a3f7b2"  # the seed's example id
TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
EXPECTED_FILES = [
    "00-task-info.json", "01-orchestrator.log", "02-decomposer.log", "03-explorer.log",
    "04-generator-round1.log", "05-evaluator-round1.log", "06-generator-round2.log",
    "07-evaluator-round2.log", "08-generator-round3.log", "09-evaluator-round3.log",
    "10-synthesizer.log", "99-merged-timeline.log",
]  # fmt: skip


def check_seed_format(folder: Path) -> dict[str, Any]:
    """Assert the seed's log rules on ``folder``; returns its task info."""
    assert re.fullmatch(r"tot-\d{8}-\d{6}-[a-z0-9]{6}", folder.name)
    assert sorted(p.name for p in folder.iterdir()) == EXPECTED_FILES
    info: dict[str, Any] = json.loads((folder / "00-task-info.json").read_text(encoding="utf-8"))
    assert list(info) == [
        "task_id", "problem", "task_type", "status", "start_time", "end_time", "duration_ms", "search_config", "final_stats", "solved",
    ]  # fmt: skip
    assert info["task_id"] == folder.name and info["status"] == "completed" and info["solved"] is True
    assert TS_RE.match(info["start_time"]) and TS_RE.match(info["end_time"])
    start, end = (datetime.fromisoformat(info[k].replace("Z", "+00:00")) for k in ("start_time", "end_time"))
    assert info["duration_ms"] == round((end - start).total_seconds() * 1000)
    assert list(info["search_config"]) == ["strategy", "max_depth", "branching_factor", "pruning_threshold"]
    assert list(info["final_stats"]) == ["total_nodes", "llm_calls", "best_score"]
    assert folder.name[4:19] == start.strftime("%Y%m%d-%H%M%S")
    entries = []
    for path in sorted(folder.glob("*.log")):
        if path.name == "99-merged-timeline.log":
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        assert lines, path.name
        for expected_seq, line in enumerate(lines, start=1):
            entry = json.loads(line)
            assert set(entry) <= {"ts", "seq", "level", "msg", "data"} and {"ts", "seq", "level", "msg"} <= set(entry)
            assert TS_RE.match(entry["ts"]) and entry["seq"] == expected_seq
            assert entry["level"] in {"info", "progress", "warning", "error"} and isinstance(entry["msg"], str)
            assert info["start_time"] <= entry["ts"] <= info["end_time"], "every entry lies within the run"
            entries.append((entry["ts"], entry["seq"], path.stem, entry["msg"]))
    timeline = (folder / "99-merged-timeline.log").read_text(encoding="utf-8").split("\n")
    assert timeline[:6] == ["# ToT 执行时间线", "", f"任务 ID: {info['task_id']}", f"问题: {info['problem']}", "", f"任务开始: {info['start_time']}"]
    merged = [line for line in timeline if re.match(r"^\[\d\d:\d\d:\d\d\.\d{3}\] \[", line)]
    assert merged == [f"[{ts[11:23]}] [{src}] {msg}" for ts, _, src, msg in sorted(entries, key=lambda e: (e[0], e[1]))]
    footer = timeline[timeline.index("---") - 4 :]
    assert footer[0] == f"任务结束: {info['end_time']}" and footer[1].startswith("总耗时: ") and footer[2] == "结果: 已解决"
    assert f"- 总日志条目: {len(entries)} 条" in footer and f"- LLM 调用次数: {info['final_stats']['llm_calls']} 次" in footer
    assert "- Agent 调用次数: 8" in footer, "decomposer, 3 generator rounds, 3 evaluator rounds, synthesizer"
    return info


async def test_the_offline_run_matches_the_golden_log_folder(tmp_path: Path) -> None:
    request = symbolic_request(TotRequest("4 9 10 13", overrides=SearchOverrides(evaluation_strategy="comparative_voting")))
    outcome = await run_tot(request, SymbolicGame24Backend(), logs_root=tmp_path, task_id=TASK_ID, clock=FakeClock())
    assert outcome.verified and outcome.solution is not None
    assert outcome.solution["answer"].endswith("= 24") and len(outcome.solution["reasoning_trace"]) == 3
    folder = tmp_path / TASK_ID
    info = check_seed_format(folder)
    # 1 decompose + (1 + 5 + 5) generate + 3 evaluate (one vote per layer) + 1 synthesize
    assert info["final_stats"] == {"total_nodes": 149, "llm_calls": 16, "best_score": 10.0}
    golden = GOLDEN / TASK_ID
    if os.environ.get("TOT_WF_UPDATE_GOLDEN"):
        shutil.rmtree(golden, ignore_errors=True)
        shutil.copytree(folder, golden)
    for name in EXPECTED_FILES:
        assert (folder / name).read_text(encoding="utf-8") == (golden / name).read_text(encoding="utf-8"), name


async def test_a_real_clock_run_has_the_same_format(tmp_path: Path) -> None:
    outcome = await run_tot(symbolic_request(TotRequest("用4、9、10、13得到24")), SymbolicGame24Backend(), logs_root=tmp_path)
    assert outcome.verified and outcome.log_dir is not None
    info = check_seed_format(outcome.log_dir)
    assert info["problem"] == "用4、9、10、13得到24" and info["final_stats"]["llm_calls"] == outcome.llm_calls
