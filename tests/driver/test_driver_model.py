"""Model-based test of the driver (issue 14): random tellasks, questions, interjections and crashes.

A hypothesis ``RuleBasedStateMachine`` drives a real engine on a scripted team. Every request carries a
unique token ``tN``; the scripted agents echo it, so each reply says which request it answers. Rules:

- ``delegate``: the user asks the lead something that makes it tellask (TYPE C, TYPE B on a shared
  session, ``@self``, or a collective call), optionally with an ask-back from the callee, which the lead
  answers directly or only after tellasking the researcher first (the shape of issue 14 item 1);
- ``delegate_deep``: a callee that calls a tool (also an ``@self`` one), or that tellasks the researcher,
  who asks *it* back while it waits (nested ask-back);
- ``clear_mind``: the lead calls ``clear_mind`` (a new course) while other work may be running;
- ``ask_human``: the lead asks the human a question; ``answer``: the human answers one;
- ``interject``: a user message arrives while other work may be running;
- ``heavy``: the lead answers with a prompt at the caution level of its context (issue 32), so the
  runtime tells it so in a notice; ``critical``: at the critical level, so the countdown to the runtime's
  new course goes one step on (five in a row start it);
- ``settle``: run until nothing can move;
- ``crash``: copy the workspace at an arbitrary event-loop step (exactly what a kill would leave: every
  write is atomic or an append), drop the engine, recover a new one from the copy;
- ``stop``: at an arbitrary event-loop step, Stop a dialog (the root or a subdialog, driving or not), wait
  for its drive to end, check nothing of it writes afterwards, then resume what was interrupted (issue 30);
- ``shutdown``: at an arbitrary event-loop step, close the engine gracefully (every drive's scope
  cancelled, final records written, the lock released last), check nothing writes afterwards, and start
  a new engine on the same files;
- ``ask_waiting_root``: a user message to the root while it waits on its subdialogs (it answers at once);
- ``loop``: the lead calls the same tool with the same arguments after every result, getting the same
  result, and ignores the runtime's notice (issue 32's loop guards).

Invariants, checked at rest after every step:
1. every call site has exactly one reply, and a completed reply answers *that* call (same token) and is
   a final saying, never an intermediate tellask line;
2. an ask-back's answer is the answer to that ask-back (same token);
3. no dialog is stuck: each is idle or waits on an open question (directly or through its callees);
4. one live subdialog per registry key;
5. every acknowledged user message is recorded exactly once;
6. every context-pressure notice directly follows the generation it measures, which was at caution or
   critical, and caution notices are at least ``CAUTION_EVERY`` generations apart;
7. every generation and every tool call is closed in the course; an interrupted tool call belongs to an
   interrupted generation (never ``ok``); nothing of a stopped generation is recorded after its
   ``interrupted`` marker;
8. a root waiting only on its subdialogs has no user message left queued (a user message drives it);
9. loop guards: the generation that repeats the same tool calls with the same results a third time in a
   row (no prompt from someone in between) is followed by a loop notice, and only such a generation;
   one that does it a sixth time (or more) stops the dialog right after it (an ``interrupted`` marker
   before any next generation), whose run state then says why; a dialog stopped so is the only one
   at rest that is not idle or blocked (nothing is stuck: a user message drives it again);
10. the critical countdown goes on from the course's previous measured generation, across crashes and
   restarts too (it used to live in the engine's memory): 4 after a generation below critical, one less
   after a critical one, never below 0.
CI runs a few dozen examples; ``bin/fuzz`` runs many more (DOMINDS_FUZZ_EXAMPLES).
"""

from __future__ import annotations

import asyncio
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from fuzzing import examples
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from workspace_kit import write_workspace

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.store.course_records import (
    FuncCallRecord,
    FuncResultRecord,
    GenFinishRecord,
    GenStartRecord,
    HumanTextRecord,
    RunMarkerRecord,
    SubdialogCreatedRecord,
    TeammateCallResultRecord,
    TeammateResponseRecord,
    TellaskCallRecord,
)
from dominds.store.dialog_store import DialogStore

