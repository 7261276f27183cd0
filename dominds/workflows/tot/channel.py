"""The one path every role message takes: validate, ask the backend, validate, retry, log, count.

A *role backend* answers the seed's requests for the four LLM roles (decomposer, generator,
evaluator, synthesizer): ``TeammateBackend`` asks teammates as subdialogs, ``SymbolicGame24Backend``
answers Game 24 in Python. The channel does not care which: both must speak the seed's JSON, so
schema validation is exercised either way. A reply that is still invalid after the retries
becomes the seed's ``INVALID_FORMAT`` error reply; nothing here raises for a bad reply.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

from dominds.workflows.tot.logs import RunLogs
from dominds.workflows.tot.protocol import Message, error_reply, reply_error
from dominds.workflows.tot.schemas import INVALID_FORMAT, RESPONSE_TYPES, message_errors


@dataclass(frozen=True)
class RoleAnswer:
    """What a backend made of one request."""

    reply: Message | str
    """The response message, or why the reply could not be read as one."""
    calls: int = 1
    """LLM calls spent (for the symbolic pair: role calls answered in Python)."""
    subdialog_id: str | None = None
    """The teammate subdialog that answered, when there was one."""


class RoleBackend(Protocol):
    async def answer(self, request: Message, correction: str | None) -> RoleAnswer:
        """Answer ``request``; ``correction`` says what was wrong with the previous reply, on a retry."""
        ...


class ProtocolBug(RuntimeError):
    """Our own code built a message the seed's schema rejects: a bug, never the model's fault."""


class Channel:
    def __init__(self, backend: RoleBackend, logs: RunLogs, *, max_attempts: int = 2) -> None:
        self.backend = backend
        self.logs = logs
        self.max_attempts = max_attempts
        self.calls = 0
        self.calls_by_agent: Counter[str] = Counter()
        self.errors: list[dict[str, Any]] = []
        """Every error reply, with the agent and request type (search statistics, tests)."""

    async def exchange(self, request: Message, round_no: int | None = None) -> Message:
        """The valid response to ``request``: the agent's answer, or an error reply with a seed code."""
        problems = message_errors(request)
        if problems:
            raise ProtocolBug(f"invalid {request.get('type')} request: {problems[0]}")
        agent = request["to"]
        log = self.logs.agent(agent, round_no)
        who = agent.capitalize()
        log.log("progress", *_request_line(who, request))
        correction: str | None = None
        reply: Message | None = None
        for attempt in range(1, self.max_attempts + 1):
            answer = await self.backend.answer(request, correction)
            self.calls += answer.calls
            self.calls_by_agent[agent] += answer.calls
            problems = _reply_problems(request, answer.reply)
            if not problems:
                assert isinstance(answer.reply, dict)
                reply = answer.reply
                break
            data: dict[str, Any] = {"attempt": attempt, "problems": problems[:5]}
            if answer.subdialog_id:
                data["subdialog_id"] = answer.subdialog_id
            log.log("warning", f"⚠️ [{who}] 回复不符合协议", data)
            correction = "; ".join(problems[:5])
        if reply is None:
            text = f"{agent} gave no valid {RESPONSE_TYPES[request['type']]} after {self.max_attempts} attempts: {correction}"
            reply = error_reply(request, INVALID_FORMAT, text)
        error = reply_error(reply)
        if error is not None:
            self.errors.append({"agent": agent, "request": request["type"], **error.to_dict()})
            log.log("error", f"❌ [{who}] {error.code}: {error.message}")
        else:
            log.log("progress", *_reply_line(who, reply))
        return reply


def _reply_problems(request: Message, reply: Message | str) -> list[str]:
    if isinstance(reply, str):
        return [reply]
    problems = message_errors(reply)
    expected = RESPONSE_TYPES[request["type"]]
    if not problems and reply["type"] != expected:
        problems.append(f"the reply is a {reply['type']!r} message, expected {expected!r}")
    return problems


def _request_line(who: str, request: Message) -> tuple[str, Any]:
    payload = request["payload"]
    kind = request["type"]
    if kind == "generate_thoughts":
        parent = payload["parent_node"]
        data = {"parent": parent["id"], "strategy": payload["generation_strategy"], "num_candidates": payload["num_candidates"]}
        return f"⏳ [{who}] 为 {parent['id']} 生成 {payload['num_candidates']} 个候选", data
    if kind == "evaluate_thoughts":
        ids = [c["id"] for c in payload["candidates"]]
        return f"⏳ [{who}] 评估 {len(ids)} 个候选", {"strategy": payload["evaluation_strategy"], "node_ids": ids}
    if kind == "synthesize_solution":
        return f"📋 [{who}] 整合最佳路径 ({len(payload['best_path'])} 个节点)", None
    return f"📋 [{who}] 开始分解问题...", {"task_type": payload.get("task_type")}


def _reply_line(who: str, reply: Message) -> tuple[str, Any]:
    payload = reply["payload"]
    kind = reply["type"]
    if kind == "generated_thoughts":
        contents = [c["content"] for c in payload["candidates"]]
        return f"✓ [{who}] 已生成 {len(contents)} 个候选", {"candidates": contents}
    if kind == "evaluation_results":
        scores = {e["node_id"]: e["score"] for e in payload["evaluations"]}
        return f"✓ [{who}] 已评估 {len(scores)} 个候选", {"scores": scores}
    if kind == "final_solution":
        data = {"is_valid": payload["verification"]["is_valid"], "confidence": payload["confidence"]}
        return f"✅ [{who}] 答案: {payload['answer']}", data
    data = {"thought_granularity": payload["thought_granularity"], "depth_estimate": payload["depth_estimate"]}
    return f"✅ [{who}] 分解完成", data
