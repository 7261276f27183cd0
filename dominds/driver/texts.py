"""Inter-dialog message texts (reference §2.5). Headline and body are used raw, so quoting keeps their newlines."""

from __future__ import annotations

import re

from dominds.tellask_events import tellask_call_id
from dominds.tellask_headline import validate_headline_start


def quote(text: str) -> str:
    """Prefix every line with ``> `` (a trailing newline yields a trailing ``> `` line, as the reference does)."""
    return "\n".join(f"> {line}" for line in text.split("\n"))


def assignment_text(to: str, sender: str, headline: str, body: str, collective: list[str] | None = None) -> str:
    if collective and len(collective) > 1:
        targets = ", ".join(f"@{t}" for t in collective)
        greeting = f"Hi @{to}, this is @{sender} speaking to {targets} (a collective assignment; each answers on its own), now:"
    else:
        greeting = f"Hi @{to}, this is @{sender} speaking, now:"
    quoted_body = f"{quote(body)}\n" if body else ""
    return f"{greeting}\n\n{quote(headline)}\n{quoted_body}"


def fbr_assignment_text(sender: str, headline: str, body: str) -> str:
    content = body or headline
    return (
        f"FBR request from @{sender} (Fresh Boots Reasoning): think about the following on your own, with a fresh "
        "mind, and answer with your conclusion. You have your usual tools and teammates; you may ask back with "
        f"`!?@tellasker` if something essential is unclear.\n\n{quote(content)}\n"
    )


def response_text(requester: str, responder: str, response: str, headline: str, *, fbr: bool = False) -> str:
    if fbr:
        return f"[FBR @self sideline response]\n\n{response}"
    return (
        f"Hi @{requester}, @{responder} provided response:\n\n{quote(response.rstrip(chr(10)))}\n\n"
        f"regarding the original tellask:\n\n{quote(headline)}\n"
    )


def failed_response_text(requester: str, responder: str, reason: str, headline: str) -> str:
    return (
        f"Hi @{requester}, the tellask to @{responder} FAILED: {reason}\n\n"
        f"regarding the original tellask:\n\n{quote(headline)}\n"
    )


ASK_BACK_TO_THE_DEAD = (
    "the dialog that gave you your task was declared dead by the user: nobody will answer an ask-back, and your "
    "answer will not be read. Stop here."
)


def declared_dead_reason(note: str) -> str:
    """Why a call to a subdialog the user declared dead failed (its caller's failed reply says it)."""
    return "the subdialog was declared dead by the user" + (f" (note: {note})" if note else "")


def tellask_back_text(sup: str, sub: str, assignment_head: str, headline: str, body: str) -> str:
    quoted_body = f"{quote(body)}\n" if body else ""
    return (
        f"Hi @{sup}, while working on the following original task:\n\n{quote(assignment_head)}\n\n"
        f"`@{sub}` TellaskBack:\n\n{quote(headline)}\n{quoted_body}"
    )


_FRAMED_TELLASK_BACK = re.compile(
    r"Hi @[^\n]*, while working on the following original task:\n\n(?:> [^\n]*\n)+\n"
    r"`@(?P<asker>[^`\n]+)` TellaskBack:\n\n(?P<quoted>(?:> [^\n]*\n)+)"
)
MAX_BLOCK_INDEX = 256
"""Block indexes tried when matching a call id (the index of the ask-back among its saying's blocks)."""


def words_of_tellask_back_text(content: str, call_id: str) -> tuple[str, str, str] | None:
    """``(asker agent, headline, body)`` read back from a ``tellask_back_text`` and checked against the
    call id, or None when ``content`` is not such a text or its words do not hash to ``call_id``.

    For course records written before prompts kept the ask-back as written. The framing quotes the
    headline and the body whole: a headline holds no blank line and ends with a newline when a body
    follows, so its end is the text's first blank line. The parser's call id (the first part of the
    runtime's) is a hash of exactly that headline and body, so a match says they are the asker's words.
    """
    framed = _FRAMED_TELLASK_BACK.fullmatch(content)
    if framed is None:
        return None
    text = "\n".join(line[2:] for line in framed["quoted"][:-1].split("\n"))
    cut = text.find("\n\n")
    headline, body = (text[: cut + 1], text[cut + 2 :]) if cut >= 0 else (text, "")
    first_mention, _ = validate_headline_start(headline)
    wanted = call_id.split(".", 1)[0]
    if any(tellask_call_id(first_mention, headline, body, index) == wanted for index in range(MAX_BLOCK_INDEX)):
        return framed["asker"], headline, body
    return None


def dominds_note(message: str) -> str:
    return f"[Dominds note] {message}"


def new_course_prompt(
    course: int, assignment: str | None, *, reason: str = "clear_mind", carried: str | None = None, loop_note: str | None = None
) -> str:
    """The first prompt of a new course, saying why it began (``reason``): the agent's ``clear_mind``; the
    runtime's own after context health stayed critical (``context_health``); or the runtime's own because
    the previous course no longer fit the model's context window (``context_overflow``: ``carried`` is
    then the message the failed generation was answering). ``loop_note``: the loop guard's notice to an agent
    clearing its mind in a loop (``loop_guard.idle_clears_notice``)."""
    if reason == "context_overflow":
        text = (
            f"This is course #{course} of this dialog. The previous course grew longer than the model's context "
            "window, so the runtime started this one: your earlier messages and tool results are no longer in view "
            "(the last of them may have been too large to read whole; read less at a time)."
        )
    elif reason == "context_health":
        text = (
            f"This is course #{course} of this dialog. Your context stayed past its critical level (close to the "
            "model's context window) for several generations, so the runtime started this course before it "
            "overflowed: your earlier messages and tool results are no longer in view."
        )
    else:
        text = f"This is course #{course} of this dialog: you called clear_mind, so your previous messages were cleared."
    text += " Your reminders and the Taskdoc are still with you; re-read them and continue the work."
    if loop_note:
        text += f"\n\n{loop_note}"
    if carried:
        text += f"\n\nThe message you were answering when the context overflowed:\n\n{carried}"
    if assignment:
        return f"{assignment}\n---\n{text}"
    return text


INTERRUPTED_TOOL_RESULT = (
    "INTERRUPTED: the daemon stopped while this tool call was running. It may or may not have taken "
    "effect. Check its effect before repeating it."
)

def stopped_tool_result(reason: str, started: bool) -> str:
    """The result of a tool call cancelled by a stop of its dialog (``reason``: user_stop, server_shutdown, …)."""
    if not started:
        return f"INTERRUPTED ({reason}): the dialog was stopped before this tool call started; it did NOT run."
    return (
        f"INTERRUPTED ({reason}): the dialog was stopped while this tool call was running, and the call was "
        "cancelled. It may or may not have taken effect. Check its effect before repeating it."
    )


INTERRUPTED_TELLASK = (
    "The daemon stopped before this tellask was dispatched; it was NOT delivered. Repeat it if it is still needed."
)


def cut_reply_note(finish_reason: str | None) -> str:
    """Told to the model after a reply of its that did not reach its end (its text is kept as streamed)."""
    if finish_reason == "stopped":
        why = "the user stopped it before it was finished"
    elif finish_reason == "broken":
        why = "the connection to the model broke before it was finished"
    elif finish_reason == "context_window":
        why = "the context window filled up"
    else:
        why = "it reached the output limit (max_tokens)"
    return dominds_note(
        f"Your previous reply was cut off: {why}. The user saw it up to that point. If the work is unfinished, "
        "continue from where it stopped without repeating what is already written; write long results in "
        "smaller parts."
    )
