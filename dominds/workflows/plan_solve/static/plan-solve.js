// The Plan & Solve page: one websocket session on /plan-solve/ws (the seed's events, docs/plan-solve.md).
// Runs a question, shows the plan for confirmation and editing, every slide's progress and queries with
// cancel/restart, and the finished deck with its downloads; opens a past run from the list (?run=<id>).
// A failed run is shown as a failure (an error box, no deck). English and Chinese (the panel's choice).
// Model-written text goes in through textContent, never innerHTML.

import { makeI18n } from "/static/workflow_i18n.js";
import { offerExamples } from "/static/workflow_examples.js";
import { MESSAGES } from "/plan-solve/static/plan-solve-messages.js";
import { addTaskRow, closeEditor, editedTasks, editorOpen, openEditor } from "/plan-solve/static/plan-solve-editor.js";
import { fetchPastRun, fetchRuns, runItems } from "/plan-solve/static/plan-solve-past.js";
import { applySolverEvent, applyToolEvent, freshRun } from "/plan-solve/static/plan-solve-run.js";
import { PlanSolveSocket } from "/plan-solve/static/plan-solve-socket.js";
import { el, renderQueries, slideCard } from "/plan-solve/static/plan-solve-views.js";

const { t, mountPicker, onChange } = makeI18n(MESSAGES);

const TOKEN_KEY = "dominds.authKey"; // the main panel's key: a token entered there works here
const $ = (id) => document.getElementById(id);

let token = sessionStorage.getItem(TOKEN_KEY) || localStorage.getItem(TOKEN_KEY);
let sessionId = null;
let run = freshRun();
let statusKey = ["idle", {}, ""];

function setStatus(key, vars = {}, tone = "") {
  statusKey = [key, vars, tone];
  $("status").textContent = t(key, vars);
  $("status").className = `status ${tone}`.trim();
}

function showError(text) {
  $("error").hidden = !text;
  $("error").textContent = text || "";
}

function notice(text, refused = false) {
  const item = el("li", refused ? { class: "refused" } : {}, text);
  $("notices").append(item);
  while ($("notices").children.length > 4) $("notices").firstChild.remove();
}

function setRunning(running) {
  run.running = running;
  $("start").disabled = running || !sessionId;
  $("cancel-run").disabled = !running;
}

// ---------------------------------------------------------------- the socket

const CONN_LABELS = { connecting: "connecting", open: "connected", closed: "disconnected" };
const socket = new PlanSolveSocket({
  state(name) {
    $("conn").dataset.state = name;
    $("conn").textContent = t(CONN_LABELS[name]);
  },
  event: (message) => handle(message),
  closed(closed) {
    sessionId = null;
    setRunning(false);
    if (closed.code === 4401) $("token-form").hidden = false;
    else if (run.running) {  // a closed socket ends its runs: this one is over (listed once the daemon answers)
      setStatus("interruptedRun", {}, "bad");
      showError(t("connectionLost", { reason: closed.reason || closed.code }));
    }
  },
});

function sendInSession(event, fields = {}) {
  socket.send({ event, session_id: sessionId, ...fields });
}

// ---------------------------------------------------------------- events

function handle(event) {
  const content = event.content;
  const meta = event.metadata || {};
  switch (event.event) {
    case "agent.session_created": {
      sessionId = event.session_id;
      setRunning(false);
      loadRuns();
      offerExamplesOnce();
      const wanted = new URLSearchParams(location.search).get("run");
      if (wanted && !run.id) openPastRun(wanted); // a link to a past run, or a reload while reading one
      break;
    }
    case "plan.start":
      run.id = meta.dialog_id || run.id;
      run.question = content.question;
      run.tasks = [];
      run.planQueries = [];
      $("plan-section").hidden = false;
      setStatus("planning", { question: content.question });
      renderPlan();
      break;
    case "plan.completed":
      run.tasks = content.tasks || [];
      run.summary = content.plan_summary || "";
      setStatus("planned", { n: run.tasks.length });
      renderPlan();
      break;
    case "agent.user_confirm":
      if (meta.scope === "plan") askPlanConfirmation(event);
      else openToolConfirm(event);
      break;
    case "plan.coercion_error":
      showError(t("coercion", { error: content.error }));
      break;
    case "plan.cancelled":
      closeConfirmations();
      break;
    case "agent.tool_call":
    case "agent.tool_result":
      if (applyToolEvent(run, event) === "plan") renderPlan();
      else renderSlides();
      break;
    case "solver.start":
    case "solver.completed":
    case "solver.failed":
    case "solver.cancelled":
    case "solver.restarted": {
      const done = applySolverEvent(run, event);
      $("slides-section").hidden = false;
      renderSlides();
      if (run.running) setStatus("solving", { done, n: run.slides.size });
      break;
    }
    case "aggregate.start":
      setStatus("aggregating");
      break;
    case "aggregate.completed":
      run.deckReady = Boolean(content.output && content.output.pptx_path);
      break;
    case "pipeline.completed":
      showStats(content.statistics);
      break;
    case "agent.final_answer":
      finish(content, "good");
      break;
    case "agent.error":
      if (meta.event) notice(t("refused", { text: content }), true); // a refused request; the run goes on
      else fail(content, "failed");
      break;
    case "agent.timeout":
      fail(content, "timedOut");
      break;
    case "agent.interrupted":
      closeConfirmations();
      setRunning(false);
      renderSlides();
      setStatus("cancelled", {}, "bad");
      loadRuns();
      break;
    case "system.notice":
      notice(content, meta.ok === false);
      break;
    case "system.error":
      showError(content);
      break;
  }
}

