"""Terminal output: when to colour, and one look for transcripts.

Colour only on a TTY, never when ``NO_COLOR`` is set (https://no-color.org); ``FORCE_COLOR`` turns it
on for pipes (pagers, CI logs). Transcripts are always rendered from the daemon's event vocabulary
(docs/protocol.md §5): ``show`` gets the replay of a course, ``--follow`` and ``run`` get replay and
then live events. One renderer therefore gives the same picture for a file, a replay and a live stream.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any, TextIO

from dominds.cli.common import use_color

Event = dict[str, Any]

_CODES = {
    "bold": "1",
    "dim": "2",
    "italic": "3",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
    "gray": "90",
}
RUN_STATE_COLOURS = {
    "idle": "green",
    "proceeding": "cyan",
    "stop_requested": "yellow",
    "blocked": "yellow",
    "interrupted": "red",
    "error": "red",
    "dead": "gray",
    "terminal": "gray",
}
INCOMPLETE_LABELS = {"stopped": "stopped by the user", "broken": "the stream broke"}
"""``incomplete`` of a thinking/saying finish event: why the segment ends early."""
FINISH_NOTES = {
    "max_tokens": "reply cut off: the output limit (max_tokens) was reached",
    "context_window": "reply cut off: the context window is full",
    "refusal": "the model refused to continue",
    "content_filter": "reply stopped by the provider's content filter",
}
"""How ``generating_finish_evt``'s ``finishReason`` is shown when the reply did not end normally."""
CALL_LABELS = {"A": "ask-back", "B": "session", "C": "fresh tellask"}
"""Tellask kinds in the product's words (the seed calls them TYPE A, B and C)."""
ORIGIN_LABELS = {
    "tellask_back": "ask-back",
    "assignment": "task from a teammate",
    "new_course": "new course",
    "diligence": "diligence push",
}
FRAMED_LABELS = {"assignment": "task", "tellask_back": "ask-back"}
"""Labels of a prompt shown as its sender wrote it (``… from @agent``)."""
RESULT_PREVIEW_LINES = 6
PROMPT_PREVIEW_LINES = 12


