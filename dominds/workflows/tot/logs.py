"""The run's log folder, as seed 000's "日志规范" specifies it.

``logs/tot-YYYYMMDD-HHMMSS-xxxxxx/`` (UTC, 6 random ``[a-z0-9]``) holds ``00-task-info.json``
(written with ``status: running`` at the start and rewritten at the end), one JSON Lines file per
agent (``ts``, ``seq`` from 1, ``level``, ``msg``, ``data`` when there is some) and
``99-merged-timeline.log``.

Numbering: the seed's ``{序号}-{agent}-{roundN}.log`` with a two-digit 序号 that "keeps the files
sorted". Each file's number is the order in which it got its first entry, so name order is execution
order however many rounds run: ``01-orchestrator``, ``02-decomposer``, ``03-explorer``,
``04-generator-round1``, ``05-evaluator-round1``, ``06-generator-round2``, ``07-evaluator-round2``,
then ``08-synthesizer`` after two rounds (the seed's own example) or ``10-synthesizer`` after three.
Round N is the search layer whose candidates are being made (depth N); at most 10 layers keep the
numbers within two digits.

Agent logs are buffered and written once, when the run ends (the seed: "执行完成后一次性写入").
"""

from __future__ import annotations

import json
import secrets
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from dominds.store.atomic import replace_unsynced

Level = Literal["info", "progress", "warning", "error"]
Clock = Callable[[], datetime]

AGENTS = ("orchestrator", "decomposer", "explorer", "generator", "evaluator", "synthesizer")
RESULT_WORDS = {"completed": "已解决", "unsolved": "未解决", "failed": "失败", "cancelled": "已取消", "interrupted": "已中断"}
"""The timeline's ``结果`` line per task-info status."""
TASK_INFO = "00-task-info.json"
TIMELINE = "99-merged-timeline.log"
_ID_CHARS = string.ascii_lowercase + string.digits


def utc_now() -> datetime:
    return datetime.now(UTC)


def to_ms(moment: datetime) -> datetime:
    """``moment`` cut to whole milliseconds, the precision every timestamp of the folder is written with."""
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def iso_ms(moment: datetime) -> str:
    """ISO 8601 in UTC with milliseconds and ``Z``: ``2025-10-30T14:30:56.123Z``."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def new_task_id(moment: datetime, short_id: str | None = None) -> str:
    suffix = short_id or "".join(secrets.choice(_ID_CHARS) for _ in range(6))
    return f"tot-{moment.astimezone(UTC).strftime('%Y%m%d-%H%M%S')}-{suffix}"


def agent_log_name(number: int, agent: str, round_no: int | None = None) -> str:
    """The file stem of an agent's log: ``01-orchestrator``, ``06-generator-round2``."""
    if agent not in AGENTS:
        raise ValueError(f"unknown ToT agent {agent!r}")
    return f"{number:02d}-{agent}" + (f"-round{round_no}" if round_no is not None else "")


@dataclass
class AgentLog:
    """One agent's entries, kept in memory until the run writes them."""

    name: str
    clock: Clock
    entries: list[dict[str, Any]] = field(default_factory=list)

    def log(self, level: Level, msg: str, data: Any = None) -> None:
        entry: dict[str, Any] = {"ts": iso_ms(self.clock()), "seq": len(self.entries) + 1, "level": level, "msg": msg}
        if data is not None:
            entry["data"] = data
        self.entries.append(entry)


class RunLogs:
    """The log folder of one run; with ``folder=None`` entries are collected but nothing is written."""

    def __init__(self, folder: Path | None, clock: Clock) -> None:
        self.folder = folder
        self.clock = clock
        self._agents: dict[tuple[str, int | None], AgentLog] = {}
        """By (agent, round); insertion order is the order of first use, which numbers the files."""
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=False)

    def agent(self, agent: str, round_no: int | None = None) -> AgentLog:
        key = (agent, round_no)
        if key not in self._agents:
            self._agents[key] = AgentLog(agent_log_name(len(self._agents) + 1, agent, round_no), self.clock)
        return self._agents[key]

    @property
    def agent_logs(self) -> list[AgentLog]:
        return list(self._agents.values())

    def write_task_info(self, info: dict[str, Any]) -> None:
        if self.folder is not None:
            _write_text(self.folder / TASK_INFO, json.dumps(info, ensure_ascii=False, indent=2) + "\n")

    def write_agent_logs(self) -> None:
        if self.folder is None:
            return
        for agent_log in self.agent_logs:
            lines = "".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in agent_log.entries)
            _write_text(self.folder / f"{agent_log.name}.log", lines)

    def write_timeline(self, task_info: dict[str, Any], agent_calls: int) -> None:
        """Merge the agent logs on disk (all ``*.log`` but the timeline) into ``99-merged-timeline.log``."""
        if self.folder is None:
            return
        entries: list[tuple[str, int, int, str, dict[str, Any]]] = []
        for order, path in enumerate(sorted(self.folder.glob("*.log"))):
            if path.name == TIMELINE:
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    entry = json.loads(line)
                    entries.append((entry["ts"], entry["seq"], order, path.stem, entry))
        entries.sort(key=lambda item: item[:3])
        _write_text(self.folder / TIMELINE, render_timeline(task_info, [(src, e) for *_, src, e in entries], agent_calls))


def render_timeline(task_info: dict[str, Any], entries: list[tuple[str, dict[str, Any]]], agent_calls: int) -> str:
    """The seed's human timeline: header, ``[HH:MM:SS.mmm] [source] msg`` lines, footer with statistics."""
    out = [
        "# ToT 执行时间线",
        "",
        f"任务 ID: {task_info['task_id']}",
        f"问题: {task_info['problem']}",
        "",
        f"任务开始: {task_info['start_time']}",
        "",
    ]
    for source, entry in entries:
        clock_part = entry["ts"][11:23]  # HH:MM:SS.mmm of the UTC timestamp
        first, *rest = str(entry["msg"]).split("\n")
        out.append(f"[{clock_part}] [{source}] {first}")
        out.extend(f"         {line}" for line in rest)
        if "data" in entry:
            out.append("         数据: " + json.dumps(entry["data"], ensure_ascii=False, separators=(",", ":")))
    stats = task_info.get("final_stats") or {}
    result = RESULT_WORDS.get(str(task_info.get("status")), str(task_info.get("status")))
    if task_info.get("unsolved_reason"):
        result += f" ({task_info['unsolved_reason']})"
    out += [
        "",
        f"任务结束: {task_info.get('end_time')}",
        f"总耗时: {format_duration(int(task_info.get('duration_ms') or 0))}",
        f"结果: {result}",
        "",
        "---",
        "",
        "统计信息:",
        f"- 总日志条目: {len(entries)} 条",
        f"- Agent 调用次数: {agent_calls}",
        f"- LLM 调用次数: {stats.get('llm_calls', 0)} 次",
    ]
    return "\n".join(out) + "\n"


def format_duration(duration_ms: int) -> str:
    """``1分26秒`` as in the seed; shorter runs as ``5秒`` or ``123毫秒``."""
    if duration_ms < 1000:
        return f"{duration_ms}毫秒"
    minutes, seconds = divmod(duration_ms // 1000, 60)
    return f"{minutes}分{seconds}秒" if minutes else f"{seconds}秒"


def _write_text(path: Path, text: str) -> None:
    # temp file + rename: a reader (the panel, `tail`) never sees half a file
    replace_unsynced(path, text.encode("utf-8"))