TOKEN = re.compile(r"\bt\d+\b")
KINDS = ["fresh", "session", "self", "collective"]
ASK_BACKS = ["", "-ask", "-via"]
"""No ask-back; an ask-back the lead answers at once; one it answers after tellasking the researcher."""
DEEP_KINDS = ["tool", "selftool", "nested"]


def _responses() -> list[dict[str, Any]]:
    """Agents that echo the token of what they were asked (regex entries echo ``{1}``), first match wins."""
    t = r"(t\d+)"
    lead = [
        (rf"^do fresh-via {t}$", "!?@coder askvia-task {1}\n"),
        (rf"^do session-via {t}$", "!?@coder !tellaskSession shared askvia-task {1}\n"),
        (rf"^do self-via {t}$", "!?@self task {1}\n"),
        (rf"^do collective-via {t}$", "!?@coder @researcher askvia-task {1}\n"),
        (rf"^do tool {t}$", "!?@coder tool-task {1}\n"),
        (rf"^do selftool {t}$", "!?@self selftool-task {1}\n"),
        (rf"^do nested {t}$", "!?@coder nest-task {1}\n"),
        (rf"askvia {t}\?", "Checking first.\n!?@researcher lookup {1}\n"),
        (rf"found {t}", "reply {1}"),
        (rf"^do fresh {t}$", "!?@coder task {1}\n"),
        (rf"^do fresh-ask {t}$", "!?@coder askback-task {1}\n"),
        (rf"^do session {t}$", "!?@coder !tellaskSession shared task {1}\n"),
        (rf"^do session-ask {t}$", "!?@coder !tellaskSession shared askback-task {1}\n"),
        (rf"^do self {t}$", "!?@self task {1}\n"),
        (rf"^do self-ask {t}$", "!?@self task {1}\n"),
        (rf"^do collective {t}$", "!?@coder @researcher task {1}\n"),
        (rf"^do collective-ask {t}$", "!?@coder @researcher askback-task {1}\n"),
        (rf"^do human {t}$", "!?@human question {1}\n"),
        (rf"ask {t}\?", "reply {1}"),
        (rf"answer {t}", "done {1}"),
        (rf"^human {t}$", "heard {1}"),
        (rf"^note {t}$", "noted {1}"),
        (rf"task {t}", "answer {1}"),
    ]
    coder = [
        (rf"why {t}\?", "because {1}"),
        (rf"reply {t}", "answer {1}"),
        (rf"askback-task {t}", "!?@tellasker ask {1}?\n"),
        (rf"askvia-task {t}", "!?@tellasker askvia {1}?\n"),
        (rf"nest-task {t}", "!?@researcher deep-task {1}\n"),
        (rf"task {t}", "answer {1}"),
    ]
    researcher = [
        (rf"because {t}", "answer {1}"),
        (rf"lookup {t}", "found {1}"),
        (rf"deep-task {t}", "!?@tellasker why {1}?\n"),
        *coder[1:],
    ]
    tool_call = [{"saying": "Working on it."}, {"func_call": {"name": "add_reminder", "arguments": {"content": "step"}}}]
    entries: list[dict[str, Any]] = [
        {"agent": "coder", "regex": r"tool-task (t\d+)", "stream": tool_call},
        {"agent": "lead", "regex": r"selftool-task (t\d+)", "stream": tool_call},  # the lead's @self subdialog
    ]
    # The same call, the same result ("has no section"), again after the result and after the loop notice.
    loop_call = [{"func_call": {"name": "recall_taskdoc", "arguments": {"category": "notes", "selector": "plan"}}}]
    entries += [
        {"agent": "lead", "regex": r"^do loop (t\d+)$", "stream": loop_call},
        {"agent": "lead", "role": "tool", "regex": r"has no section", "stream": loop_call},
        {"agent": "lead", "regex": r"^\[Loop\] You called", "stream": loop_call},
    ]
    heavy = {"input_tokens": 120_000, "output_tokens": 5}  # 60 % of the test model's window: caution
    entries.append({"agent": "lead", "regex": r"^do heavy (t\d+)$", "response": "heavy {1}", "usage": heavy})
    critical = {"input_tokens": 190_000, "output_tokens": 5}  # 95 %: critical
    entries.append({"agent": "lead", "regex": r"^do critical (t\d+)$", "response": "critical {1}", "usage": critical})
    entries.append({"agent": "lead", "regex": r"^do clear (t\d+)$", "stream": [
        {"saying": "Starting afresh."},
        {"func_call": {"name": "clear_mind", "arguments": {"reminder_content": "carry on"}}},
    ]})  # fmt: skip
    entries += [{"agent": "lead", "regex": r, "response": a} for r, a in lead]
    entries += [{"agent": "coder", "regex": r, "response": a} for r, a in coder]
    entries += [{"agent": "researcher", "regex": r, "response": a} for r, a in researcher]
    entries.append({"role": "tool", "regex": r".", "response": "noted"})  # after a tool's result
    # Whatever else (a note that a call was not delivered, an interrupted tool, a re-assignment): go on.
    entries += [{"role": "assistant", "regex": r".", "response": "noted"}, {"regex": r".", "response": "noted"}]
    return entries