def colour_enabled(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return use_color(stream)


class Style:
    """Wraps text in ANSI codes when enabled; a no-op otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *names: str) -> str:
        if not self.enabled or not names or not text:
            return text
        codes = ";".join(_CODES[name] for name in names)
        return f"\x1b[{codes}m{text}\x1b[0m"

    @classmethod
    def for_stream(cls, stream: TextIO) -> Style:
        return cls(colour_enabled(stream))


REASON_LABELS = {
    "system_stop": "error",
    "user_stop": "stopped",
    "server_shutdown": "daemon stopped",
    "server_restart": "daemon restarted",
    "storage_error": "paused: the disk refused a write",
    "needs_human_input": "waiting for your answer",
    "needs_human_input_and_subdialogs": "waiting for your answer and subdialogs",
    "declared_by_user": "declared dead",
}
"""Run-state reasons in the product's words (the others read well with ``_`` as a space)."""


def at(agent_id: object) -> str:
    """``@lead``; a dialog whose agent is unknown (a damaged file, an old event) never shows ``@None``."""
    return f"@{agent_id}" if agent_id else "(unknown agent)"


def reason_label(reason: object) -> str:
    text = str(reason)
    return REASON_LABELS.get(text, text.replace("_", " "))


def run_state_label(state: dict[str, Any] | None) -> str:
    """``blocked: waiting for your answer``, ``interrupted: error (detail)``."""
    if not state:
        return "unknown"
    if state.get("kind") == "proceeding" and state.get("reason") == "retrying":
        return f"retrying: {_one_line(str(state.get('detail') or ''), 120)}"  # the provider's retry window waits
    label = str(state.get("kind", "unknown"))
    if state.get("reason"):
        label += ": " + reason_label(state["reason"])
    if state.get("detail"):
        label += f" ({_one_line(str(state['detail']), 80)})"
    return label


def styled_run_state(style: Style, state: dict[str, Any] | None) -> str:
    kind = str((state or {}).get("kind", ""))
    return style(run_state_label(state), RUN_STATE_COLOURS.get(kind, "gray"))


def age(iso: str | None, now: datetime | None = None) -> str:
    """``42s ago``, ``5m ago``, ``3h ago``, ``2d ago``; the date beyond a month."""
    if not iso:
        return "-"
    try:
        then = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    seconds = max(0, int(((now or datetime.now(then.tzinfo)) - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return then.date().isoformat() if unit == "d" and seconds > 30 * 86400 else f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def tokens(count: float) -> str:
    from dominds.driver.usage import format_tokens  # the one way tokens are written (panel and CLI)

    return format_tokens(count)


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _preview(text: str, lines: int) -> str:
    kept = text.rstrip("\n").split("\n")
    if len(kept) <= lines:
        return "\n".join(kept)
    return "\n".join(kept[:lines]) + f"\n… ({len(kept) - lines} more lines)"


class TranscriptWriter:
    """Writes text that may arrive in chunks, keeping a prefix at the start of every line."""

    def __init__(self, out: TextIO, style: Style) -> None:
        self.out = out
        self.style = style
        self.at_line_start = True

    def text(self, text: str, *styles: str, prefix: str = "  ") -> None:
        for piece in text.splitlines(keepends=True):
            if self.at_line_start:
                self.out.write(prefix)
            body = piece.rstrip("\n")
            if body:
                self.out.write(self.style(body, *styles))
            self.at_line_start = piece.endswith("\n")
            if self.at_line_start:
                self.out.write("\n")
        self.out.flush()

    def line(self, text: str = "", *styles: str, prefix: str = "") -> None:
        self.end_line()
        self.text(text + "\n", *styles, prefix=prefix)

    def end_line(self) -> None:
        if not self.at_line_start:
            self.out.write("\n")
            self.at_line_start = True


class EventRenderer:
    """Renders dialog events of one tree: the followed dialog in full, its subdialogs as progress lines."""

    def __init__(self, writer: TranscriptWriter, *, followed: set[str], root_id: str, agents: dict[str, str]) -> None:
        self.w = writer
        self.style = writer.style
        self.followed = followed
        """Dialogs rendered in full (usually one); the rest of the tree shows as progress lines."""
        self.root_id = root_id
        self.agents = dict(agents)
        """selfId → agent id (learned from ``subdialog_created_evt`` as the tree grows)."""
        self._speaker: str | None = None
        """The dialog whose speaker line was printed last (None: print it again before more output)."""
        self._current: str | None = None
        self._progress: dict[str, str] = {}
        self._handlers: dict[str, Callable[[Event], None]] = {
            "course_update": self._course,
            "generating_start_evt": self._generation,
            "end_of_user_saying_evt": self._prompt,
            "thinking_start_evt": lambda e: self._show_speaker(),
            "thinking_chunk_evt": lambda e: self.w.text(str(e.get("chunk", "")), "dim", "italic", prefix="  ┆ "),
            "thinking_finish_evt": self._segment_finish,
            "saying_finish_evt": self._segment_finish,
            "generating_finish_evt": self._generation_finish,
            "markdown_start_evt": lambda e: self._show_speaker(),
            "markdown_chunk_evt": lambda e: self.w.text(str(e.get("chunk", "")), prefix="  "),
            "markdown_finish_evt": lambda e: self.w.end_line(),
            "teammate_call_start_evt": self._call_start,
            "teammate_call_headline_chunk_evt": lambda e: self.w.text(str(e.get("chunk", "")), "cyan", prefix="    "),
            "teammate_call_headline_finish_evt": lambda e: self.w.end_line(),
            "teammate_call_body_chunk_evt": lambda e: self.w.text(str(e.get("chunk", "")), prefix="    │ "),
            "teammate_call_body_finish_evt": lambda e: self.w.end_line(),
            "teammate_call_response_evt": self._call_response,
            "teammate_response_evt": self._teammate_response,
            "func_call_requested_evt": self._func_call,
            "func_result_evt": self._func_result,
            "stream_error_evt": lambda e: self.w.line(f"  ✗ could not answer: {e.get('error')}", "red"),
            "dlg_run_state_marker_evt": self._marker,
            "dlg_run_state_evt": self._run_state,
            "workflow_note_evt": lambda e: self.w.line(_one_line(str(e.get("content", "")), 200), "dim", prefix="  · "),
        }

    def feed(self, event: Event) -> None:
        kind = str(event.get("type", ""))
        dialog = event.get("dialog") or {}
        if dialog.get("rootId") not in (None, self.root_id):
            return  # a broadcast of another tree
        self_id = dialog.get("selfId")
        if kind == "subdialog_created_evt":
            self._subdialog_created(event)
        elif kind == "new_q4h_asked":
            self.question(event.get("question") or {})
        elif kind == "q4h_answered":
            self.w.line(f"  ✓ question {event.get('questionId')} answered", "dim")
        elif kind == "dlg_run_state_evt" and self_id and self_id not in self.followed:
            self._subdialog_progress(self_id, event.get("runState") or {})
        elif self_id in self.followed or self_id is None:
            handler = self._handlers.get(kind)
            if handler is not None:
                if self_id is not None and self_id != self._current:
                    self._current, self._speaker = self_id, None  # another followed dialog speaks now
                handler(event)

    def question(self, question: dict[str, Any]) -> None:
        self.w.line(f"? {at(question.get('agentId'))} asks ({question.get('id')}):", "yellow", "bold")
        self.w.text(f"{question.get('tellaskHead', '')}\n", "yellow", prefix="    ")
        body = str(question.get("bodyContent") or "").strip()
        if body:
            self.w.text(body + "\n", prefix="    ")

    # -- the followed dialog -------------------------------------------------------------------------

    def _agent(self, self_id: str | None) -> str:
        agent = self.agents.get(self_id or "")
        return at(agent) if agent else "a teammate"

    def _show_speaker(self) -> None:
        if self._speaker != self._current:
            self._speaker = self._current
            where = f" ({self._current})" if len(self.followed) > 1 else ""
            self.w.line(f"{self._agent(self._current)}{where}", "bold", "green")

    def _course(self, event: Event) -> None:
        self.w.line(f"── course {event.get('course')} of {event.get('totalCourses')} ──", "dim")

    def _generation(self, event: Event) -> None:
        self._speaker = None

    def _prompt(self, event: Event) -> None:
        origin = str(event.get("origin", "user"))
        content = str(event.get("content", ""))
        if origin == "user":
            self.w.line("you ›", "bold", "blue")
            self.w.text(content.rstrip("\n") + "\n", prefix="  ")
        elif origin == "q4h_answer":
            self.w.line("you (answer) ›", "bold", "blue")
            self.w.text(content.rstrip("\n") + "\n", prefix="  ")
        else:
            label = ORIGIN_LABELS.get(origin, origin.replace("_", " "))
            framed = event.get("assignment") or event.get("askBack")
            if isinstance(framed, dict):  # a tellask framed for the model: shown as its sender wrote it
                label = f"{FRAMED_LABELS.get(origin, label)} from @{framed.get('fromAgentId', '?')}"
                content = f"{framed.get('tellaskHead', '')}{framed.get('tellaskBody', '')}"
            self.w.line(f"[{label}]", "dim")
            self.w.text(_preview(content, PROMPT_PREVIEW_LINES) + "\n", "dim", prefix="  ")
        self._speaker = None

    def _segment_finish(self, event: Event) -> None:
        self.w.end_line()
        why = INCOMPLETE_LABELS.get(str(event.get("incomplete")))
        if why:
            self.w.line(f"  ⋯ [incomplete: {why}]", "yellow")

    def _generation_finish(self, event: Event) -> None:
        note = FINISH_NOTES.get(str(event.get("finishReason")))
        if note:
            self.w.line(f"  ✂ {note}", "yellow")

    def _call_start(self, event: Event) -> None:
        self._show_speaker()
        self.w.end_line()
        valid = event.get("validation", "valid") == "valid"
        self.w.text("⇢ ", "cyan" if valid else "red", "bold", prefix="  ")
        if not valid:
            self.w.text(f"(invalid: {event.get('validation')}) ", "red", prefix="")

    def _call_response(self, event: Event) -> None:
        status = event.get("status")
        if status == "failed":
            self.w.text(f"✗ {event.get('result', '')}\n", "red", prefix="    ")
        elif status == "pending":
            self.w.line(f"    … waiting for {at(event.get('responderId'))}", "dim")

    def _teammate_response(self, event: Event) -> None:
        status = event.get("status", "completed")
        colour = "magenta" if status == "completed" else "red"
        self.w.line(f"  ⇠ {at(event.get('responderId'))} answered ({status}):", colour, "bold")
        response = str(event.get("response") or event.get("result") or "").rstrip("\n")
        self.w.text((response or "(no answer)") + "\n", prefix="    ")

    def _func_call(self, event: Event) -> None:
        self._show_speaker()
        arguments = str(event.get("arguments", ""))
        self.w.line(f"  ⚙ {event.get('funcName')}({_one_line(arguments, 160)})", "yellow")

    def _func_result(self, event: Event) -> None:
        content = _preview(str(event.get("content", "")), RESULT_PREVIEW_LINES)
        styles = ("red",) if event.get("isError") else ("dim",)
        self.w.text(f"{content}\n", *styles, prefix="    ↳ ")

    def _marker(self, event: Event) -> None:
        reason = f" ({reason_label(event.get('reason'))})" if event.get("reason") else ""
        colour = "red" if event.get("kind") == "interrupted" else "dim"
        self.w.line(f"  ── {event.get('kind')}{reason} ──", colour)

    # -- the rest of the tree ------------------------------------------------------------------------

    def _subdialog_created(self, event: Event) -> None:
        sub = (event.get("subDialog") or {}).get("selfId", "?")
        agent = event.get("targetAgentId")
        if agent:
            self.agents[sub] = str(agent)
        how = "resumed" if event.get("reused") else "started"
        kind = CALL_LABELS.get(str(event.get("callType")))
        session = event.get("tellaskSession") or (event.get("subDialog") or {}).get("tellaskSession")
        what = f" ({kind}{' ' + str(session) if session and kind == 'session' else ''})" if kind else ""
        self.w.line(f"  ↪ {at(agent)} {how} in subdialog {sub}{what}", "dim")

    def _run_state(self, event: Event) -> None:
        """A followed dialog's run state: only the provider's retry waits are worth a line (the rest shows
        as what the dialog says and does)."""
        state = event.get("runState") or {}
        if state.get("reason") == "retrying":
            self.w.line(f"  ⟳ {run_state_label(state)}", "yellow")

    def _subdialog_progress(self, self_id: str, state: dict[str, Any]) -> None:
        kind = str(state.get("kind", ""))
        if state.get("reason") == "retrying":
            self.w.line(f"  ⟳ {self._agent(self_id)} ({self_id}): {run_state_label(state)}", "yellow")
            return
        if self._progress.get(self_id) == kind:
            return
        self._progress[self_id] = kind
        who = f"{self._agent(self_id)} ({self_id})"
        if kind == "proceeding":
            self.w.line(f"  … {who} is working", "dim")
        elif kind == "idle":
            self.w.line(f"  ✓ {who} is done", "dim")
        elif kind in ("blocked", "interrupted", "dead", "error"):
            self.w.line(f"  · {who}: {run_state_label(state)}", RUN_STATE_COLOURS.get(kind, "dim"))


class JsonLinesSink:
    """``--json``: every event as one JSON line, for scripts."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out

    def feed(self, event: Event) -> None:
        self.out.write(json.dumps(event, ensure_ascii=False) + "\n")
        self.out.flush()
