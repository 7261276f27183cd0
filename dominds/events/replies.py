"""Events of the global channel, and the replies to a client's requests."""

from __future__ import annotations

from typing import Any, Literal

from dominds.events.common import (
    DialogIdent,
    GlobalEvent,
    Problem,
    Question,
    Reminder,
    Reply,
    TaskdocSection,
    WireModel,
)


class DialogsCreated(GlobalEvent):
    """New root dialogs."""

    type: Literal["dialogs_created"]
    scope: dict[str, Any]
    """`{kind: "root", rootId}`."""
    status: str
    """The status directory (`run`)."""
    createdRootIds: list[str]
    """The new roots."""


class DialogsMoved(GlobalEvent):
    """Roots moved between `run/`, `done/` and `archive/`."""

    type: Literal["dialogs_moved"]
    scope: dict[str, Any]
    """`{kind: "root", rootId}`."""
    fromStatus: str
    """`run`, `done` or `archive`."""
    toStatus: str
    """`run`, `done` or `archive`."""
    movedRootIds: list[str]
    """The moved roots (with their whole trees)."""


class DialogRetitled(GlobalEvent):
    """A dialog got a title (its first message) or was renamed."""

    type: Literal["dialog_retitled"]
    selfId: str
    """The dialog."""
    rootId: str
    """Its root."""
    title: str | None
    """The title now shown (`null`: no title)."""


class TeamConfigUpdated(GlobalEvent):
    """``.minds/`` changed on disk and was reloaded."""

    type: Literal["team_config_updated"]
    path: str
    """`.minds/team.yaml`."""
    exists: bool
    """Whether team.yaml exists."""
    trigger: list[str]
    """The files that changed."""
    configGeneration: int
    """Increases at every reload."""


class ProblemsSnapshot(WireModel):
    """Every configuration and provider problem (a global event, and the reply to ``get_problems``)."""

    type: Literal["problems_snapshot"]
    problems: list[Problem]
    """Every problem; a `config_fallback` one says a file's last good version is in use."""
    seq: int | None = None
    epoch: str | None = None
    timestamp: str | None = None
    requestId: str | int | None = None


class TotTree(GlobalEvent):
    """A Tree-of-Thoughts run changed (for its page)."""

    type: Literal["tot_tree_evt"]
    runId: str
    """The run's task id."""
    rootId: str
    """The run's root dialog."""
    event: str
    """What changed (a node added, scored, …)."""
    data: dict[str, Any]
    """The change, as the Tree-of-Thoughts page reads it."""


class Welcome(Reply):
    """First message on every connection."""

    type: Literal["welcome"]
    message: str
    """`Connected to Dominds`."""
    server: str
    """`dominds`."""
    version: str
    """The daemon's version."""
    protocol: int
    """The wire protocol's version: `2` since replays are paged (docs/protocol.md §4 Paging)."""
    serverWorkLanguage: str
    """The language agents work in (`en`)."""
    supportedLanguageCodes: list[str]
    """UI languages (`en`, `zh`)."""
    epoch: str
    """This daemon run."""
    seq: int
    """The global channel's last seq."""
    rtws: str
    """The workspace's absolute path."""