def _as_tool_calls(text: str) -> list[dict[str, Any]]:
    """The stream a ``tellask: tools`` agent gives for a text-form response: its prose, then each block as
    the Tellask function call it stands for (a collective block: one call per member)."""
    from dominds.tellask import parse_segments
    from dominds.tellask_events import TellaskCall

    stream: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for seg in parse_segments(text):
        if not isinstance(seg, TellaskCall):
            if seg.text.strip():
                stream.append({"saying": seg.text})
            continue
        words = seg.headline.split()
        content = " ".join(w for w in words if not w.startswith("@") and w != "!tellaskSession" and w != seg.tellask_session)
        first = seg.first_mention
        if first == "human":
            calls.append({"name": "askHuman", "arguments": {"tellaskContent": content}})
        elif first == "tellasker":
            calls.append({"name": "tellaskBack", "arguments": {"tellaskContent": content}})
        elif first == "self":
            calls.append({"name": "freshBootsReasoning", "arguments": {"tellaskContent": content}})
        else:
            for member in seg.mentions:
                arguments = {"targetAgentId": member, "tellaskContent": content}
                if seg.tellask_session:
                    calls.append({"name": "tellask", "arguments": {**arguments, "sessionSlug": seg.tellask_session}})
                else:
                    calls.append({"name": "tellaskSessionless", "arguments": arguments})
    return stream + [{"func_call": call} for call in calls]


def _tool_form_responses() -> list[dict[str, Any]]:
    """The same agents in ``tellask: tools`` form: blocks become Tellask tool calls, and what answers a
    user prompt also answers a tool result (a reply, an answer or a note is the tool call's result)."""
    out: list[dict[str, Any]] = []
    for entry in _responses():
        if "!?@" in str(entry.get("response", "")):
            entry = {k: v for k, v in entry.items() if k != "response"} | {"stream": _as_tool_calls(entry["response"])}
        out.append(entry)
        if "role" not in entry:
            out.append({**entry, "role": "tool"})
    return out


