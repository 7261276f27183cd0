"""Build what the model sees: the system prompt and the ordered context messages (reference §3.3).

Order: system prompt → memories → effective Taskdoc (a user environment message) → course messages →
reminders and the language guide inserted just before the last user message.
"""

from __future__ import annotations

from pathlib import Path

from dominds.dialog.model import Dialog
from dominds.driver.config import Config, ConfigCache
from dominds.driver.messages import dialog_context_messages
from dominds.llm.base import ChatMessage, SharedRun
from dominds.taskdoc import TaskdocError, load_taskdoc
from dominds.taskdoc_discovery import taskdoc_fingerprint
from dominds.taskdoc_render import render_effective_taskdoc
from dominds.team import Member

TELLASK_GRAMMAR = """\
## Talking to teammates (Tellask)
Write a line that starts at column 0 with `!?@<member>` to give a teammate a task; following lines that
start with `!?` are its body. The block ends at the first line without `!?`. Examples:

!?@researcher Find three sources on X
!?Return a bullet list with links.

- `!?@<member>` — a fresh one-off task (a new subdialog each time).
- `!?@<member> !tellaskSession <slug>` in the headline — a resumable session: the same subdialog
  keeps its context across tellasks with the same slug.
- `!?@human <question>` — ask the human; you wait until they answer.
- `!?@self <question>` — think about a sub-question with a fresh mind (tool-less helpers).
- In a subdialog, `!?@tellasker <question>` asks back whoever gave you the task.
Several tellasks in one message run in parallel; their answers arrive as messages. A subdialog's final
message is its answer. Tools are called with function calling, never with `!?`.
"""

TELLASK_TOOLS = """\
## Talking to teammates (Tellask function tools)
You delegate with function tools; each call's result is the answer, given to you when it arrives:
- `tellaskSessionless {targetAgentId, tellaskContent}` — a fresh one-off task (a new subdialog each time).
- `tellask {targetAgentId, sessionSlug, tellaskContent}` — a resumable session: the same subdialog keeps
  its context across calls with the same slug.
- `askHuman {tellaskContent}` — ask the human; you wait until they answer.
- `freshBootsReasoning {tellaskContent}` — think about a sub-question with a fresh mind.
- In a subdialog, `tellaskBack {tellaskContent}` asks back whoever gave you the task.
Several calls in one reply run in parallel. A subdialog's final message is its answer.
"""
TELLASK_TOOLS_ONLY = "Lines starting with `!?@` in your messages are plain text here: they call no one; use the tools.\n"


def tellask_teaching(form: str) -> str:
    """What the system prompt says about delegating, by the member's ``tellask`` form."""
    if form == "tools":
        return TELLASK_TOOLS + TELLASK_TOOLS_ONLY
    if form == "both":
        return TELLASK_GRAMMAR + "\n" + TELLASK_TOOLS
    return TELLASK_GRAMMAR


def system_prompt(cache: ConfigCache, config: Config, dialog: Dialog, member: Member, tool_names: list[str]) -> str:
    parts = [f"# You are @{member.id} ({member.name}), a member of a team of agents working with a human."]
    persona = cache.persona(member.id)
    if persona:
        parts.append(f"## Persona\n{persona.strip()}")
    env = cache.text(cache.rtws.minds_dir / "env.md")
    if env:
        parts.append(f"## Runtime environment\n{env.strip()}")
    directory = []
    for other in config.team.visible_members():
        gofor = other.gofor if isinstance(other.gofor, tuple) else tuple(f"{k}: {v}" for k, v in other.gofor.items())
        what = "; ".join(gofor) if gofor else ""
        me = " (you)" if other.id == member.id else ""
        directory.append(f"- @{other.id}{me}: {other.name}{' — ' + what if what else ''}")
    parts.append("## Team directory\n" + "\n".join(directory))
    parts.append(tellask_teaching(member.tellask))
    if dialog.meta.fbr:
        parts.append(
            "## This is a Fresh Boots Reasoning subdialog\nYou asked yourself this with a fresh mind: think it "
            "through on its own, use your tools and teammates if it helps, then answer with your conclusion."
        )
    if tool_names:
        parts.append("## Tools\nFunction tools available: " + ", ".join(tool_names) + ".")
    if not dialog.is_root:
        parts.append(
            "## Your position\nYou work in a subdialog on a task given by a teammate. Your final message is "
            "your answer to them; make it complete and self-contained."
        )
    return "\n\n".join(parts)


def memory_messages(cache: ConfigCache, member_id: str) -> list[ChatMessage]:
    out = []
    memory_root = cache.rtws.minds_dir / "memory"
    for label, directory in (("team shared", memory_root / "team_shared"), ("personal", memory_root / "individual" / member_id)):
        for path in sorted(_markdown_files(directory)):
            text = cache.text(path)
            if text and text.strip():
                rel = path.relative_to(memory_root).as_posix()
                out.append(cache.message("assistant", f"[{label} memory: {rel}]\n{text.strip()}"))
    return out


def _markdown_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return [p for p in directory.rglob("*.md") if p.is_file()]


def taskdoc_message(cache: ConfigCache, dialog: Dialog) -> ChatMessage | None:
    """The effective Taskdoc, re-rendered only when the package changed on disk (a hand edit shows at once)."""
    path = dialog.meta.task_doc_path
    if not path:
        return None
    fingerprint = taskdoc_fingerprint(cache.rtws.root, path)
    cached = cache.rendered_taskdoc(path, fingerprint)
    if cached is not None:
        return cache.message("user", cached)
    try:
        taskdoc = load_taskdoc(cache.rtws.root, path)
    except TaskdocError as exc:
        return cache.message("user", f"[Taskdoc unavailable: {exc}]")
    text = render_effective_taskdoc(taskdoc)
    cache.keep_rendered_taskdoc(path, fingerprint, text)
    return cache.message("user", text)


def reminders_text(dialog: Dialog) -> str | None:
    if not dialog.reminders:
        return None
    lines = [f"reminder {r.id}: {r.content}" for r in dialog.reminders]
    return "[Your reminders (manage them with add/update/delete_reminder, naming a reminder by its id)]\n" + "\n".join(
        lines
    )


def build_messages(cache: ConfigCache, dialog: Dialog, member: Member) -> tuple[list[ChatMessage], SharedRun]:
    """The context messages of the dialog's next generation, and what is known of them (``SharedRun``)."""
    head = memory_messages(cache, member.id)
    taskdoc = taskdoc_message(cache, dialog)
    if taskdoc is not None:
        head.append(taskdoc)
    course, shared = dialog_context_messages(dialog)  # a new list, ours to change
    reminder = reminders_text(dialog)
    if reminder:
        # Just before the last user message, so the model reads them right before its turn. They move
        # (and change) between generations: volatile, so no provider caches a prefix up to them.
        last_user = next((i for i in range(len(course) - 1, -1, -1) if course[i].role == "user"), None)
        insert_at = last_user if last_user is not None else len(course)
        course.insert(insert_at, ChatMessage(role="user", content=reminder, volatile=True))
        shared = shared.before(insert_at)
    # The memory and Taskdoc messages go in front of the course's list: a move of its pointers, where
    # extending a list with the course was one more pass over every message of a long dialog.
    course[:0] = head
    return course, SharedRun(shared.run, len(head), shared.count)
