"""One debate run: rounds of Planner and Critic, the host's decision after each, then the Reporter.

Round 1: Planner and Critic in parallel (§9.2). Later rounds: Planner then Critic, or, after
``force_opposition``, the Critic as devil's advocate first and the Planner answering it. After each
round the host compares the two positions, decides (host.py), and the state is saved *before* the
decision is published, so a run resumes from its last completed round. The run's events go to
``emit`` as plain dicts in the §6.1 vocabulary (events.py); SSE and the CLI only format them.

Agent statuses (§4 ``agents.<role>.status``) are saved as they change, not only at round boundaries:
a debater is ``running`` while its step runs and ``completed``/``skipped``/``failed`` when it is back,
the host is ``waiting`` while the debaters speak and ``running`` while it compares; each change is
written to the state file, then published as an ``agent_status`` event. ``last_output`` still changes
only when a round completes, so resuming re-runs an unfinished round from the same starting point.

One agent's failure does not end a debate (§7): a timed-out or failed agent is skipped and its last
output reused (a minimal fallback output in round 1), an unreadable answer becomes a fallback output,
a failed embedder becomes Jaccard, a failed Reporter becomes a report assembled from the debate. But
a round in which **no** debater gave a fresh, usable answer has nothing to compare: the run stops
there (``DebateFailed``) instead of computing a consensus over error texts, and is saved as
``interrupted`` with the reasons, resumable once the provider works. A cancelled run (user stop,
client disconnect, Ctrl-C) is saved as ``interrupted`` too and can be resumed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import dominds.workflows.debate.events as events
from dominds.driver.conductor import ConductorRun
from dominds.ids import now_iso
from dominds.workflows.debate.agents import (
    clip,
    fallback_output,
    first_sentence,
    parse_agent_output,
    reused_output,
)
from dominds.workflows.debate.calibration import thresholds_for, thresholds_json, thresholds_of
from dominds.workflows.debate.host import (
    HostInputs,
    consensus_label,
    critic_focus,
    decide,
    stubborn_agents,
    trend_label,
)
from dominds.workflows.debate.members import DEFAULT_AGENT_MAX_TOKENS
from dominds.workflows.debate.prompts import RoundBrief, critic_request, planner_request, reporter_request
from dominds.workflows.debate.protocol import DEBATERS, MEMBER_IDS, AgentOutput, HostDecision, Role
from dominds.workflows.debate.report import fallback_report
from dominds.workflows.debate.settings import DebateSettings
from dominds.workflows.debate.similarity import PositionComparer
from dominds.workflows.debate.state import AgentSlot, DebateState, RoundRecord, save_state, slot_status
from dominds.workflows.debate.timetools import DEFAULT_TIMEZONE, DateToolError, get_now

log = logging.getLogger("dominds.debate")
Emit = Callable[[dict[str, Any]], None]
ACTIVE_SESSIONS: dict[str, DebateSession] = {}
"""Running sessions by id: one runner per session, and the handle a stop request needs."""


class DebateFailed(Exception):
    """The debate cannot go on: no debater gave a usable answer in a round (the message says why)."""


class DebateSession:
    def __init__(
        self,
        run: ConductorRun,
        state: DebateState,
        settings: DebateSettings,
        comparer: PositionComparer,
        *,
        emit: Emit,
        resumed_from_round: int | None = None,
        warnings: tuple[str, ...] = (),
        owns_comparer: bool = False,
    ) -> None:
        self.run = run
        self.state = state
        self.settings = settings
        self.comparer = comparer
        self.owns_comparer = owns_comparer
        """The comparer was made for this run (``open_debate``): it is closed when the run ends. One handed
        in by a caller is the caller's to close."""
        self.emit = emit
        self.resumed_from_round = resumed_from_round
        self.warnings = warnings
        self.stop_reason: str | None = None
        self.live_outputs: list[AgentOutput] = []
        """Outputs of the round in progress, in speaking order (the §6.2 object shows them before the round ends)."""
        self._task: asyncio.Task[Any] | None = None

    @property
    def session_id(self) -> str:
        return self.state.session_id

    def stop(self, reason: str = "user_stop") -> bool:
        """Interrupt the run at once (its current steps are declared dead); True when it was running."""
        if self._task is None or self._task.done():
            return False
        self.stop_reason = self.stop_reason or reason
        self._task.cancel()
        return True

    async def run_to_end(self) -> DebateState:
        """Run until converged, terminated or interrupted; re-raises a cancellation after saving."""
        try:
            return await self._run_to_end()
        finally:
            if self.owns_comparer:  # its embedder's connection ends with the run
                await self.comparer.aclose()

    async def _run_to_end(self) -> DebateState:
        if self.session_id in ACTIVE_SESSIONS:  # two resumes raced past open_debate's check
            self.emit({"type": "error", "error": f"debate {self.session_id} is already running", "sessionId": self.session_id})
            return self.state
        ACTIVE_SESSIONS[self.session_id] = self
        self._task = asyncio.current_task()
        state = self.state
        state.status, state.stop_reason = "in_progress", None
        self._settle_statuses()  # a crash may have left a step "running"
        save_state(self.run.root.files.dir, state)
        self.emit(events.session_start(state, self.comparer.method, self.resumed_from_round, self.warnings))
        try:
            while not state.finished:
                last = state.last_round
                if last is not None and last.decision.ends_debate:
                    await self._report(last.decision)
                else:
                    await self._round(state.current_round + 1)
        except asyncio.CancelledError:
            self._interrupt(self.stop_reason or "cancelled")
            raise
        except DebateFailed as exc:
            self._interrupt(f"failed: {exc}")
            self.emit({"type": "error", "error": str(exc), "sessionId": self.session_id})
        except Exception as exc:  # a bug or a storage failure: keep what is saved, say so, stay resumable
            log.exception("debate %s failed", self.session_id)
            self._interrupt(f"error: {type(exc).__name__}: {exc}")
            self.emit({"type": "error", "error": f"{type(exc).__name__}: {exc}", "sessionId": self.session_id})
        finally:
            ACTIVE_SESSIONS.pop(self.session_id, None)
        return state

    def _interrupt(self, reason: str) -> None:
        self.state.status, self.state.stop_reason = "interrupted", reason
        settled = self._settle_statuses()
        save_state(self.run.root.files.dir, self.state)
        for role in settled:
            self.emit(events.agent_status(role, "idle", self.state.current_round + 1))
        self.run.note(f"Debate interrupted ({reason}); resume it from round {self.state.current_round + 1}.")
        self.emit(events.session_interrupted(self.state))

    def _settle_statuses(self) -> list[str]:
        """Steps that are not running any more are no longer ``running`` or ``waiting``; returns who changed."""
        settled = [role for role, slot in self.state.agents.items() if slot.status in ("running", "waiting")]
        for role in settled:
            self.state.agents[role].status = "idle"
        self.live_outputs = []
        return settled

    def _set_status(self, round_no: int, **statuses: str) -> None:
        """Save new agent statuses, then publish each change (persist before publish)."""
        changed = {role: status for role, status in statuses.items() if self.state.agents[role].status != status}
        if not changed:
            return
        for role, status in changed.items():
            self.state.agents[role].status = status
        save_state(self.run.root.files.dir, self.state)
        for role, status in changed.items():
            self.emit(events.agent_status(role, status, round_no))

    # ---------------------------------------------------------------- rounds

    def _today(self) -> dict[str, Any]:
        try:
            return get_now(self.settings.timezone)
        except DateToolError:
            return get_now(DEFAULT_TIMEZONE)

    def _max_tokens(self, role: Role) -> int:
        member = self.run.engine.config.get().team.member(MEMBER_IDS[role])
        value = member.model_params.get("max_tokens") if member is not None else None
        return int(value) if isinstance(value, int) and value > 0 else DEFAULT_AGENT_MAX_TOKENS

    async def _round(self, round_no: int) -> None:
        state = self.state
        decision = state.last_round.decision if state.last_round else None
        self.run.note(f"Round {round_no} of at most {state.max_rounds}.")
        self.live_outputs = []
        self._set_status(round_no, host="waiting")
        today = self._today()
        if decision is None:
            planner, critic = await asyncio.gather(
                self._speak("planner", round_no, decision, today, None), self._speak("critic", round_no, decision, today, None)
            )
            spoken = [planner, critic]
        elif decision.action == "force_opposition":
            critic = await self._speak("critic", round_no, decision, today, state.last_output("planner"), devils_advocate=True)
            planner = await self._speak("planner", round_no, decision, today, critic)
            spoken = [critic, planner]
        else:
            planner = await self._speak("planner", round_no, decision, today, state.last_output("critic"))
            critic = await self._speak("critic", round_no, decision, today, planner)
            spoken = [planner, critic]
        if all(output.fallback is not None for output in spoken):
            raise DebateFailed(_no_usable_answer(round_no, spoken))
        self._set_status(round_no, host="running")
        host_output, consensus, self_similarity = await self._host(round_no, planner, critic)
        self._set_status(round_no, host="completed")
        state.complete_round(RoundRecord(round_no, spoken, host_output), consensus)
        self.live_outputs = []
        for role, value in self_similarity.items():
            state.self_similarity.setdefault(role, []).append(value)
        save_state(self.run.root.files.dir, state)
        decided = HostDecision.from_json(host_output.metadata["decision"])
        self.run.note(f"Round {round_no}: consensus {consensus:.2f} → {decided.action} ({decided.reason}).")
        self.emit(events.host_decision(host_output))

    async def _speak(
        self,
        role: Role,
        round_no: int,
        decision: HostDecision | None,
        today: dict[str, Any],
        other: AgentOutput | None,
        *,
        devils_advocate: bool = False,
    ) -> AgentOutput:
        state = self.state
        previous = state.last_output(role)
        brief = RoundBrief(
            state.user_query, round_no, state.max_rounds, today, decision, previous, other, self._max_tokens(role)
        )
        request = planner_request(brief) if role == "planner" else critic_request(brief, devils_advocate=devils_advocate)
        output = await self._ask(role, round_no, request, previous)
        self.live_outputs.append(output)
        self.emit(events.agent_output(output))
        return output

    async def _ask(self, role: Role, round_no: int, request: str, previous: AgentOutput | None) -> AgentOutput:
        max_chars = self._max_tokens(role) * 4  # ~4 characters a token: a cap for providers that ignore max_tokens
        self._set_status(round_no, **{role: "running"})
        try:
            answer = await self.run.ask(
                MEMBER_IDS[role], request, headline=f"debate round {round_no}: {role}", timeout=self.settings.agent_timeout_s
            )
        except TimeoutError:
            output = self._skip(role, round_no, previous, "agent_timeout", max_chars)
        else:
            if not answer.ok:
                output = self._skip(role, round_no, previous, "agent_failed", max_chars, answer.failure_reason)
            else:
                output = parse_agent_output(role, round_no, answer.text, previous, max_chars=max_chars)
        self._set_status(round_no, **{role: slot_status(output)})
        return output

    def _skip(
        self, role: Role, round_no: int, previous: AgentOutput | None, error: str, max_chars: int, detail: str = ""
    ) -> AgentOutput:
        """§7.1: skip the agent this round and stand in its last output (a minimal one in round 1)."""
        self.emit(events.agent_error(error, role, round_no, previous is not None, detail))
        if previous is not None and role != "reporter":
            output = reused_output(previous, round_no)
        else:
            output = fallback_output(role, round_no, "", "no_answer", previous, max_chars=max_chars)
        output.metadata["failure"] = f"{error}: {detail}" if detail else error
        return output

    async def _host(
        self, round_no: int, planner: AgentOutput, critic: AgentOutput
    ) -> tuple[AgentOutput, float, dict[str, float | None]]:
        state = self.state
        outputs = {"planner": planner, "critic": critic}
        texts = [_position_text(outputs[role]) for role in DEBATERS]
        comparison = await self.comparer.compare(texts)
        # each method has its own scale: the thresholds are calibrated per method and script (calibration.py)
        thresholds, basis = thresholds_for(comparison.method, texts, self.settings.thresholds)
        if comparison.error:
            self.emit(events.tool_error("compare_positions", comparison.error, round_no))
        # §5.4 self-similarity from round 2; None when there is nothing fresh to compare (a reused output)
        self_similarity: dict[str, float | None] = {}
        for role in DEBATERS if round_no >= 2 else ():
            before, now = state.last_output(role), outputs[role]
            value = None
            if now.fallback is None and before is not None and before.position is not None:
                value = (await self.comparer.similarity(_position_text(before), _position_text(now))).similarity_matrix[0][1]
            self_similarity[role] = value
        series: dict[str, list[float | None]] = {role: list(state.self_similarity.get(role, [])) for role in DEBATERS}
        for agent, value in self_similarity.items():
            series[agent].append(value)
        stubborn = stubborn_agents(series, thresholds)
        consensus = comparison.mean_similarity
        trend = [*state.consensus_trend, consensus]
        tokens_used = self._tokens_used()
        decision = decide(
            HostInputs(
                round=round_no,
                max_rounds=state.max_rounds,
                consensus=consensus,
                trend=trend,
                stubborn=stubborn,
                focus=critic_focus(critic.metadata.get("critique")),
                budget_exhausted=tokens_used >= self.settings.run_token_budget,
            ),
            thresholds,
        )
        analysis = {
            "consensus_level": consensus,
            "compared_agents": list(DEBATERS),
            **{k: v for k, v in comparison.to_tool_output()["data"].items() if k != "mean_similarity"},
            "similarity_method": comparison.method,
            "thresholds": thresholds_json(thresholds, basis),
            "stubborn_agents": stubborn,
            "self_similarity": self_similarity,
            "consensus_trend": trend,
            "trend": trend_label(trend, thresholds),
            "tokens_used": tokens_used,
        }
        content = f"Round {round_no}: consensus {consensus:.2f}, {decision.action}: {decision.reason}."
        host_output = AgentOutput("host", round_no, "control", content, {"decision": decision.to_json(), "analysis": analysis}, now_iso())
        return host_output, consensus, self_similarity

    def _tokens_used(self) -> int:
        totals = self.run.engine.usage_totals(self.run.root_id)["total"]
        return int(totals["inputTokens"] + totals["outputTokens"])

    # ---------------------------------------------------------------- the final report

    async def _report(self, decision: HostDecision) -> None:
        state = self.state
        round_no = state.current_round
        label = consensus_label(state.consensus_trend[-1], thresholds_of(state.last_round, self.settings.thresholds))
        request = reporter_request(
            state.user_query, round_no, state.max_rounds, decision, label, state.consensus_trend,
            state.last_output("planner"), state.last_output("critic"), self._max_tokens("reporter"),
        )
        self.run.note("The Reporter writes the final report.")
        report = await self._ask("reporter", round_no, request, None)
        if report.fallback is not None:
            report = fallback_report(state, decision, report.fallback)
        final_plan = report.metadata.setdefault("final_plan", {})
        if isinstance(final_plan, dict):
            final_plan.update({"consensus_level": label, "rounds": round_no})
        state.final_report = report
        state.agents["reporter"] = AgentSlot(slot_status(report), report)
        state.status = "converged" if decision.action == "converge" else "terminated"
        save_state(self.run.root.files.dir, state)
        self.run.note(f"Debate {state.status} after {round_no} rounds.")
        self.emit(events.final_report(state))


def _no_usable_answer(round_no: int, outputs: list[AgentOutput]) -> str:
    """Why a round has nothing to compare, per debater, and the next step."""
    reasons = []
    members: dict[str, str] = {role: member for role, member in MEMBER_IDS.items()}
    for output in outputs:
        why = output.metadata.get("failure") or (
            f"answer unreadable: {clip(first_sentence(output.content), 160)}" if output.fallback == "unparsable_json" else output.fallback
        )
        reasons.append(f"{members.get(output.agent_id, output.agent_id)}: {why}")
    return (
        f"no debater gave a usable answer in round {round_no} ({'; '.join(reasons)}). "
        "Check the provider and model of these members (dominds check; .minds/team.yaml, .minds/llm.yaml), then resume"
    )


def _position_text(output: AgentOutput) -> str:
    position = output.position
    return position.comparison_text() if position is not None else output.content
