"""OpenTelemetry traces of the runtime, per the GenAI semantic conventions (docs/observability.md).

Off unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set (and
``OTEL_SDK_DISABLED`` is not ``true``) and the ``otel`` extra is installed; then spans go to that endpoint
over OTLP/HTTP protobuf (``http/protobuf``, the only protocol offered):

- ``invoke_agent <agent>`` per drive of a dialog (``invoke_workflow <workflow>`` for a workflow run's root):
  from the run state ``proceeding`` until it leaves it;
- ``chat <model>`` per generation, child of its drive: provider, request and response model,
  ``gen_ai.usage.*`` (cache and reasoning tokens too), finish reason, time to first token;
- ``execute_tool <tool>`` per function call, child of its generation (``dominds.mcp.server`` for an MCP
  tool);
- a subdialog's drive is a child of the generation that called it, so a whole tree is one trace.

The spans are built from the engine's own events (a ``PubChan`` subscriber that wants every dialog's):
nothing in the drive waits for them. Export runs in the SDK's batch thread: a slow or unreachable
collector never blocks or fails a drive (the SDK logs a warning). Message content (prompts, replies, tool
arguments and results) is recorded only with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dominds.store.course_records import GenFinishRecord

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

    from dominds.driver.services import EngineServices
    from dominds.pubchan import Event

log = logging.getLogger("dominds.tracing")

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
SHUTDOWN_SECONDS = 3.0
"""How long closing the engine waits for the last spans to be sent (a dead collector costs no more)."""
_FIRST_OUTPUT = frozenset(
    {"thinking_chunk_evt", "markdown_chunk_evt", "teammate_call_start_evt", "func_call_requested_evt"}
)
_DRIVING = frozenset({"proceeding", "stop_requested"})


def wanted() -> bool:
    """The standard variables ask for traces."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(os.environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def capture_content() -> bool:
    return os.environ.get(CAPTURE_VARIABLE, "").strip().lower() == "true"


@dataclass
class _Generation:
    span: Span
    first_output_ns: int | None = None
    started_ns: int = 0
    output: list[str] = field(default_factory=list)