class DriverModel(RuleBasedStateMachine):
    tellask_form = "text"

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.base = Path(tempfile.mkdtemp(prefix="dominds-model-"))
        self.generation = 0
        self.rtws = self._workspace()
        self.engine = self._start(self.rtws)
        self.root = self.engine.create_dialog("lead", "tasks/t.tsk")
        self.root_id = self.root.root_id
        self.counter = 0
        self.acked: list[str] = []

    # -- plumbing ------------------------------------------------------------------------------

    def _workspace(self) -> Rtws:
        rtws = write_workspace(self.base / f"ws{self.generation}", [])
        tools = self.tellask_form == "tools"
        (rtws.minds_dir / "scripted" / "test.yaml").write_text(_yaml(_tool_form_responses() if tools else _responses()))
        team = rtws.team_yaml.read_text().replace("fbr_effort: 2", "fbr_effort: 1")
        rtws.team_yaml.write_text(team.replace("member_defaults:\n", f"member_defaults:\n  tellask: {self.tellask_form}\n"))
        return rtws

    def _start(self, rtws: Rtws) -> Engine:
        engine = Engine(rtws)
        self.loop.run_until_complete(engine.start())
        return engine

    def _settle(self) -> None:
        self.loop.run_until_complete(self.engine.wait_idle(timeout=60))

    def _token(self) -> str:
        self.counter += 1
        return f"t{self.counter}"

    def _submit(self, text: str) -> None:
        msg_id = f"m-{self.counter}-{len(self.acked)}"
        root = self.engine.get_dialog(self.root_id)
        self.engine.submit_user_message(root, text, msg_id=msg_id)
        self.acked.append(msg_id)

    def teardown(self) -> None:
        self.loop.run_until_complete(self.engine.close())
        self.loop.close()
        shutil.rmtree(self.base, ignore_errors=True)

    # -- rules ---------------------------------------------------------------------------------

    @rule(kind=st.sampled_from(KINDS), ask_back=st.sampled_from(ASK_BACKS), wait=st.booleans())
    def delegate(self, kind: str, ask_back: str, wait: bool) -> None:
        self._submit(f"do {kind}{ask_back} {self._token()}")
        if wait:
            self._settle()

    @rule(kind=st.sampled_from(DEEP_KINDS), wait=st.booleans())
    def delegate_deep(self, kind: str, wait: bool) -> None:
        self._submit(f"do {kind} {self._token()}")
        if wait:
            self._settle()

    @rule()
    def clear_mind(self) -> None:
        self._submit(f"do clear {self._token()}")

    @rule()
    def ask_human(self) -> None:
        self._submit(f"do human {self._token()}")

    @precondition(lambda self: bool(self.engine.q4h_state()))
    @rule(data=st.data())
    def answer(self, data: st.DataObject) -> None:
        questions = self.engine.q4h_state()
        question = data.draw(st.sampled_from(questions))
        token = TOKEN.search(question["tellaskHead"] + " " + question.get("bodyContent", ""))
        self.engine.answer_question(question["id"], f"human {token.group(0) if token else 't0'}")

    @rule()
    def interject(self) -> None:
        self._submit(f"note {self._token()}")

    @rule()
    def heavy(self) -> None:
        self._submit(f"do heavy {self._token()}")

    @rule()
    def critical(self) -> None:
        self._submit(f"do critical {self._token()}")

    @rule()
    def settle(self) -> None:
        self._settle()

    @rule()
    def loop(self) -> None:
        self._submit(f"do loop {self._token()}")
        self._settle()

    @rule(steps=st.integers(0, 40), data=st.data())
    def stop(self, steps: int, data: st.DataObject) -> None:
        """Stop one dialog at an arbitrary step; once its drive has ended nothing of it is written."""
        for _ in range(steps):
            self.loop.run_until_complete(asyncio.sleep(0))
        root = self.engine.get_dialog(self.root_id)
        dialogs = sorted(root.local.values(), key=lambda d: (not d.is_driving, d.self_id))
        target = data.draw(st.sampled_from(dialogs))
        self.engine.stop(target)
        if target.drive_task is not None:
            self.loop.run_until_complete(asyncio.wait({target.drive_task}, timeout=30))
        assert not target.is_driving, f"{target.self_id}: still driving after its stop"
        for _ in range(20):  # whatever the stopped drive started had its chance to write (invariant 7 looks)
            self.loop.run_until_complete(asyncio.sleep(0))
        self.engine.resume_all()

    @rule(steps=st.integers(0, 40))
    def shutdown(self, steps: int) -> None:
        """Close the engine gracefully at an arbitrary step; then nothing writes, and a new engine resumes."""
        for _ in range(steps):
            self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.run_until_complete(self.engine.close())
        before = _tree_bytes(self.rtws)
        for _ in range(20):
            self.loop.run_until_complete(asyncio.sleep(0))
        assert _tree_bytes(self.rtws) == before, "a file was written after the engine closed"
        self.engine = self._start(self.rtws)

    @precondition(lambda self: bool(self.engine.get_dialog(self.root_id).pending))
    @rule()
    def ask_waiting_root(self) -> None:
        self._submit(f"note {self._token()}")

    @rule(steps=st.integers(0, 40))
    def crash(self, steps: int) -> None:
        """Let the engine run ``steps`` event-loop turns, then keep only what is on disk."""
        for _ in range(steps):
            self.loop.run_until_complete(asyncio.sleep(0))
        self.generation += 1
        copy = self.base / f"ws{self.generation}"
        shutil.copytree(self.rtws.root, copy, ignore=shutil.ignore_patterns("*.lock"))
        self.loop.run_until_complete(self.engine.close())
        self.rtws = Rtws(copy)
        self.engine = self._start(self.rtws)

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def at_rest_everything_adds_up(self) -> None:
        self._settle()
        store = DialogStore(self.rtws)
        recorded: list[str] = []
        waiting_on_question: set[str] = set()
        pending: dict[str, list[str]] = {}
        registry = store.files("run", self.root_id).read_registry()
        sessions: dict[str, list[str]] = {}
        for files in store.iter_tree("run", self.root_id):
            meta, latest = files.read_meta(), files.read_latest()
            assert latest is not None
            course = [r for n in files.course_numbers() for r in files.read_course(n)]
            recorded += [r.msg_id for r in course if isinstance(r, HumanTextRecord) and r.origin == "user"]
            for n in files.course_numbers():  # invariants 6 and 9
                _pressure_notices_follow_their_generation(meta.id, files.read_course(n))
                _loops_are_told_then_stopped(meta.id, files.read_course(n))
                _the_critical_countdown_goes_on(meta.id, files.read_course(n))
            calls = [(r.subdialog_id, r.call_id, r.tellask_head) for r in course if isinstance(r, SubdialogCreatedRecord)]
            replies = [r for r in course if isinstance(r, TeammateResponseRecord)]
            keys = [(r.callee_dialog_id, r.call_id) for r in replies]
            notes = {r.call_id for r in course if isinstance(r, TeammateCallResultRecord)}
            assert len(keys) == len(set(keys)), f"{meta.id}: a reply recorded twice"
            # A tool-form call site (its body carries the token) is answered at most once: its one result.
            sites = {r.call_id: r.tellask_body for r in course if isinstance(r, TellaskCallRecord)}
            answers = [r.call_id for r in course if isinstance(r, TeammateResponseRecord | TeammateCallResultRecord)]
            for call_id in sites:
                assert answers.count(call_id) <= 1, f"{meta.id}: tool-form call {call_id} answered {answers.count(call_id)} times"
            for reply in replies:  # invariant 1 and 2: a completed reply answers its own request
                if reply.status == "completed":
                    assert "!?@" not in reply.response, f"{meta.id}: an intermediate tellask was taken as the reply {reply.response!r}"
                asked = TOKEN.findall(reply.tellask_head + " " + sites.get(reply.call_id, ""))
                if reply.status == "completed" and asked and reply.response != "noted":
                    assert asked[0] in reply.response, f"{meta.id}: {reply.tellask_head!r} answered {reply.response!r}"
            open_calls = {(s, c) for s, c, _ in calls} - set(keys)
            pending[meta.id] = [s for s, c in open_calls if c not in notes]
            if files.q4h_yaml.exists():
                waiting_on_question.add(meta.id)
            if meta.tellask_session and latest.run_state.kind != "dead":
                sessions.setdefault(f"{meta.agent_id}!{meta.tellask_session}", []).append(meta.id)
            assert not files.read_queue() or files.q4h_yaml.exists() or pending[meta.id], (
                f"{meta.id}: prompts queued at rest with nothing to wait for"
            )
            loop_stopped = latest.run_state.kind == "interrupted" and (latest.run_state.detail or "").startswith(LOOP_STOP)
            assert latest.run_state.kind in ("idle", "blocked") or loop_stopped, f"{meta.id} ended {latest.run_state}"
            for number in files.course_numbers():  # invariant 7 (generations are numbered per course)
                _assert_closed(f"{meta.id} course {number}", files.read_course(number))
            if meta.is_root and not files.q4h_yaml.exists() and not latest.inbound_tellask_backs:  # invariant 8
                assert not [p for p in latest.queued_prompts if p.origin == "user"], f"{meta.id}: a user message waits"

        def waits_on_a_question(dialog_id: str, seen: frozenset[str] = frozenset()) -> bool:
            if dialog_id in waiting_on_question:
                return True
            return any(s not in seen and waits_on_a_question(s, seen | {dialog_id}) for s in pending.get(dialog_id, []))

        for dialog_id, callees in pending.items():  # invariant 3: nothing stuck on nothing
            if callees:
                assert waits_on_a_question(dialog_id), f"{dialog_id} waits on {callees}, which wait on nothing"
        for key, ids in sessions.items():  # invariant 4
            assert len(ids) == 1, f"{key} has subdialogs {ids}"
            assert key not in registry or registry[key].subdialog_id == ids[0]
        assert sorted(recorded) == sorted(set(recorded)), "a message was recorded twice"  # invariant 5
        still_queued = {p.msg_id for p in store.files("run", self.root_id).read_queue()}
        assert set(self.acked) <= set(recorded) | still_queued, "an acknowledged message was lost"