function fail(text, key) {
  closeConfirmations();
  setRunning(false);
  renderSlides();
  setStatus(key, {}, "bad");
  showError(text);
  $("result-section").hidden = true;
  $("plan-section").hidden = run.tasks.length === 0 && run.planQueries.length === 0;
  loadRuns();
}

function finish(text, tone) {
  closeConfirmations();
  setRunning(false);
  renderSlides();
  $("result-section").hidden = false;
  $("final-text").textContent = text;
  const hasDeck = Boolean(run.deckReady && run.id);
  showDownloads(hasDeck);
  setStatus(hasDeck ? "done" : "doneNoDeck", {}, tone);
  loadRuns();
}

function showDownloads(hasDeck) {
  for (const [id, kind] of [["download-pptx", "pptx"], ["download-json", "json"]]) {
    $(id).hidden = !hasDeck;
    if (hasDeck) $(id).href = `/api/plan-solve/runs/${encodeURIComponent(run.id)}/deck.${kind}`;
  }
}

function showStats(statistics) {
  const totals = (statistics || {}).totals;
  $("stats").textContent = totals ? t("stats", { calls: totals.total_calls, input: totals.total_input_tokens, output: totals.total_output_tokens }) : "";
}

// ---------------------------------------------------------------- the plan

function renderPlan() {
  $("plan-summary").textContent = run.summary;
  const list = $("plan-tasks");
  list.replaceChildren(...run.tasks.map((task) => el("li", {}, el("strong", {}, task.title), ` — ${task.objective}`)));
  list.hidden = editorOpen();
  renderQueries($("plan-queries"), run.planQueries, t("plannerQueries"), t);
}

function askPlanConfirmation(event) {
  run.confirmStep = event.step_id;
  run.tasks = event.metadata.tasks || run.tasks;
  openEditor(run.tasks, event.metadata.timeout_seconds, t);
  setStatus("confirming");
}

/** Closes whatever confirmation the run was waiting for (the plan's, a tool's). */
function closeConfirmations() {
  run.confirmStep = null;
  closeEditor();
  $("tool-confirm").hidden = true;
}

function answerPlan(content) {
  if (!run.confirmStep) return;
  sendInSession("user.response", { step_id: run.confirmStep, content });
  closeConfirmations();
}

// ---------------------------------------------------------------- slides

function renderSlides() {
  const actions = run.running ? {
    cancel: (id) => sendInSession("user.cancel_task", { content: { task_id: id } }),
    restart: (id) => sendInSession("user.restart_task", { content: { task_id: id } }),
  } : null;
  const cards = [...run.slides.values()].sort((a, b) => a.task.id - b.task.id).map((slide) => slideCard(slide, t, actions));
  $("slides").replaceChildren(...cards);
}

// ---------------------------------------------------------------- tool confirmation, runs, token

function openToolConfirm(event) {
  run.toolStep = event.step_id;
  $("tool-confirm-text").textContent = t("toolConfirm", { tool: event.metadata.tool_name, description: event.metadata.tool_description || "" });
  $("tool-confirm").hidden = false;
}

