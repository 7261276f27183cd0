// The debate page: POST /api/multi-agent and read its SSE body with fetch (EventSource cannot POST).
// Shows each round's positions and host decision, the agents' live statuses, the consensus trend as an
// inline SVG chart with the thresholds the host actually used, and how positions were compared.
// A failed run is shown as a failure (an error box, no report). A saved debate opens from the list
// (?session=<id>) and is drawn from its files. English and Chinese (the panel's choice).
// Every model-written text goes in through textContent, never innerHTML.

import { makeI18n } from "/static/workflow_i18n.js";
import { offerExamples } from "/static/workflow_examples.js";
import { MESSAGES } from "/debate/static/debate-messages.js";
import { getJson, sessionEvents, sessionItems } from "/debate/static/debate-saved.js";

const { t, mountPicker, onChange } = makeI18n(MESSAGES);

const TOKEN_KEY = "dominds.authKey"; // the main panel's key: a token entered there works here
const SVG_NS = "http://www.w3.org/2000/svg";
const AGENTS = ["planner", "critic", "host", "reporter"];

const $ = (id) => document.getElementById(id);
let token = initialToken();
let sessionId = null;
let maxRounds = 5;
let trend = [];
let thresholds = { converge_above: 0.9, oppose_at_or_below: 0.7 };
let similarity = null; // {method, note}
let statuses = {};
let completedRounds = 0;
let abort = null;
let replay = []; // every event of the current stream, to re-render in another language

function initialToken() {
  const url = new URL(location.href);
  const fromUrl = url.searchParams.get("auth");
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl);
    url.searchParams.delete("auth");
    history.replaceState(null, "", url.pathname + url.search + url.hash);
    return fromUrl;
  }
  return sessionStorage.getItem(TOKEN_KEY) || localStorage.getItem(TOKEN_KEY);
}

function headers() {
  const h = { "Content-Type": "application/json" };
  if (token) h.Authorization = `Bearer ${token}`;
  return h;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const child of children) node.append(child);
  return node;
}

const known = (key) => MESSAGES.en[key] !== undefined;
const agentName = (agent) => (known(`agent_${agent}`) ? t(`agent_${agent}`) : agent);

function setRunning(running) {
  $("start").disabled = running;
  $("resume").disabled = running;
  $("stop").disabled = !running;
}

function setStatus(text, tone = "") {
  $("status").removeAttribute("data-i18n"); // a live status, not the idle label
  $("status").textContent = text;
  $("status").className = `status ${tone}`;
}

function showError(text) {
  $("error").textContent = text;
  $("error").hidden = false;
}

function roundBox(round) {
  let box = document.querySelector(`.round[data-round="${round}"]`);
  if (!box) {
    box = el("div", { class: "round", "data-round": String(round) }, el("h3", {}, t("roundN", { n: round })));
    $("rounds").append(box);
  }
  return box;
}

function showOutput(event) {
  const position = event.position || {};
  const head = el("div", {}, el("span", { class: "who" }, agentName(event.agent)));
  if (position.confidence !== undefined) head.append(el("span", { class: "conf" }, t("confidence", { value: position.confidence })));
  if (event.fallback) {
    const label = known(`fallback_${event.fallback}`) ? t(`fallback_${event.fallback}`) : event.fallback;
    head.append(el("span", { class: "badge fallback" }, label));
  }
  const reasons = el("ul");
  for (const reason of position.key_reasons || []) reasons.append(el("li", {}, reason));
  const details = el("details", {}, el("summary", {}, t("fullText")), el("pre", {}, event.content || ""));
  roundBox(event.round).append(el("div", { class: "output" }, head, el("div", {}, position.conclusion || ""), reasons, details));
}

function methodWords(method) {
  if (!method || method.startsWith("jaccard")) return t("method_jaccard");
  return t("method_embedding", { model: method.replace(/^embedding:/, "") });
}

function showSimilarity() {
  if (!similarity) return;
  let text = methodWords(similarity.method);
  if (thresholds.basis) text += t("thresholdsUsed", { converge: thresholds.converge_above.toFixed(2), oppose: thresholds.oppose_at_or_below.toFixed(2) });
  if (similarity.note) text += ` ${similarity.note}`;
  $("similarity").textContent = text;
  $("similarity").hidden = false;
}