def _assert_closed(dialog_id: str, course: list[Any]) -> None:
    finishes: dict[int, GenFinishRecord] = {}
    finished: list[int] = []
    started: list[int] = []
    results: dict[str, FuncResultRecord] = {}
    calls: set[str] = set()
    stopped_up_to = 0
    for record in course:
        genseq = getattr(record, "genseq", None)
        if isinstance(record, RunMarkerRecord) and record.kind == "interrupted":
            stopped_up_to = max(started, default=0)
        elif isinstance(record, (GenStartRecord, GenFinishRecord, FuncCallRecord, FuncResultRecord)) and genseq is not None:
            assert genseq > stopped_up_to, f"{dialog_id}: {record.type} of generation {genseq} after its interruption"
        if isinstance(record, GenStartRecord):
            started.append(record.genseq)
        elif isinstance(record, GenFinishRecord):
            finishes[record.genseq] = record
            finished.append(record.genseq)
        elif isinstance(record, FuncCallRecord):
            calls.add(record.id)
        elif isinstance(record, FuncResultRecord):
            results[record.id] = record
    assert sorted(started) == sorted(finished), f"{dialog_id}: a generation was left open"
    assert calls <= set(results), f"{dialog_id}: tool calls without a result: {calls - set(results)}"
    for result in results.values():
        if result.interrupted and result.genseq in finishes:
            assert finishes[result.genseq].status == "interrupted", f"{dialog_id}: an interrupted call in an ok generation"