function answerTool(confirmed) {
  if (!run.toolStep) return;
  sendInSession("user.response", { step_id: run.toolStep, content: { confirmed } });
  run.toolStep = null;
  $("tool-confirm").hidden = true;
}

async function loadRuns() {
  if (!sessionId) return; // not connected (yet): the list needs the same access as the socket
  const runs = await fetchRuns(token);
  if (runs === null) return;
  $("runs-section").hidden = runs.length === 0;
  $("runs").replaceChildren(...runItems(runs, t, openPastRun));
}

/** Show a past run (its plan, its deck's slides, how it ended) as its files tell; a live run is never replaced. */
async function openPastRun(id) {
  if (run.running) { notice(t("busy"), true); return; }
  try {
    const past = await fetchPastRun(id, token);
    run = past.run;
    run.past = past;
  } catch (err) {
    showError(t("pastRunError", { id, error: err.message }));
    return;
  }
  history.replaceState(null, "", `?run=${encodeURIComponent(id)}`);
  showPastRun();
}

function showPastRun() {
  const { record } = run;
  showError("");
  closeConfirmations();
  $("question").value = run.question;
  $("plan-section").hidden = false;
  renderPlan();
  $("slides-section").hidden = run.slides.size === 0;
  renderSlides();
  $("result-section").hidden = false;
  $("final-text").textContent = record.final_text || "";
  showDownloads(run.deckReady);
  const notes = [!run.past.planKept && t("planNotKept"), run.past.deckMissing && t("deckMissing")].filter(Boolean);
  $("stats").textContent = notes.join(" ");
  const tone = record.status === "completed" ? "good" : ["failed", "interrupted"].includes(record.status) ? "bad" : "";
  setStatus("pastRun", { status: t(`status_${record.status}`) }, tone);
}

async function saveToken(raw) {
  let value = raw.trim();
  try { value = new URL(value).searchParams.get("auth") || value; } catch { /* a bare token */ }
  token = value;
  sessionStorage.setItem(TOKEN_KEY, token);
  // the session cookie makes the download links work without a header
  await fetch("/api/session", { method: "POST", headers: { Authorization: `Bearer ${token}` } }).catch(() => {});
  $("token-form").hidden = true;
  notice(t("tokenSaved"));
  socket.connect(token);
}

// ---------------------------------------------------------------- wiring

$("start-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const question = $("question").value.trim();
  if (!question || !sessionId) return;
  run = freshRun();
  history.replaceState(null, "", location.pathname);
  $("slides").replaceChildren();
  $("slides-section").hidden = true;
  $("result-section").hidden = true;
  $("plan-section").hidden = true;
  showError("");
  const metadata = { confirm_plan: $("confirm-plan").checked };
  if ($("csv-path").value.trim()) metadata.csv_path = $("csv-path").value.trim();
  setRunning(true);
  sendInSession("user.message", { content: question, metadata });
});
$("cancel-run").onclick = () => sendInSession("user.cancel");
$("confirm-btn").onclick = () => {
  const tasks = editedTasks();
  answerPlan({ confirmed: true, tasks });
  run.tasks = tasks; // what is solved from now on (the server checks it: plan.coercion_error otherwise)
  renderPlan();
};
$("decline-btn").onclick = () => answerPlan({ confirmed: false });
$("replan-btn").onclick = () => { sendInSession("user.replan"); closeConfirmations(); };
$("add-task").onclick = () => addTaskRow(run.tasks, t);
$("tool-allow").onclick = () => answerTool(true);
$("tool-deny").onclick = () => answerTool(false);
$("token-form").addEventListener("submit", (e) => { e.preventDefault(); saveToken($("token").value); });

mountPicker($("lang"));
let relabelExamples = () => {};
let examplesOffered = false;
// Asked once the daemon has opened a session (it took the token or the session cookie; a socket is
// opened before the daemon refuses it with 4401), so the page never sends a request the browser would
// log as a 401 before the token is entered.
function offerExamplesOnce() {
  if (examplesOffered) return;
  examplesOffered = true;
  offerExamples({ workflow: "plan-solve", field: $("question"), authorization: () => token }).then((relabel) => { relabelExamples = relabel; });
}
onChange(() => relabelExamples());
onChange(() => {
  setStatus(...statusKey);
  $("conn").textContent = t(CONN_LABELS[$("conn").dataset.state]);
  renderPlan();
  renderSlides();
  if (run.past) showPastRun();
  loadRuns();
});
setStatus("idle");
socket.connect(token);
