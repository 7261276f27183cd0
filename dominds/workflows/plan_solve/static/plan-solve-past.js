// Past runs of the Plan & Solve page: the list (GET /api/plan-solve/runs) and one run opened from it, read
// from the files its run wrote (GET /api/plan-solve/runs/{id}: the question, status, plan and deck; the
// deck's slides from …/deck.json), so a run is readable after a restart of the daemon.

import { freshRun } from "/plan-solve/static/plan-solve-run.js";
import { el } from "/plan-solve/static/plan-solve-views.js";

const runUrl = (id) => `/api/plan-solve/runs/${encodeURIComponent(id)}`;

async function getJson(url, token) {
  const answer = await fetch(url, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  const body = await answer.json().catch(() => ({}));
  if (!answer.ok) throw new Error(body.error || `HTTP ${answer.status}`);
  return body;
}

/** The newest runs of the workspace, or null when the daemon cannot be asked. */
export async function fetchRuns(token) {
  try {
    return (await getJson("/api/plan-solve/runs", token)).runs;
  } catch {
    return null;
  }
}

/** One list item per run: the question (a link that opens the run here), when, how it ended, its deck. */
export function runItems(runs, t, open) {
  return runs.map((r) => {
    const link = el("a", { href: `?run=${encodeURIComponent(r.run_id)}`, class: "open-run" }, r.question);
    link.onclick = (e) => {
      if (e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey) return;
      e.preventDefault();
      open(r.run_id);
    };
    const item = el("li", { "data-run-id": r.run_id }, link, el("span", { class: "when" }, `${r.started_at.slice(0, 16).replace("T", " ")} · ${t(`status_${r.status}`)}`));
    if (r.deck) item.append(" ", el("a", { href: `${runUrl(r.run_id)}/deck.pptx`, download: "" }, ".pptx"));
    return item;
  });
}

/** A past run as the page's run state: its plan's tasks, and a slide per task (the deck's, when it has one).
 * Throws with the daemon's message (e.g. an unknown run id). */
export async function fetchPastRun(id, token) {
  const record = await getJson(runUrl(id), token);
  let slides = [];
  let deckMissing = false;
  if (record.deck) {
    try {
      slides = await getJson(`${runUrl(id)}/deck.json`, token);
    } catch {
      deckMissing = true; // the output folder was cleaned up: the plan is still shown
    }
  }
  const run = freshRun();
  run.id = id;
  run.question = record.question;
  run.record = record;
  run.deckReady = Boolean(record.deck) && !deckMissing;
  run.summary = record.plan ? record.plan.summary : "";
  run.tasks = record.plan ? record.plan.tasks : slides.map((s) => ({ id: Number(s.id), title: s.title, objective: "" }));
  const byId = new Map(slides.map((s) => [Number(s.id), s]));
  for (const task of run.tasks) {
    const output = byId.get(task.id) || null;
    run.slides.set(task.id, { task, state: output ? "completed" : "absent", output, error: "", queries: [] });
  }
  return { run, planKept: Boolean(record.plan), deckMissing };
}