def _tree_bytes(rtws: Rtws) -> dict[str, tuple[int, int]]:
    return {
        str(p): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in rtws.dialogs_dir.rglob("*")
        if p.is_file() and not p.name.endswith(".lock")
    }


def _pressure_notices_follow_their_generation(dialog_id: str, course: list[Any]) -> None:
    from dominds.driver.pressure import CAUTION_EVERY, CAUTION_ID, CRITICAL_ID

    last_caution: int | None = None
    finished = 0
    for index, record in enumerate(course):
        finished += isinstance(record, GenFinishRecord)
        if not (isinstance(record, HumanTextRecord) and record.msg_id.startswith((CAUTION_ID, CRITICAL_ID))):
            continue
        before = course[index - 1]
        assert isinstance(before, GenFinishRecord) and before.genseq == record.genseq, f"{dialog_id}: notice out of place"
        level = (before.context_health or {}).get("level")
        assert level in ("caution", "critical"), f"{dialog_id}: a notice after a {level} generation"
        if record.msg_id.startswith(CAUTION_ID):
            assert last_caution is None or finished - last_caution >= CAUTION_EVERY, f"{dialog_id}: caution told too often"
            last_caution = finished


LOOP_STOP = "stopped: the same tool call"


def _the_critical_countdown_goes_on(dialog_id: str, course: list[Any]) -> None:
    """Invariant 10: each critical generation's countdown is one less than the previous measured one's."""
    from dominds.driver.health import CRITICAL_COUNTDOWN

    previous: int | None = None  # the countdown of the last measured generation, None below critical
    for record in course:
        health = record.context_health if isinstance(record, GenFinishRecord) else None
        if not health or health.get("kind") != "available":
            continue
        if health["level"] == "critical":
            expected = CRITICAL_COUNTDOWN - 1 if previous is None else max(previous - 1, 0)
            assert health["criticalCountdown"] == expected, f"{dialog_id}: generation {record.genseq} counts {health}, not {expected}"
            previous = expected
        else:
            previous = None


