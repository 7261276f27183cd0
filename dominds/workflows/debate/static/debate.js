// The debate page: POST /api/multi-agent and read its SSE body with fetch (EventSource cannot POST).
// Shows each round's positions and host decision, the agents' live statuses, the consensus trend as an
// inline SVG chart with the thresholds the host actually used, and how positions were compared.
// A failed run is shown as a failure (an error box, no report). English and Chinese (the panel's choice).
// Every model-written text goes in through textContent, never innerHTML.

import { makeI18n } from "/static/workflow_i18n.js";

const MESSAGES = {
  en: {
    pageTitle: "Dominds · Debate", heading: "Debate", subheading: "Planner · Critic · Host · Reporter", backToPanel: "panel",
    tokenText: "This daemon needs its access token: run `dominds url` in the workspace and paste the URL it prints, or the token.",
    tokenPlaceholder: "http://127.0.0.1:5666/?auth=… or the token", tokenSave: "Save token",
    questionPlaceholder: "Your question, e.g. Help me plan three months of IELTS preparation", maxRounds: "Max rounds ",
    start: "Start", stop: "Stop", resume: "Resume", resumePlaceholder: "session id to resume",
    idle: "Idle.", trend: "Consensus trend", rounds: "Rounds", finalReport: "Final report", roundN: "Round {n}",
    fullText: "full text", confidence: "confidence {value}", host: "Host", stubborn: "stubborn: {agents}",
    decisionLine: " consensus {value} ({method}) — {reason}",
    session: "Session {id}", resumedAfter: ", resumed after round {n}",
    status_converged: "Session {id}: converged after {n} round(s).",
    status_terminated: "Session {id}: ended without consensus after {n} round(s).",
    interrupted: "Session {id} interrupted ({reason}) after round {n}; resume it with its id.",
    failed: "The debate failed in round {n} and was stopped; nothing was reported. Fix the cause, then resume session {id}.",
    error: "Error: {message}", connectionLost: "Connection lost: {message}", resumeLater: " The debate is saved after each round: once the daemon is back, press Resume to go on with session {id}.", tokenSaved: "Token saved; start again.",
    method_jaccard: "Positions compared by word overlap (Jaccard).", method_embedding: "Positions compared by embeddings ({model}).",
    thresholdsUsed: " Converge above {converge}, force opposition at or below {oppose}.",
    converge_label: "converge > {value}", oppose_label: "oppose ≤ {value}",
    action_converge: "converge", action_continue: "continue", action_force_opposition: "force opposition", action_terminate: "terminate",
    fallback_reused_last_output: "last output reused", fallback_unparsable_json: "unreadable answer", fallback_no_answer: "no answer",
    agentError_agent_timeout: "{agent} timed out in round {round}", agentError_agent_failed: "{agent} failed in round {round}",
    toolError: "{tool} failed in round {round}; word overlap used instead: {detail}",
    agent_planner: "Planner", agent_critic: "Critic", agent_host: "Host", agent_reporter: "Reporter",
    agentStatus_idle: "idle", agentStatus_waiting: "waiting", agentStatus_running: "working", agentStatus_completed: "done",
    agentStatus_skipped: "skipped", agentStatus_failed: "failed",
  },
  zh: {
    pageTitle: "Dominds · 辩论", heading: "辩论", subheading: "规划师 · 批评家 · 主持人 · 报告员", backToPanel: "面板",
    tokenText: "这个守护进程需要访问令牌：在工作区运行 `dominds url`，粘贴它打印的网址或令牌。",
    tokenPlaceholder: "http://127.0.0.1:5666/?auth=… 或令牌", tokenSave: "保存令牌",
    questionPlaceholder: "你的问题，例如：帮我制定IELTS备考计划", maxRounds: "最多轮数 ",
    start: "开始", stop: "停止", resume: "继续", resumePlaceholder: "要继续的会话 ID",
    idle: "空闲。", trend: "共识趋势", rounds: "各轮", finalReport: "最终报告", roundN: "第 {n} 轮",
    fullText: "全文", confidence: "置信度 {value}", host: "主持人", stubborn: "固执：{agents}",
    decisionLine: " 共识 {value}（{method}）— {reason}",
    session: "会话 {id}", resumedAfter: "，从第 {n} 轮之后继续",
    status_converged: "会话 {id}：{n} 轮后达成共识。",
    status_terminated: "会话 {id}：{n} 轮后结束，未达成共识。",
    interrupted: "会话 {id} 在第 {n} 轮后中断（{reason}）；可用会话 ID 继续。",
    failed: "辩论在第 {n} 轮失败，已停止，没有生成报告。排除原因后继续会话 {id}。",
    error: "错误：{message}", connectionLost: "连接中断：{message}", resumeLater: "辩论在每轮结束后都会保存：守护进程恢复后，点击“继续”即可继续会话 {id}。", tokenSaved: "令牌已保存；请重新开始。",
    method_jaccard: "立场按词语重叠（Jaccard）比较。", method_embedding: "立场按向量嵌入比较（{model}）。",
    thresholdsUsed: "高于 {converge} 收敛，不高于 {oppose} 强制反方。",
    converge_label: "收敛 > {value}", oppose_label: "反方 ≤ {value}",
    action_converge: "收敛", action_continue: "继续", action_force_opposition: "强制反方", action_terminate: "终止",
    fallback_reused_last_output: "沿用上一轮输出", fallback_unparsable_json: "回答无法读取", fallback_no_answer: "没有回答",
    agentError_agent_timeout: "{agent} 在第 {round} 轮超时", agentError_agent_failed: "{agent} 在第 {round} 轮失败",
    toolError: "{tool} 在第 {round} 轮失败，改用词语重叠：{detail}",
    agent_planner: "规划师", agent_critic: "批评家", agent_host: "主持人", agent_reporter: "报告员",
    agentStatus_idle: "空闲", agentStatus_waiting: "等待", agentStatus_running: "工作中", agentStatus_completed: "完成",
    agentStatus_skipped: "跳过", agentStatus_failed: "失败",
  },
};
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
  const lines = [[thresholds.converge_above, "converge_label", "var(--converge)"], [thresholds.oppose_at_or_below, "oppose_label", "var(--oppose)"]];
  for (const [value, key, color] of lines) {
    chart.append(svg("line", { class: "chart-threshold", stroke: color, x1: left, y1: y(value), x2: left + width, y2: y(value) }));
    chart.append(svg("text", { class: "chart-label", x: left + width - 90, y: y(value) - 3 }, t(key, { value: value.toFixed(2) })));
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
  }
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
  maxRounds = Number($("max-rounds").value);
  stream({ message: $("question").value, mode: "multi_agent", maxRounds });
});
$("resume").addEventListener("click", () => {
  const id = $("resume-id").value.trim();
  if (!id) return;
  reset();
  replay = [];
  stream({ sessionId: id, mode: "multi_agent" });
});
$("stop").addEventListener("click", async () => {
  if (sessionId) await fetch(`/api/multi-agent/${encodeURIComponent(sessionId)}/stop`, { method: "POST", headers: headers() });
  else if (abort) abort.abort();
});
mountPicker($("lang"));
onChange(() => {
  // re-render everything this stream showed, in the new language
  const events = replay;
  reset();
  replay = events;
  for (const event of events) handle(event);
  if (statuses && Object.keys(statuses).length) showAgents();
});
drawChart();