function showDecision(event) {
  const action = known(`action_${event.action}`) ? t(`action_${event.action}`) : event.action;
  const method = (event.similarity_method || "").startsWith("jaccard") ? "Jaccard" : (event.similarity_method || "").replace(/^embedding:/, "");
  const line = el("div", { class: "host" }, t("host"), el("span", { class: `badge ${event.action}` }, action),
    t("decisionLine", { value: Number(event.consensus_level).toFixed(2), method, reason: event.reason }));
  if ((event.stubborn_agents || []).length) line.append(el("div", {}, t("stubborn", { agents: event.stubborn_agents.map(agentName).join(", ") })));
  roundBox(event.round).append(line);
  trend = event.consensus_trend || [...trend, event.consensus_level];
  if (event.thresholds) thresholds = event.thresholds;
  completedRounds = event.round;
  showSimilarity();
  drawChart();
}

function showAgents() {
  const list = $("agents");
  list.hidden = false;
  list.replaceChildren(...AGENTS.map((agent) => {
    const status = statuses[agent] || "idle";
    return el("li", { class: status, "data-agent": agent }, `${agentName(agent)}: ${t(`agentStatus_${status}`)}`);
  }));
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

function drawChart() {
  const chart = $("chart");
  chart.replaceChildren();
  const [left, top, width, height] = [34, 10, 370, 130];
  const x = (round) => left + ((round - 1) / Math.max(1, maxRounds - 1)) * width;
  const y = (value) => top + (1 - Math.max(0, Math.min(1, value))) * height;
  chart.append(svg("line", { class: "chart-axis", x1: left, y1: top + height, x2: left + width, y2: top + height }));
  for (const v of [0, 0.5, 1]) chart.append(svg("text", { class: "chart-label", x: 4, y: y(v) + 3 }, v.toFixed(1)));
  // converge is the higher line: its label sits above it, oppose's below it, so close thresholds
  // (calibrated ones can be 0.02 apart) never print one label over the other
  const lines = [[thresholds.converge_above, "converge_label", "var(--converge)", -3], [thresholds.oppose_at_or_below, "oppose_label", "var(--oppose)", 10]];
  for (const [value, key, color, dy] of lines) {
    chart.append(svg("line", { class: "chart-threshold", stroke: color, x1: left, y1: y(value), x2: left + width, y2: y(value) }));
    chart.append(svg("text", { class: "chart-label", "data-threshold": key, x: left + width - 90, y: y(value) + dy }, t(key, { value: value.toFixed(2) })));
  }
  for (let round = 1; round <= maxRounds; round++) {
    chart.append(svg("text", { class: "chart-label", x: x(round) - 3, y: top + height + 14 }, String(round)));
  }
  if (!trend.length) return;
  const points = trend.map((v, i) => `${x(i + 1)},${y(v)}`).join(" ");
  chart.append(svg("polyline", { class: "chart-line", points }));
  trend.forEach((v, i) => {
    const dot = svg("circle", { cx: x(i + 1), cy: y(v), r: 4, fill: "var(--continue)" });
    dot.append(svg("title", {}, `${t("roundN", { n: i + 1 })}: ${v.toFixed(3)}`));
    chart.append(dot);
  });
}

function handle(event) {
  switch (event.type) {
    case "session_start":
      sessionId = event.sessionId;
      maxRounds = event.maxRounds;
      trend = event.consensus_trend || [];
      similarity = { method: event.similarityMethod, note: event.similarityNote };
      $("resume-id").value = sessionId;
      setStatus(t("session", { id: sessionId }) + (event.resumedFromRound != null ? t("resumedAfter", { n: event.resumedFromRound }) : ""));
      $("warnings").replaceChildren(...(event.warnings || []).map((w) => el("li", {}, w)));
      for (const past of event.history || []) showDecision(past);
      showSimilarity();
      drawChart();
      break;
    case "agent_status": statuses[event.agent] = event.status; showAgents(); break;
    case "agent_output": showOutput(event); break;
    case "host_decision": showDecision(event); break;
    case "agent_error": {
      const key = known(`agentError_${event.error}`) ? `agentError_${event.error}` : null;
      const text = key ? t(key, { agent: agentName(event.agent), round: event.round }) : `${event.error}: ${event.agent}`;
      $("warnings").append(el("li", {}, event.detail ? `${text}: ${event.detail}` : text));
      break;
    }
    case "tool_error":
      $("warnings").append(el("li", {}, t("toolError", { tool: event.tool, round: event.round, detail: event.detail })));
      break;
    case "final_report":
      $("report-section").hidden = false;
      $("report").textContent = event.content;
      similarity = { method: event.similarityMethod || similarity?.method, note: event.similarityNote };
      showSimilarity();
      setStatus(t(`status_${event.status}`, { id: event.sessionId, n: event.round }), event.status === "converged" ? "good" : "");
      break;
    case "session_interrupted":
      if (!String(event.reason).startsWith("failed:")) {
        setStatus(t("interrupted", { id: event.sessionId, reason: event.reason, n: event.completedRounds }), "bad");
      }
      break;
    case "error":
      setStatus(t("failed", { id: event.sessionId, n: completedRounds + 1 }), "bad");
      showError(event.error);
      break;
  }
}

async function stream(body) {
  setRunning(true);
  abort = new AbortController();
  try {
    const resp = await fetch("/api/multi-agent", { method: "POST", headers: headers(), body: JSON.stringify(body), signal: abort.signal });
    if (resp.status === 401) {
      $("token-form").hidden = false;
      $("token").focus();
      return;
    }
    if (!resp.ok) { showError(t("error", { message: (await resp.json()).error })); return; }
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        if (!frame.startsWith("data: ") || frame === "data: [DONE]") continue; // ": keep-alive" comments too
        const event = JSON.parse(frame.slice(6));
        replay.push(event);
        handle(event);
      }
    }
  } catch (err) {
    // the daemon went away (a restart, a crash): the session is resumable from its last saved round
    if (err.name !== "AbortError") setStatus(t("connectionLost", { message: err.message }) + (sessionId ? t("resumeLater", { id: sessionId }) : ""), "bad");
  } finally {
    setRunning(false);
    loadSaved();
  }
}