class DialogReady(Reply):
    """The snapshot of a dialog (``display_dialog``, ``create_dialog``); ``eventCount`` events follow."""

    type: Literal["dialog_ready"]
    dialog: DialogIdent
    """The dialog shown."""
    title: str | None
    """Its title (`null`: none yet)."""
    agentId: str
    """The member it runs as."""
    taskDocPath: str
    """Its tree's Taskdoc."""
    status: Literal["run", "done", "archive"]
    """The status directory its tree lives in."""
    isRoot: bool
    """A root (or a subdialog)."""
    conductor: str | None
    """A workflow run's workflow (`tot`, `debate`, …); the workflow drives it."""
    currentCourse: int
    """The course being written."""
    totalCourses: int
    """How many courses it has."""
    runState: dict[str, Any]
    """Its run state as of `seq`."""
    generating: bool
    """A generation is open."""
    q4h: list[Question]
    """Its pending questions."""
    queuedPrompts: list[dict[str, Any]]
    """Messages and answers queued and not read yet (`prompt_queued_evt` fields)."""
    reminders: list[Reminder]
    """Its reminders."""
    supdialogId: str | None = None
    """A subdialog's caller."""
    tellaskSession: str | None = None
    """The session (`!tellaskSession`) of a subdialog started with one."""
    assignmentFromSup: dict[str, Any] | None = None
    """A subdialog's assignment as `dialog.yaml` keeps it (`tellaskHead`, `tellaskBody`, `originMemberId`, `callerDialogId`, `callId`, `callType`, …), with `bodyHtml`: the body as sanitised HTML (the header shows it)."""
    loadError: str | None = None
    """Why the dialog cannot be used (a corrupt file, a refused write)."""
    notices: list[str] | None = None
    """Things recovery wants the user to know."""
    forkedFrom: dict[str, Any] | None = None
    """A root made by forking another at a generation: `{rootId, course, genseq, edited}` (docs/fork.md)."""
    epoch: str
    """This daemon run."""
    seq: int
    """The dialog's last seq: the snapshot is as of it."""
    mode: Literal["replay", "resume"]
    """`replay`: the course rebuilt from the files; `resume`: only the missed events follow."""
    eventCount: int
    """How many events follow."""
    following: list[str]
    """Every dialog the socket follows now."""


class Ack(Reply):
    """A request was done; the fields depend on the request."""

    type: Literal["ack"]
    requestType: str
    """The request's `type`."""
    dialog: DialogIdent | None = None
    """The dialog the request was about."""
    msgId: str | None = None
    """A queued or cancelled message (`drive_dlg_by_user_msg`, `cancel_queued_msg`)."""
    questionId: str | None = None
    """The answered question (`drive_dialog_by_user_answer`)."""
    stopped: bool | int | None = None
    """`interrupt_dialog`: whether a drive was stopped (the dialog's, or one of a subdialog working for it); `emergency_stop`: how many."""
    resumed: bool | int | None = None
    """`resume_dialog`: whether it was resumed (`false`: it was already running); `resume_all`: how many."""
    following: list[str] | None = None
    """`unfollow_dialog`: what the socket follows now."""
    epoch: str | None = None
    """`resume_global`: this daemon run."""
    seq: int | None = None
    """`resume_global`: the global channel's last seq."""
    title: str | None = None
    """`set_dialog_title`: the title now shown."""


class ErrorReply(Reply):
    """A request (or a frame) was refused; the connection stays open."""

    type: Literal["error"]
    message: str
    """What was refused and why, in one sentence."""
    requestType: str | None = None
    """The request's `type`, when it had one."""


class QuestionsState(Reply):
    """Reply to `get_q4h_state`."""

    type: Literal["q4h_state_response"]
    questions: list[Question]
    """Every pending question of the workspace."""


class UiLanguageSet(Reply):
    """Reply to `set_ui_language`."""

    type: Literal["ui_language_set"]
    uiLanguage: Literal["en", "zh"]
    """The socket's language now."""


class GlobalReset(Reply):
    """``resume_global`` could not be served: re-read the lists."""

    type: Literal["global_reset"]
    epoch: str
    """This daemon run."""
    seq: int
    """The global channel's last seq."""


class TaskdocContent(Reply):
    """The Taskdoc as people read it (reply to ``get_taskdoc``; pushed when its files change)."""

    type: Literal["taskdoc_content"]
    dialog: DialogIdent | None = None
    """The dialog it was asked for (absent on a push)."""
    taskDocPath: str
    """The package (rtws-relative)."""
    exists: bool
    """Whether the package exists yet."""
    fingerprint: str
    """Changes when any of its files changes."""
    sections: list[TaskdocSection]
    """Each section once, in reading order."""
    moreSections: list[str]
    """Extra sections beyond the first 100, by file."""
    notes: list[dict[str, Any]]
    """Layout problems of the package (`{kind, where, detail}`)."""
