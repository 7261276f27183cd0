"""How a followed dialog tree came to rest, said for a person: what happened and the one next step.

``run``, ``resume`` and every ``--follow`` end with ``finish``: ✓ when the dialog answered, ? with the
command to answer a question, ✗ with what stopped it (the whole error, never cut) and the step that
helps. That step depends on where the dialog ran: driven in this process, a missing API key is
fixed in this shell; on a daemon, in the daemon's.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from dominds.cli.common import command_name

EXIT_QUESTION = 3
"""Exit status when the dialog waits for an answer (`dominds answer`)."""
MISSING_KEY = re.compile(r"provider '([^']+)' needs an API key but (\w+) is not set")


@dataclass
class Outcome:
    kind: str
    """idle, question, interrupted, dead, error, terminal, waiting or closed."""
    detail: str = ""
    questions: list[dict[str, Any]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    """The root's run state (reason, detail) when it stopped."""
    only_question: bool = False
    """The question is the only one pending in the workspace: `dominds answer` needs no id."""


@dataclass(frozen=True)
class Where:
    """The followed tree and who drove it."""

    root_id: str
    in_process: bool
    """Driven by this command (no daemon): fixes go into this shell."""


def finish(outcome: Outcome, json_mode: bool, where: Where) -> int:
    """Print how the followed tree came to rest; the exit status."""
    from dominds.cli.render import Style, at

    code = {"idle": 0, "waiting": 0, "question": EXIT_QUESTION}.get(outcome.kind, 1)
    if json_mode:
        print(
            json.dumps(
                {
                    "type": "outcome",
                    "outcome": outcome.kind,
                    "rootId": where.root_id,
                    "detail": outcome.detail,
                    "runState": outcome.state or None,
                    "questions": outcome.questions,
                }
            )
        )
        return code
    style = Style.for_stream(sys.stdout)
    me = command_name()
    if outcome.kind == "idle":
        print(style(f"✓ idle: the dialog has answered (dialog {where.root_id})", "green"))
        print(style(f'  go on: {me} tell {where.root_id} "…" --follow', "dim"))
    elif outcome.kind == "question":
        print(style("? waiting for your answer:", "yellow", "bold"))
        for question in outcome.questions:
            print(f"  {question.get('tellaskHead', '').strip()}  ({at(question.get('agentId'))}, dialog {question.get('selfId')})")
            target = "" if outcome.only_question else f"{question['id']} "
            print(style(f'  {me} answer {target}"your answer"', "bold"))
    elif outcome.kind == "waiting":
        print(style(f"… {outcome.detail}", "yellow"))
    else:
        what, step = explain_stop(outcome, where)
        print(style(f"✗ {what}", "red"))
        if step:
            print(f"  next: {step}")
    return code


def explain_stop(outcome: Outcome, where: Where) -> tuple[str, str]:
    """(what stopped the dialog, the one next step) for an outcome that is not a rest."""
    me = command_name()
    dialog = where.root_id
    state = outcome.state
    reason = str(state.get("reason") or "")
    detail = str(state.get("detail") or outcome.detail or "")
    resume = f"`{me} resume {dialog}{' --follow' if where.in_process else ''}`"
    if outcome.kind == "closed":
        return detail or "lost the connection to the daemon", f"`{me} show {dialog} --follow` picks it up again"
    if outcome.kind == "dead":
        return f"dialog {dialog} was declared dead{': ' + detail if detail else ''}", ""
    if outcome.kind == "error":
        return f"dialog {dialog} cannot be loaded: {detail}", f"repair or move its files (`{me} status` names the file)"
    if outcome.kind == "terminal":
        return f"dialog {dialog} has ended{': ' + detail if detail else ''}", f"start a new one: `{me} run \"…\"`"
    if reason in ("user_stop", "emergency_stop"):
        return f"dialog {dialog} was stopped ({reason.replace('_', ' ')})", f"{resume} goes on"
    if reason in ("server_shutdown", "server_restart", "process_gone"):
        return f"dialog {dialog} was interrupted: the daemon stopped", f"`{me} serve` resumes it"
    missing = MISSING_KEY.search(detail)
    if missing:
        provider, env_var = missing.groups()
        what = f"dialog {dialog} stopped: provider {provider!r} needs an API key, and {env_var} is not set"
        if where.in_process:
            return what, f"export {env_var}=<your key> in this shell, then {resume}"
        return what, f"export {env_var}=<your key> in the shell of `{me} serve`, restart it, then {resume}"
    return f"dialog {dialog} stopped: {detail or reason.replace('_', ' ') or outcome.kind}", f"fix that, then {resume}"
