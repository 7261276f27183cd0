// Saved debates on the debate page: the list (GET /api/multi-agent) and one debate read from its files
// (GET /api/multi-agent/{id}/session, the §6.2 object), turned into the events the page draws a live
// stream from, so a saved debate reads like one watched live, also after a restart of the daemon.

export async function getJson(url, headers) {
  const answer = await fetch(url, { headers });
  const body = await answer.json().catch(() => ({}));
  if (!answer.ok) throw new Error(body.error || `HTTP ${answer.status}`);
  return body;
}

/** One list item per saved debate: its question (a link that opens it here), when, how it stands. */
export function sessionItems(sessions, t, el, open) {
  return sessions.map((s) => {
    const link = el("a", { href: `?session=${encodeURIComponent(s.sessionId)}`, class: "open-session" }, s.question);
    link.onclick = (e) => {
      if (e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey) return;
      e.preventDefault();
      open(s.sessionId);
    };
    const when = `${s.createdAt.slice(0, 16).replace("T", " ")} · ${t(`saved_${s.status}`, { n: s.currentRound })}`;
    return el("li", { "data-session-id": s.sessionId }, link, el("span", { class: "when" }, when));
  });
}

/** The events a live stream of this debate would have shown, from its saved §6.2 object. */
export function sessionEvents(saved) {
  const id = saved.sessionId;
  const similarity = { similarityMethod: saved.similarityMethod, similarityNote: saved.similarityNote };
  const events = [{ type: "session_start", sessionId: id, maxRounds: saved.maxRounds, ...similarity }];
  for (const round of saved.rounds) {
    for (const output of round.outputs) {
      events.push({ type: "agent_output", round: round.round, agent: output.agent, content: output.content, position: output.position, fallback: output.fallback });
    }
    if (round.hostDecision) {
      events.push({ type: "host_decision", round: round.round, ...round.hostDecision, consensus_trend: saved.consensusTrend.slice(0, round.round) });
    }
  }
  if (saved.finalReport) {
    events.push({ type: "final_report", sessionId: id, status: saved.status, round: saved.currentRound, content: saved.finalReport.content, ...similarity });
  }
  const reason = String(saved.stopReason || "");
  const failure = /^(failed|error): /;
  if (saved.status === "interrupted" && failure.test(reason)) events.push({ type: "error", sessionId: id, error: reason.replace(failure, "") });
  else if (saved.status === "interrupted") events.push({ type: "session_interrupted", sessionId: id, reason, completedRounds: saved.currentRound });
  return events;
}
