"""Function tools: which ones a member gets, and running calls at most once with exactly-once recording.

The call record is persisted before the tool runs and the result after it (DESIGN §4.5). Arguments
are validated against the tool's JSON schema; an unknown tool or bad arguments become an error
result the model reads, never an exception.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from dominds.dialog.model import Dialog
from dominds.driver import texts
from dominds.driver.config import Config
from dominds.driver.drive_scope import run_together
from dominds.driver.pressure import oversized_result_note
from dominds.driver.receiver import FuncCallRequest
from dominds.driver.services import EngineServices
from dominds.ids import now_iso
from dominds.store.commit import durable
from dominds.store.course_records import FuncCallRecord, FuncResultRecord
from dominds.team import Member, expand_toolsets
from dominds.tools.base import FuncTool, ToolCallContext, ToolError
from dominds.tools.control import CONTROL_TOOLS

SHELL_TOOLS = frozenset({"shell_cmd", "stop_daemon", "get_daemon_output"})


def tools_for(member: Member, dialog: Dialog, config: Config) -> dict[str, FuncTool]:
    """Intrinsic tools, then the member's toolsets and single tools; shell tools only for specialists."""
    selected: dict[str, FuncTool] = {}
    for tool in CONTROL_TOOLS:
        if tool.root_only and not dialog.is_root:
            continue
        selected[tool.name] = tool
    mcp = config.mcp
    available = [*config.toolsets.names(), *(mcp.toolset_names() if mcp is not None else [])]

    def toolset(name: str) -> list[FuncTool]:
        return config.toolsets.get(name) or (mcp.tools(name) if mcp is not None else None) or []

    for name in expand_toolsets(member.toolsets, available):
        for tool in toolset(name):
            if tool.root_only and not dialog.is_root:
                continue
            selected.setdefault(tool.name, tool)
    if member.tools:
        by_name = {t.name: t for ts in available for t in toolset(ts)}
        for tool_name in member.tools:
            if tool_name in by_name:
                selected.setdefault(tool_name, by_name[tool_name])
    if not config.team.is_shell_specialist(member.id):
        for name in SHELL_TOOLS:
            selected.pop(name, None)
    return selected


async def execute_func_calls(
    engine: EngineServices, dialog: Dialog, calls: list[FuncCallRequest], tools: dict[str, FuncTool], genseq: int
) -> None:
    # siblings in the drive's scope: a Stop or a failing call cancels the others (driver/drive_scope.py)
    await run_together(_execute_one(engine, dialog, call, tools, genseq) for call in calls)


async def _execute_one(
    engine: EngineServices, dialog: Dialog, call: FuncCallRequest, tools: dict[str, FuncTool], genseq: int
) -> None:
    arguments: dict[str, Any] | str
    error: str | None = None
    try:
        parsed = json.loads(call.arguments_json or "{}")
    except json.JSONDecodeError as exc:
        parsed, error = call.arguments_json, f"Invalid arguments: not JSON ({exc.msg})"
    arguments = parsed if isinstance(parsed, dict) else str(call.arguments_json)
    if error is None and not isinstance(parsed, dict):
        error = "Invalid arguments: expected a JSON object"
    tool = tools.get(call.name)
    if tool is None:
        error = f"Tool '{call.name}' not found. Available tools: {', '.join(sorted(tools)) or 'none'}"
    elif error is None:
        import jsonschema  # on first use: ~3 MiB a daemon that never runs a tool does not need

        try:
            jsonschema.validate(parsed, tool.parameters)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)
            error = f"Invalid arguments{' at ' + where if where else ''}: {exc.message}"
    dialog.append(FuncCallRecord(ts=now_iso(), genseq=genseq, id=call.call_id, name=call.name, arguments=arguments))
    dialog.publish(
        {
            "type": "func_call_requested_evt",
            "course": dialog.latest.current_course,
            "genseq": genseq,
            "funcId": call.call_id,
            "funcName": call.name,
            "arguments": call.arguments_json,
        }
    )
    is_error = error is not None
    if error is not None:
        content = error
    else:
        assert tool is not None and isinstance(parsed, dict)
        ctx = ToolCallContext(
            rtws=engine.rtws,
            root_id=dialog.root_id,
            self_id=dialog.self_id,
            agent_id=dialog.agent_id,
            call_id=call.call_id,
            services={"dialog": dialog, "engine": engine},
        )
        started = False
        try:
            await durable()  # the call record is on disk before the tool can have any effect (at most once)
            started = True
            content = await tool.handler(ctx, parsed)
        except ToolError as exc:
            content, is_error = str(exc), True
        except asyncio.CancelledError:  # the drive was stopped: the call is closed, then the stop goes on
            reason = dialog.stop_reason or "system_stop"
            _record_result(engine, dialog, call, genseq, texts.stopped_tool_result(reason, started), True, interrupted=True)
            raise
        except Exception as exc:  # a tool bug must not take the dialog down; the model sees it
            content, is_error = f"Function '{call.name}' execution failed: {type(exc).__name__}: {exc}", True
    _record_result(engine, dialog, call, genseq, content, is_error)


def _record_result(
    engine: EngineServices,
    dialog: Dialog,
    call: FuncCallRequest,
    genseq: int,
    content: str,
    is_error: bool,
    *,
    interrupted: bool = False,
) -> None:
    key_vars = [p.api_key_env_var for p in engine.config.get().catalog.providers.values() if p.api_key_env_var]
    content = engine.secrets.redact(content, key_vars)
    dialog.append(
        FuncResultRecord(
            ts=now_iso(),
            genseq=genseq,
            id=call.call_id,
            name=call.name,
            content=content,
            is_error=is_error,
            interrupted=interrupted,
            context_note=oversized_result_note(dialog, content),
        )
    )
    dialog.publish(
        {
            "type": "func_result_evt",
            "course": dialog.latest.current_course,
            "genseq": genseq,
            "id": call.call_id,
            "name": call.name,
            "content": content,
            "isError": is_error,
        }
    )