def _loops_are_told_then_stopped(dialog_id: str, course: list[Any]) -> None:
    """Invariant 9, counted independently of ``loop_guard.py``: each generation's tool calls and results
    compared with the previous generation's, a prompt from someone (not a runtime notice) ending a streak."""
    from dominds.driver.loop_guard import LOOP_NOTICE_ID, TOOL_LOOP_NOTICE_AT, TOOL_LOOP_STOP_AT

    rounds: dict[int, list[tuple[str, str, str]]] = {}
    names: dict[str, tuple[int, str, str]] = {}
    for record in course:
        if isinstance(record, FuncCallRecord):
            names[record.id] = (record.genseq, record.name, repr(sorted(record.arguments.items())))
        elif isinstance(record, FuncResultRecord) and record.id in names:
            genseq, name, arguments = names[record.id]
            rounds.setdefault(genseq, []).append((name, arguments, record.content))
    streak, previous, reset = 0, None, False
    due: dict[int, str] = {}  # genseq -> "notice" | "stop"
    for record in course:
        if isinstance(record, HumanTextRecord) and record.origin not in ("system", "diligence"):
            reset = True
        elif isinstance(record, GenFinishRecord):
            this = sorted(rounds.get(record.genseq, []))
            streak = 0 if not this else streak + 1 if (this == previous and not reset) else 1
            previous, reset = this, False
            if streak == TOOL_LOOP_NOTICE_AT:
                due[record.genseq] = "notice"
            elif streak >= TOOL_LOOP_STOP_AT:
                due[record.genseq] = "stop"
    told = {r.genseq for r in course if isinstance(r, HumanTextRecord) and r.msg_id.startswith(LOOP_NOTICE_ID)}
    assert told == {g for g, what in due.items() if what == "notice"}, f"{dialog_id}: loop notices after {told}, due {due}"
    for genseq in (g for g, what in due.items() if what == "stop"):
        after = course[[i for i, r in enumerate(course) if isinstance(r, GenFinishRecord) and r.genseq == genseq][-1] :]
        upto = next((i for i, r in enumerate(after) if isinstance(r, GenStartRecord)), len(after))
        assert any(isinstance(r, RunMarkerRecord) and r.kind == "interrupted" for r in after[:upto]), (
            f"{dialog_id}: generation {genseq} repeated itself {TOOL_LOOP_STOP_AT}+ times and the dialog went on"
        )


def _yaml(responses: list[dict[str, Any]]) -> str:
    import yaml

    return yaml.safe_dump({"responses": responses}, allow_unicode=True, sort_keys=False)