class DialogSpans:
    """Turns the engine's events into spans; one per daemon."""

    def __init__(self, engine: EngineServices, tracer: Tracer, *, capture: bool) -> None:
        self.engine = engine
        self.tracer = tracer
        self.capture = capture
        self.drives: dict[str, Span] = {}
        """selfId → its open invoke_agent span."""
        self.generations: dict[str, _Generation] = {}
        """selfId → its open chat span."""
        self.tools: dict[tuple[str, str], Span] = {}
        """(selfId, call id) → its open execute_tool span."""
        self.callers: dict[str, Any] = {}
        """subdialog selfId → the span context of the generation that called it (its drive's parent)."""

    # -- events ------------------------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        try:
            self._on_event(event)
        except Exception:  # tracing must never disturb the daemon
            log.exception("tracing: an event could not be turned into spans")

    def _on_event(self, event: Event) -> None:
        kind = event.get("type")
        ident = event.get("dialog") or {}
        self_id = ident.get("selfId")
        if not self_id:
            return
        if kind == "dlg_run_state_evt":
            state = (event.get("runState") or {}).get("kind")
            if state in _DRIVING and self_id not in self.drives:
                self._start_drive(self_id, ident.get("rootId", self_id))
            elif state not in _DRIVING and self_id in self.drives:
                self._end_drive(self_id, state)
        elif kind == "generating_start_evt":
            self._start_generation(self_id, event)
        elif kind == "generating_finish_evt":
            self._end_generation(self_id, event)
        elif kind in _FIRST_OUTPUT and self_id in self.generations:
            gen = self.generations[self_id]
            if gen.first_output_ns is None:
                gen.first_output_ns = time.time_ns()
            if kind == "func_call_requested_evt":
                self._start_tool(self_id, event)
        elif kind == "func_result_evt":
            self._end_tool(self_id, event)
        elif kind == "subdialog_created_evt":
            sub = (event.get("subDialog") or {}).get("selfId")
            caller = self.generations.get(self_id)
            parent = caller.span if caller else self.drives.get(self_id)
            if sub and parent is not None:
                self.callers[sub] = parent.get_span_context()
        elif self.capture and kind == "end_of_user_saying_evt" and self_id in self.generations:
            self.generations[self_id].span.set_attribute(
                "gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": event.get("content", "")}]}])
            )
        elif self.capture and kind == "saying_finish_evt" and self_id in self.generations:
            self.generations[self_id].output.append(str(event.get("content", "")))

    # -- spans -------------------------------------------------------------------------------------

    def _dialog(self, self_id: str) -> Any:
        return self.engine.find_loaded(self_id)

    def _start_drive(self, self_id: str, root_id: str) -> None:
        from opentelemetry import trace

        dialog = self._dialog(self_id)
        agent = dialog.agent_id if dialog is not None else ""
        workflow = dialog.meta.conductor if dialog is not None else None
        caller = self.callers.pop(self_id, None)
        context = trace.set_span_in_context(trace.NonRecordingSpan(caller)) if caller is not None else None
        name = f"invoke_workflow {workflow}" if workflow else f"invoke_agent {agent}"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_workflow" if workflow else "invoke_agent",
            "gen_ai.agent.name": agent,
            "gen_ai.agent.id": agent,
            "gen_ai.conversation.id": self_id,
            "dominds.dialog.id": self_id,
            "dominds.root.id": root_id,
        }
        if workflow:
            attributes["dominds.workflow"] = workflow
        self.drives[self_id] = self.tracer.start_span(name, context=context, attributes=attributes)

    def _end_drive(self, self_id: str, state: str | None) -> None:
        from opentelemetry.trace import Status, StatusCode

        span = self.drives.pop(self_id)
        span.set_attribute("dominds.run_state", state or "")
        if state == "error":
            span.set_status(Status(StatusCode.ERROR, "the dialog stopped with an error"))
        span.end()

    def _start_generation(self, self_id: str, event: Event) -> None:
        from opentelemetry import trace

        drive = self.drives.get(self_id)
        context = trace.set_span_in_context(drive) if drive is not None else None
        dialog = self._dialog(self_id)
        span = self.tracer.start_span(
            "chat",
            context=context,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.conversation.id": self_id,
                "gen_ai.agent.name": dialog.agent_id if dialog is not None else "",
                "dominds.course": int(event.get("course", 0)),
                "dominds.genseq": int(event.get("genseq", 0)),
            },
        )
        self.generations[self_id] = _Generation(span, started_ns=time.time_ns())

    def _end_generation(self, self_id: str, event: Event) -> None:
        from opentelemetry.trace import Status, StatusCode

        gen = self.generations.pop(self_id, None)
        if gen is None:
            return
        span = gen.span
        finish = self._finish_record(self_id, int(event.get("genseq", 0)))
        if finish is not None:
            if finish.provider:
                span.set_attribute("gen_ai.provider.name", finish.provider)
            if finish.model:
                span.update_name(f"chat {finish.model}")
                span.set_attribute("gen_ai.request.model", finish.model)
            usage = finish.usage
            if usage is not None and usage.available:
                span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens)
                span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
                span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
                span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)
                span.set_attribute("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens)
            if finish.duration_ms is not None:
                span.set_attribute("dominds.provider.duration_ms", finish.duration_ms)
        model = event.get("llmGenModel")
        if model:
            span.set_attribute("gen_ai.response.model", str(model))
        if event.get("finishReason"):
            span.set_attribute("gen_ai.response.finish_reasons", [str(event["finishReason"])])
        if gen.first_output_ns is not None:
            span.set_attribute("gen_ai.response.time_to_first_chunk", (gen.first_output_ns - gen.started_ns) / 1e9)
        status = event.get("status") or (finish.status if finish is not None else None)
        if status:
            span.set_attribute("dominds.generation.status", str(status))
        if status in ("error", "interrupted"):
            error = finish.error if finish is not None and finish.error else str(status)
            span.set_status(Status(StatusCode.ERROR, error))
        if self.capture and gen.output:
            span.set_attribute(
                "gen_ai.output.messages",
                json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "".join(gen.output)}]}]),
            )
        span.end()

    def _finish_record(self, self_id: str, genseq: int) -> GenFinishRecord | None:
        dialog = self._dialog(self_id)
        if dialog is None:
            return None
        for record in reversed(dialog.records[-50:]):  # the generation just ended: near the end
            if isinstance(record, GenFinishRecord) and record.genseq == genseq:
                return record
        return None

    def _start_tool(self, self_id: str, event: Event) -> None:
        from opentelemetry import trace

        gen = self.generations[self_id]
        name = str(event.get("funcName", ""))
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": str(event.get("funcId", "")),
            "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": self_id,
        }
        server = self._mcp_server(name)
        if server:
            attributes["dominds.mcp.server"] = server
        if self.capture:
            attributes["gen_ai.tool.call.arguments"] = str(event.get("arguments", ""))
        self.tools[(self_id, str(event.get("funcId", "")))] = self.tracer.start_span(
            f"execute_tool {name}", context=trace.set_span_in_context(gen.span), attributes=attributes
        )

    def _mcp_server(self, tool: str) -> str | None:
        mcp = self.engine.config.get().mcp
        if mcp is None:
            return None
        for server in mcp.toolset_names():
            if any(t.name == tool for t in mcp.tools(server) or ()):
                return server
        return None

    def _end_tool(self, self_id: str, event: Event) -> None:
        from opentelemetry.trace import Status, StatusCode

        span = self.tools.pop((self_id, str(event.get("id", ""))), None)
        if span is None:
            return
        if self.capture:
            span.set_attribute("gen_ai.tool.call.result", str(event.get("content", "")))
        if event.get("isError"):
            span.set_status(Status(StatusCode.ERROR, "the tool call failed"))
        span.end()

    def end_all(self) -> None:
        """At shutdown: what is still open ends now, marked so."""
        for span in [*self.tools.values(), *(g.span for g in self.generations.values()), *self.drives.values()]:
            span.set_attribute("dominds.ended_by", "shutdown")
            span.end()
        self.tools.clear()
        self.generations.clear()
        self.drives.clear()


