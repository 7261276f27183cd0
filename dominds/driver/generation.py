"""One generation: record the prompt, build context, stream from the provider, execute calls, finish.

``gen_finish_record`` and ``generating: false`` are always written, also on errors and stops
(reference §13 row 6: close ``generating`` in a finally).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dominds.dialog.model import Dialog
from dominds.driver.context import build_messages, system_prompt
from dominds.driver.images import sees_images, with_images
from dominds.driver.pressure import tell_context_pressure
from dominds.driver.receiver import DialogReceiver, finish_event_fields
from dominds.driver.request_record import RequestRecorder, TimedReceiver
from dominds.driver.retry_state import announce_retries
from dominds.driver.services import EngineServices
from dominds.driver.subdialogs import CallToRun, prompt_event_fields, runtime_call_id
from dominds.driver.tellask_exec import execute_tellasks
from dominds.driver.tool_exec import execute_func_calls, tools_for
from dominds.driver.tool_form import record_tool_form_calls, split_tellask_tool_calls, tellask_tool_specs_for
from dominds.ids import now_iso
from dominds.llm.base import (
    ChatMessage,
    ContextOverflow,
    GenerationRequest,
    LlmError,
    ProviderRejected,
    SharedRun,
    StreamBroken,
    StreamProtocolError,
    ToolSpec,
)
from dominds.llm.catalog import LlmResolutionError, resolve_member_llm
from dominds.llm.wire_capture import capturing
from dominds.store.course_records import (
    GenFinishRecord,
    GenStartRecord,
    HumanTextRecord,
    IncompleteReason,
    Usage,
)
from dominds.store.records import QueuedPrompt
from dominds.team import Member
from dominds.tellask import parse_segments
from dominds.tellask_events import TellaskCall


@dataclass
class GenOutcome:
    had_output: bool = False
    """Tool results or tellask notes the model has not seen yet: generate again."""
    stopped: bool = False
    """A stop was requested during this generation."""
    error: str | None = None
    """Why the generation failed (the dialog is interrupted with it)."""
    rejected: bool = False
    """The provider refused the request (4xx): a user must fix the configuration."""
    truncated: bool = False
    """The reply was cut at the output limit (or the context window)."""
    context_overflow: bool = False
    """The provider refused the course as longer than the model's context window, and it has earlier
    generations a new course would drop: the drive starts one."""
    usage: Usage | None = None


class GenerationAborted(Exception):
    """The provider stream was cancelled by a stop request."""


async def run_generation(
    engine: EngineServices, dialog: Dialog, prompt: QueuedPrompt | None, merged: Sequence[QueuedPrompt] = ()
) -> GenOutcome:
    """``merged``: user messages queued right behind ``prompt`` that this generation answers too."""
    outcome = GenOutcome()
    genseq = dialog.next_genseq()
    dialog.genseq = genseq
    dialog.append(GenStartRecord(ts=now_iso(), genseq=genseq), sync=False)
    gen = {"course": dialog.latest.current_course, "genseq": genseq}
    prompts = [prompt, *merged] if prompt is not None else []
    for each in prompts:
        _record_prompt(dialog, each, genseq)
    if prompt is not None:
        if prompt.origin == "tellask_back":
            dialog.start_serving(prompt.msg_id)
    # One write: generating, the consumed prompt, the obligation it opens, the consumed revival and the
    # run state together; made with the group commit (the drive saves again at its end: a fast turn writes
    # the file once), except for an ask-back being served (what it waits for is known only here).
    dialog.latest.generating = True
    dialog.latest.needs_drive = False  # this generation sees everything recorded so far
    dialog.save_latest(soon=prompt is None or prompt.origin != "tellask_back")
    dialog.publish({"type": "generating_start_evt", **gen})
    for each in prompts:
        _publish_prompt(dialog, each, genseq)
    finish = GenFinishRecord(ts="", genseq=genseq)
    receiver: DialogReceiver | None = None
    started = time.perf_counter()
    try:
        suspended = False
        for each in prompts:
            if each.grammar == "tellask":
                suspended = await _run_human_tellasks(engine, dialog, each, genseq) or suspended
        if suspended:
            return outcome  # the dialog now waits (the drive sees it cannot drive)
        if dialog.stop_reason:
            outcome.stopped = True
            return outcome
        config = engine.config.get()
        member = config.team.member(dialog.agent_id)
        if member is None:
            raise LlmResolutionError(f"agent {dialog.agent_id!r} is not a member of the team (.minds/team.yaml)")
        resolved = resolve_member_llm(member, config.catalog)
        finish.provider, finish.model = resolved.provider_key, resolved.model_key
        if config.mcp is not None and not dialog.meta.fbr:
            await config.mcp.prepare(member.toolsets)  # lists the tools of MCP servers on first use
        tools = tools_for(member, dialog, config)
        messages, shared_run = _with_images(
            build_messages(engine.config, dialog, member), dialog, resolved.provider.api_type, resolved.model.request_info()
        )
        request = GenerationRequest(
            provider_key=resolved.provider_key,
            provider_config=engine.provider_config_dict(resolved.provider),
            model_key=resolved.model_key,
            model_name=resolved.model.key,
            system_prompt=system_prompt(engine.config, config, dialog, member, sorted(tools)),
            messages=messages,
            shared_run=shared_run,
            tools=[
                *(ToolSpec(t.name, t.description, t.parameters) for t in tools.values()),
                *tellask_tool_specs_for(member.tellask, dialog),
            ],
            model_params=dict(member.fbr_model_params if dialog.meta.fbr else member.model_params),
            agent_id=dialog.agent_id,
            rtws_root=str(engine.rtws.root),
            streaming=member.streaming,
            model_info=resolved.model.request_info(),
            on_retry=announce_retries(dialog),
        )
        finish.streaming = request.streaming
        finish.messages_count = len(request.messages) + (1 if request.system_prompt else 0)
        generator = await engine.generator_for(resolved.provider.api_type)
        receiver = DialogReceiver(dialog, genseq, plain=member.tellask == "tools")
        provider_started = time.perf_counter()
        timed = TimedReceiver(receiver)
        recorder = RequestRecorder(dialog, genseq, resolved.provider_key, resolved.provider.api_type, resolved.model_key, timed)
        try:
            with capturing(recorder.sent) as capture:
                try:
                    result = await generator.generate(request, timed)
                finally:  # also a refused or broken request: its attempts and timing
                    recorder.finished(capture)
        except asyncio.CancelledError:  # the drive's scope was cancelled (driver/drive_scope.py)
            _keep_partial(receiver, finish, "stopped")
            raise
        receiver.check_closed()
        engine.provider_worked(resolved.provider_key)
        finish.duration_ms = int((time.perf_counter() - provider_started) * 1000)
        finish.usage = outcome.usage = result.usage
        finish.finish_reason, finish.partial = result.finish_reason, result.partial
        if result.partial:
            outcome.truncated = True
            outcome.had_output = _continues_cut_reply(dialog, member)
        tellask_requests, func_calls = split_tellask_tool_calls(receiver.func_calls, member.tellask)
        tool_form_calls, refused = record_tool_form_calls(dialog, tellask_requests, genseq)
        tellask_outcome = await execute_tellasks(
            engine, dialog, [*receiver.calls, *tool_form_calls], genseq, from_human=False
        )
        if func_calls:
            await execute_func_calls(engine, dialog, func_calls, tools, genseq)
        outcome.had_output = outcome.had_output or bool(func_calls) or refused or tellask_outcome.had_notes or (
            tellask_outcome.dispatched and dialog.can_drive()
        )
        if dialog.stop_reason:
            outcome.stopped = True
        return outcome
    except StreamProtocolError as exc:
        _keep_partial(receiver, finish, "broken")
        outcome.error = f"stream protocol violation: {exc}"
        dialog.publish({"type": "stream_error_evt", "error": outcome.error, **gen})
        return outcome
    except ContextOverflow as exc:
        outcome.error = f"{exc} — {exc.fix_hint}"
        if any(isinstance(r, GenFinishRecord) for r in dialog.records):
            # Earlier generations of this course are what overflowed: the drive starts a new course.
            outcome.context_overflow = True
        else:  # the course's first generation: a new course would fail the same way
            dialog.publish({"type": "stream_error_evt", "error": outcome.error, **gen})
        return outcome
    except ProviderRejected as exc:
        outcome.error = f"provider rejected the request: {exc}" + (f" — {exc.fix_hint}" if exc.fix_hint else "")
        outcome.rejected = True
        dialog.publish({"type": "stream_error_evt", "error": outcome.error, **gen})
        engine.report_provider_problem(dialog, finish.provider or "?", finish.model, outcome.error)
        return outcome
    except (LlmError, LlmResolutionError) as exc:
        _keep_partial(receiver, finish, "broken" if isinstance(exc, StreamBroken) else None)
        outcome.error = str(exc)
        dialog.publish({"type": "stream_error_evt", "error": outcome.error, **gen})
        return outcome
    except asyncio.CancelledError:
        outcome.stopped = True  # a shutdown's cancellation: recorded interrupted, never ok
        raise
    except Exception as exc:  # a bug, not a provider's answer: recorded as the error it is, then raised on
        _keep_partial(receiver, finish, "broken")
        outcome.error = f"internal error: {type(exc).__name__}: {exc}"
        raise
    finally:
        if receiver is not None:
            finish.response_chars = receiver.response_chars
        dialog.streaming_text.clear()  # nothing is streaming any more, also after a stop mid-segment
        finish.ts = now_iso()
        if finish.duration_ms is None:
            finish.duration_ms = int((time.perf_counter() - started) * 1000)
        finish.status = (
            "error" if outcome.error else "interrupted" if outcome.stopped else "truncated" if outcome.truncated else "ok"
        )
        finish.error = outcome.error
        finish.context_health = engine.context_health(dialog, finish)
        dialog.append(finish)
        dialog.latest.generating = False  # persisted by the next generation start or the drive's settle
        dialog.publish({"type": "generating_finish_evt", **finish_event_fields(finish), **gen})
        if finish.context_health:
            dialog.publish({"type": "context_health_evt", "contextHealth": finish.context_health, **gen})
        tell_context_pressure(dialog, finish)  # after the generation's own events: the model reads it next


def _with_images(
    context: tuple[list[ChatMessage], SharedRun], dialog: Dialog, api_type: str, model_info: dict[str, Any]
) -> tuple[list[ChatMessage], SharedRun | None]:
    """The messages with the images a vision-capable model sees (``images.py``); a text-only one reads the placeholders."""
    if not sees_images(api_type, model_info):
        return context
    return with_images(*context, dialog.files.dir, kept=dialog.course_cache)


def _keep_partial(receiver: DialogReceiver | None, finish: GenFinishRecord, why: IncompleteReason | None) -> None:
    """A generation that broke or was stopped: keep the open segment and the usage known so far."""
    if receiver is None:
        return  # the provider was never called
    if why is not None:
        receiver.keep_incomplete(why)
        finish.finish_reason = why
        finish.partial = receiver.streamed_anything
    if receiver.usage is not None:
        finish.usage = receiver.usage.model_copy(update={"partial": True})


def _continues_cut_reply(dialog: Dialog, member: Member) -> bool:
    """Whether a reply cut at the output limit is continued at once (the member's
    ``continue_on_max_tokens``: that many cut replies in a row are continued; 0 = only told)."""
    cut_in_a_row = 0
    for record in reversed(dialog.records):
        if isinstance(record, GenFinishRecord):
            if record.status != "truncated":
                break
            cut_in_a_row += 1
    return cut_in_a_row < member.continue_on_max_tokens


def _record_prompt(dialog: Dialog, prompt: QueuedPrompt, genseq: int) -> None:
    """Record a queued prompt exactly once (a crash may have recorded it already) and drop it from the queue."""
    if prompt.msg_id not in dialog.recorded_msg_ids():
        dialog.append(
            HumanTextRecord(
                ts=now_iso(),
                genseq=genseq,
                msg_id=prompt.msg_id,
                content=prompt.content,
                grammar=prompt.grammar,
                origin=prompt.origin,
                question_id=prompt.question_id,
                from_dialog_id=prompt.from_dialog_id,
                call_id=prompt.call_id,
                assignment=prompt.assignment,
                ask_back=prompt.ask_back,
            )
        )
    dialog.queue.take(prompt.msg_id)


def _publish_prompt(dialog: Dialog, prompt: QueuedPrompt, genseq: int) -> None:
    event: dict[str, Any] = {
        "type": "end_of_user_saying_evt",
        "course": dialog.latest.current_course,
        "genseq": genseq,
        "msgId": prompt.msg_id,
        "content": prompt.content,
        "grammar": prompt.grammar,
        "origin": prompt.origin,
    }
    event.update(prompt_event_fields(prompt))
    dialog.publish(event)


async def _run_human_tellasks(engine: EngineServices, dialog: Dialog, prompt: QueuedPrompt, genseq: int) -> bool:
    """Run the tellasks a human wrote. True when that suspended the dialog."""
    course = dialog.latest.current_course
    calls = [
        CallToRun(seg, runtime_call_id(seg.call_id, course, genseq, "u"))
        for seg in parse_segments(prompt.content)
        if isinstance(seg, TellaskCall)
    ]
    if not calls:
        return False
    await execute_tellasks(engine, dialog, calls, genseq, from_human=True)
    return not dialog.can_drive()