DriverModel.TestCase.settings = settings(
    max_examples=examples(100),  # bin/fuzz runs 200,000; 100 keeps bin/test within its ~10-minute budget
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_driver_model = DriverModel.TestCase
# A few hundred random programs, each its own engine: the suite-wide 120 s budget is for one test's work,
# not for a property run (CI on 2 idle cores takes well under a minute).
test_driver_model.pytestmark = [pytest.mark.timeout(900)]


class ToolFormDriverModel(DriverModel):
    """The same model with every agent delegating by Tellask function tools (issue 33): the tool form is a
    dimension of the driver's model, with the same invariants."""

    tellask_form = "tools"


ToolFormDriverModel.TestCase.settings = settings(
    max_examples=examples(25),  # the text form's 100 cover the shared paths; bin/fuzz runs more
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_driver_model_tool_form = ToolFormDriverModel.TestCase
test_driver_model_tool_form.pytestmark = [pytest.mark.timeout(900)]


@pytest.mark.parametrize("form", ["text", "tools"])
async def test_the_model_agents_do_what_the_rules_say(tmp_path: Path, form: str) -> None:
    """Guards the model itself: each rule's script really reaches its shape (not the "noted" fallback),
    in both Tellask forms."""
    rtws = write_workspace(tmp_path / "ws", [])
    (rtws.minds_dir / "scripted" / "test.yaml").write_text(_yaml(_tool_form_responses() if form == "tools" else _responses()))
    team = rtws.team_yaml.read_text().replace("fbr_effort: 2", "fbr_effort: 1")
    rtws.team_yaml.write_text(team.replace("member_defaults:\n", f"member_defaults:\n  tellask: {form}\n"))
    engine = Engine(rtws)
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        texts = ("do fresh-via t1", "do nested t2", "do tool t3", "do selftool t4", "do collective t6", "do loop t7", "note t8",
                 "do critical t9", "do clear t5")  # fmt: skip
        for text in texts:
            engine.submit_user_message(engine.get_dialog(root.root_id), text, msg_id=f"m-{text}")
            await engine.wait_idle(timeout=30)
            if text == "do loop t7":
                state = engine.get_dialog(root.root_id).latest.run_state
                assert state.kind == "interrupted" and (state.detail or "").startswith(LOOP_STOP), state
        store = DialogStore(rtws)
        replies: dict[str, list[str]] = {}
        tools: list[str] = []
        tool_form: list[str] = []
        for files in store.iter_tree("run", root.root_id):
            course = [r for n in files.course_numbers() for r in files.read_course(n)]
            tool_form += [r.tool_name for r in course if isinstance(r, TellaskCallRecord)]
            replies[files.read_meta().agent_id + ":" + files.read_meta().id] = [
                r.response for r in course if isinstance(r, TeammateResponseRecord)
            ]
            tools += [r.name for r in course if type(r).__name__ == "FuncCallRecord"]
        said = sorted(x for v in replies.values() for x in v)
        assert "reply t1" in said, "the ask-back answered after a tellask to the researcher"
        assert "found t1" in said and "because t2" in said and "answer t2" in said
        assert said.count("answer t6") == 2, "the collective call reached both members"
        if form == "tools":
            assert {"tellaskSessionless", "tellaskBack", "freshBootsReasoning"} <= set(tool_form) and tool_form.count("tellaskSessionless") >= 5
        else:
            assert not tool_form
        assert tools.count("add_reminder") == 2 and tools.count("clear_mind") == 1
        assert tools.count("recall_taskdoc") == 6, "the loop ran to the guard's stop (and no further)"
        finishes = [r for r in DialogStore(rtws).files("run", root.root_id).read_course(1) if isinstance(r, GenFinishRecord)]
        critical = [f.context_health for f in finishes if f.context_health and f.context_health.get("level") == "critical"]
        assert [h["criticalCountdown"] for h in critical] == [4], "the critical rule's generation is measured critical"
        assert engine.get_dialog(root.root_id).latest.current_course == 2
    finally:
        await engine.close()