async function loadSaved() {
  let sessions;
  try {
    ({ sessions } = await getJson("/api/multi-agent", headers()));
  } catch {
    return; // no access yet (the token form says so when a debate is started) or no daemon
  }
  $("saved-section").hidden = sessions.length === 0;
  $("saved").replaceChildren(...sessionItems(sessions, t, el, openSaved));
}

/** Show a saved debate as its files tell (a debate streaming here stays on screen). */
async function openSaved(id) {
  if ($("start").disabled) return;
  let saved;
  try {
    saved = await getJson(`/api/multi-agent/${encodeURIComponent(id)}/session`, headers());
  } catch (err) {
    showError(t("savedError", { id, error: err.message }));
    return;
  }
  reset();
  maxRounds = saved.maxRounds;
  replay = sessionEvents(saved);
  for (const event of replay) handle(event);
  $("question").value = saved.question || "";
  history.replaceState(null, "", `?session=${encodeURIComponent(id)}`);
}

function reset() {
  $("rounds").replaceChildren();
  $("warnings").replaceChildren();
  $("report-section").hidden = true;
  $("error").hidden = true;
  $("similarity").hidden = true;
  trend = [];
  thresholds = { converge_above: 0.9, oppose_at_or_below: 0.7 };
  similarity = null;
  statuses = {};
  completedRounds = 0;
  drawChart();
}

$("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const entered = $("token").value.trim();
  const fromUrl = entered.includes("auth=") ? new URL(entered).searchParams.get("auth") : entered;
  if (fromUrl) { token = fromUrl; localStorage.setItem(TOKEN_KEY, token); sessionStorage.setItem(TOKEN_KEY, token); }
  $("token-form").hidden = true;
  setStatus(t("tokenSaved"));
});
$("start-form").addEventListener("submit", (e) => {
  e.preventDefault();
  reset();
  replay = [];
  history.replaceState(null, "", location.pathname);
  maxRounds = Number($("max-rounds").value);
  stream({ message: $("question").value, mode: "multi_agent", maxRounds });
});
$("resume").addEventListener("click", () => {
  const id = $("resume-id").value.trim();
  if (!id) return;
  reset();
  replay = [];
  history.replaceState(null, "", location.pathname);
  stream({ sessionId: id, mode: "multi_agent" });
});
$("stop").addEventListener("click", async () => {
  if (sessionId) await fetch(`/api/multi-agent/${encodeURIComponent(sessionId)}/stop`, { method: "POST", headers: headers() });
  else if (abort) abort.abort();
});
mountPicker($("lang"));
let relabelExamples = () => {};
offerExamples({ workflow: "debate", field: $("question"), authorization: () => token }).then((relabel) => { relabelExamples = relabel; });
onChange(() => relabelExamples());
onChange(() => {
  // re-render everything this stream showed, in the new language
  const events = replay;
  reset();
  replay = events;
  for (const event of events) handle(event);
  if (statuses && Object.keys(statuses).length) showAgents();
  loadSaved();
});
drawChart();
loadSaved();
const wanted = new URLSearchParams(location.search).get("session");
if (wanted) openSaved(wanted); // a link to a saved debate, or a reload while reading one