class Tracing:
    """The daemon's tracer provider and its subscriber; ``close`` flushes within ``SHUTDOWN_SECONDS``."""

    def __init__(self, provider: Any, spans: DialogSpans, unsubscribe: Any) -> None:
        self.provider = provider
        self.spans = spans
        self._unsubscribe = unsubscribe

    def close(self) -> None:
        self._unsubscribe()
        self.spans.end_all()
        done = threading.Event()

        def shutdown() -> None:
            try:
                self.provider.shutdown()
            except Exception:  # a collector that fails at the last moment is not the daemon's problem
                log.warning("tracing: the last spans could not be sent", exc_info=True)
            finally:
                done.set()

        threading.Thread(target=shutdown, name="dominds-otel-shutdown", daemon=True).start()
        if not done.wait(SHUTDOWN_SECONDS):
            log.warning("tracing: the collector did not take the last spans within %.0f s", SHUTDOWN_SECONDS)


def install(engine: EngineServices) -> Tracing | None:
    """Traces for this engine when the environment asks for them; None otherwise (or with a warning when
    the ``otel`` extra is missing)."""
    if not wanted():
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning("tracing: OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed: "
                    "pip install 'dominds[otel]' (no traces are sent)")
        return None
    from dominds import __version__

    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if protocol and protocol.strip() != "http/protobuf":
        log.warning("tracing: OTLP protocol %r is not offered; sending http/protobuf", protocol)
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or "dominds", "service.version": __version__})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    spans = DialogSpans(engine, provider.get_tracer("dominds", __version__), capture=capture_content())
    subscriber = engine.pubchan.subscribe(spans.on_event, wants_all=True)
    log.info("tracing: spans go to %s", next(os.environ[n] for n in ENDPOINT_VARIABLES if os.environ.get(n, "").strip()))
    return Tracing(provider, spans, lambda: engine.pubchan.unsubscribe(subscriber))
