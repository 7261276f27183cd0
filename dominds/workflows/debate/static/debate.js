// The debate page: POST /api/multi-agent and read its SSE body with fetch (EventSource cannot POST).
// Shows each round's positions and host decision, and the consensus trend as an inline SVG chart.
// Every model-written text goes in through textContent, never innerHTML.

const TOKEN_KEY = "dominds.authKey"; // the main panel's key: a token entered there works here
const SVG_NS = "http://www.w3.org/2000/svg";
const THRESHOLDS = [[0.9, "converge > 0.90", "var(--converge)"], [0.7, "oppose ≤ 0.70", "var(--oppose)"]];

const $ = (id) => document.getElementById(id);
let token = initialToken();
let sessionId = null;
let maxRounds = 5;
let trend = [];
let abort = null;

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

function setRunning(running) {
  $("start").disabled = running;
  $("resume").disabled = running;
  $("stop").disabled = !running;
}

function roundBox(round) {
  let box = document.querySelector(`.round[data-round="${round}"]`);
  if (!box) {
    box = el("div", { class: "round", "data-round": String(round) }, el("h3", {}, `Round ${round}`));
    $("rounds").append(box);
  }
  return box;
}

function showOutput(event) {
  const position = event.position || {};
  const head = el("div", {}, el("span", { class: "who" }, event.agent));
  if (position.confidence !== undefined) head.append(el("span", { class: "conf" }, `confidence ${position.confidence}`));
  if (event.fallback) head.append(el("span", { class: "badge fallback" }, event.fallback));
  const reasons = el("ul");
  for (const reason of position.key_reasons || []) reasons.append(el("li", {}, reason));
  const details = el("details", {}, el("summary", {}, "full text"), el("pre", {}, event.content || ""));
  roundBox(event.round).append(el("div", { class: "output" }, head, el("div", {}, position.conclusion || ""), reasons, details));
}

function showDecision(event) {
  const line = el("div", { class: "host" }, "Host", el("span", { class: `badge ${event.action}` }, event.action),
    ` consensus ${Number(event.consensus_level).toFixed(2)} (${event.similarity_method}) — ${event.reason}`);
  if ((event.stubborn_agents || []).length) line.append(el("div", {}, `stubborn: ${event.stubborn_agents.join(", ")}`));
  roundBox(event.round).append(line);
  trend = event.consensus_trend || [...trend, event.consensus_level];
  drawChart();
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
  for (const [value, label, color] of THRESHOLDS) {
    chart.append(svg("line", { class: "chart-threshold", stroke: color, x1: left, y1: y(value), x2: left + width, y2: y(value) }));
    chart.append(svg("text", { class: "chart-label", x: left + width - 90, y: y(value) - 3 }, label));
  }
  for (let round = 1; round <= maxRounds; round++) {
    chart.append(svg("text", { class: "chart-label", x: x(round) - 3, y: top + height + 14 }, String(round)));
  }
  if (!trend.length) return;
  const points = trend.map((v, i) => `${x(i + 1)},${y(v)}`).join(" ");
  chart.append(svg("polyline", { class: "chart-line", points }));
  trend.forEach((v, i) => {
    const dot = svg("circle", { cx: x(i + 1), cy: y(v), r: 4, fill: "var(--continue)" });
    dot.append(svg("title", {}, `round ${i + 1}: ${v.toFixed(3)}`));
    chart.append(dot);
  });
}

function handle(event) {
  switch (event.type) {
    case "session_start":
      sessionId = event.sessionId;
      maxRounds = event.maxRounds;
      trend = event.consensus_trend || [];
      $("resume-id").value = sessionId;
      $("status").textContent = `Session ${sessionId}` + (event.resumedFromRound != null ? `, resumed after round ${event.resumedFromRound}` : "") +
        ` — similarity: ${event.similarityMethod}`;
      $("warnings").replaceChildren(...(event.warnings || []).map((w) => el("li", {}, w)));
      for (const past of event.history || []) showDecision(past);
      drawChart();
      break;
    case "agent_output": showOutput(event); break;
    case "host_decision": showDecision(event); break;
    case "agent_error":
    case "tool_error":
      $("warnings").append(el("li", {}, `${event.error}: ${event.agent || event.tool} (${event.fallback})`));
      break;
    case "final_report":
      $("report-section").hidden = false;
      $("report").textContent = event.content;
      $("status").textContent = `Session ${event.sessionId}: ${event.status}.`;
      break;
    case "session_interrupted":
      $("status").textContent = `Session ${event.sessionId} interrupted (${event.reason}) after round ${event.completedRounds}; resume it with its id.`;
      break;
    case "error": $("status").textContent = `Error: ${event.error}`; break;
  }
}

async function stream(body) {
  setRunning(true);
  abort = new AbortController();
  try {
    const resp = await fetch("/api/multi-agent", { method: "POST", headers: headers(), body: JSON.stringify(body), signal: abort.signal });
    if (resp.status === 401) {
      const entered = prompt("This daemon needs its access token (printed by `dominds serve` as …?auth=<token>):");
      if (entered) { token = entered.trim(); localStorage.setItem(TOKEN_KEY, token); sessionStorage.setItem(TOKEN_KEY, token); }
      $("status").textContent = "Token saved; start again.";
      return;
    }
    if (!resp.ok) { $("status").textContent = `Error: ${(await resp.json()).error}`; return; }
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
        handle(JSON.parse(frame.slice(6)));
      }
    }
  } catch (err) {
    if (err.name !== "AbortError") $("status").textContent = `Connection lost: ${err.message}`;
  } finally {
    setRunning(false);
  }
}

function reset() {
  $("rounds").replaceChildren();
  $("warnings").replaceChildren();
  $("report-section").hidden = true;
  trend = [];
  drawChart();
}

$("start-form").addEventListener("submit", (e) => {
  e.preventDefault();
  reset();
  maxRounds = Number($("max-rounds").value);
  stream({ message: $("question").value, mode: "multi_agent", maxRounds });
});
$("resume").addEventListener("click", () => {
  const id = $("resume-id").value.trim();
  if (!id) return;
  reset();
  stream({ sessionId: id, mode: "multi_agent" });
});
$("stop").addEventListener("click", async () => {
  if (sessionId) await fetch(`/api/multi-agent/${encodeURIComponent(sessionId)}/stop`, { method: "POST", headers: headers() });
  else if (abort) abort.abort();
});
drawChart();
