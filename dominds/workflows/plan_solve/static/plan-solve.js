// The Plan & Solve page: one websocket session on /plan-solve/ws (the seed's events, docs/plan-solve.md).
// Runs a question, shows the plan for confirmation and editing, every slide's progress and queries with
// cancel/restart, and the finished deck with its downloads. A failed run is shown as a failure (an error
// box, no deck). English and Chinese (the panel's choice). Model-written text goes in through
// textContent, never innerHTML.

import { makeI18n } from "/static/workflow_i18n.js";

const MESSAGES = {
  en: {
    pageTitle: "Dominds · Plan & Solve", heading: "Plan & Solve", subheading: "Planner · Solvers · Deck", backToPanel: "panel",
    tokenText: "This daemon needs its access token: run `dominds url` in the workspace and paste the URL it prints, or the token.",
    tokenPlaceholder: "http://127.0.0.1:5666/?auth=… or the token", tokenSave: "Save token",
    questionPlaceholder: "What should the deck answer? e.g. Analyse the 2024-2025 sales data and make a 3-slide presentation",
    confirmPlan: "Let me check the plan first", dataFile: "Data file", dataFilePlaceholder: "default: plan-solve/sales.csv.gz",
    start: "Start", cancelRun: "Cancel run", idle: "Idle.", connecting: "connecting…", connected: "connected", disconnected: "disconnected",
    plan: "Plan", slides: "Slides", deck: "Deck", earlierRuns: "Runs of this service",
    editHint: "Edit, remove or add slides, then solve. Ids stay as they are; a new slide gets the next id.",
    addTask: "Add a slide", confirmSolve: "Solve these slides", replan: "Plan again", decline: "Decline",
    taskTitle: "Title", taskObjective: "What the slide must show", remove: "Remove",
    chart_bar: "bar chart", chart_line: "line chart", chart_pie: "pie chart", chart_area: "area chart", chart_none: "no chart",
    confirmTimer: "Waiting for you: {seconds} s left.",
    planning: "Planning: {question}", planned: "Planned {n} slides.", confirming: "Check the plan, then solve.",
    solving: "Solving {done} of {n} slides…", aggregating: "Writing the deck…",
    done: "Done: the deck is ready.", doneNoDeck: "Done.", cancelled: "The run was cancelled.",
    failed: "The run failed.", timedOut: "The run timed out.", connectionLost: "Connection lost: {reason}. Reload the page to reconnect.",
    state_queued: "queued", state_running: "working", state_completed: "done", state_failed: "failed", state_cancelled: "cancelled", state_restarted: "restarting",
    cancelSlide: "Cancel", restartSlide: "Restart",
    queryRow: "1 row", queryRows: "{n} rows", queryRowsCut: "{shown} of {n} rows shown", queryRunning: "running…", queryFailed: "failed: {error}",
    plannerQueries: "The planner looked at the data:",
    toolConfirm: "Allow {tool}? {description}", allow: "Allow", deny: "Deny",
    downloadPptx: "Download the deck (.pptx)", downloadJson: "slides as JSON",
    stats: "{calls} LLM calls, {input} input + {output} output tokens.",
    coercion: "The edited plan was refused: {error}", refused: "Refused: {text}",
    status_completed: "completed", status_failed: "failed", status_cancelled: "cancelled", status_declined: "declined", status_running: "running",
    tokenSaved: "Token saved; connecting again.",
  },
  zh: {
    pageTitle: "Dominds · 计划与求解", heading: "计划与求解", subheading: "规划 · 求解 · 演示文稿", backToPanel: "面板",
    tokenText: "这个守护进程需要访问令牌：在工作区运行 `dominds url`，粘贴它打印的网址或令牌。",
    tokenPlaceholder: "http://127.0.0.1:5666/?auth=… 或令牌", tokenSave: "保存令牌",
    questionPlaceholder: "演示文稿要回答什么？例如：分析 2024-2025 年销售数据并生成 3 页 PPT",
    confirmPlan: "先让我确认计划", dataFile: "数据文件", dataFilePlaceholder: "默认：plan-solve/sales.csv.gz",
    start: "开始", cancelRun: "取消运行", idle: "空闲。", connecting: "连接中…", connected: "已连接", disconnected: "已断开",
    plan: "计划", slides: "幻灯片", deck: "演示文稿", earlierRuns: "本服务的运行",
    editHint: "可以修改、删除或添加幻灯片，然后开始求解。编号保持不变；新幻灯片使用下一个编号。",
    addTask: "添加幻灯片", confirmSolve: "求解这些幻灯片", replan: "重新规划", decline: "拒绝",
    taskTitle: "标题", taskObjective: "这页要说明什么", remove: "删除",
    chart_bar: "柱状图", chart_line: "折线图", chart_pie: "饼图", chart_area: "面积图", chart_none: "不要图表",
    confirmTimer: "等待你确认：还剩 {seconds} 秒。",
    planning: "正在规划：{question}", planned: "已规划 {n} 页。", confirming: "请检查计划，然后开始求解。",
    solving: "正在求解：{done} / {n} 页…", aggregating: "正在生成演示文稿…",
    done: "完成：演示文稿已生成。", doneNoDeck: "完成。", cancelled: "运行已取消。",
    failed: "运行失败。", timedOut: "运行超时。", connectionLost: "连接中断：{reason}。请刷新页面重新连接。",
    state_queued: "排队中", state_running: "进行中", state_completed: "完成", state_failed: "失败", state_cancelled: "已取消", state_restarted: "重新开始",
    cancelSlide: "取消", restartSlide: "重新生成",
    queryRow: "1 行", queryRows: "{n} 行", queryRowsCut: "显示 {shown} / {n} 行", queryRunning: "执行中…", queryFailed: "失败：{error}",
    plannerQueries: "规划者查看了数据：",
    toolConfirm: "允许 {tool} 吗？{description}", allow: "允许", deny: "拒绝",
    downloadPptx: "下载演示文稿（.pptx）", downloadJson: "幻灯片 JSON",
    stats: "{calls} 次模型调用，输入 {input} + 输出 {output} 个词元。",
    coercion: "修改后的计划被拒绝：{error}", refused: "被拒绝：{text}",
    status_completed: "已完成", status_failed: "失败", status_cancelled: "已取消", status_declined: "已拒绝", status_running: "运行中",
    tokenSaved: "令牌已保存，正在重新连接。",
  },
};
const { t, mountPicker, onChange } = makeI18n(MESSAGES);

const TOKEN_KEY = "dominds.authKey"; // the main panel's key: a token entered there works here
const CHART_KINDS = ["bar", "line", "pie", "area", "none"];
const $ = (id) => document.getElementById(id);

let token = sessionStorage.getItem(TOKEN_KEY) || localStorage.getItem(TOKEN_KEY);
let ws = null;
let sessionId = null;
let run = freshRun();
let statusKey = ["idle", {}, ""];
let confirmTimer = null;

function freshRun() {
  return { id: null, question: "", running: false, tasks: [], slides: new Map(), planQueries: [], steps: new Map(), summary: "", confirmStep: null, toolStep: null, deckReady: false };
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const child of children) node.append(child);
  return node;
}

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

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  ws = new WebSocket(`${scheme}://${location.host}/plan-solve/ws`, token ? [`dominds-auth.${token}`] : []);
  $("conn").dataset.state = "connecting";
  $("conn").textContent = t("connecting");
  ws.onopen = () => {
    $("conn").dataset.state = "open";
    $("conn").textContent = t("connected");
    send({ event: "user.create_session" });
  };
  ws.onmessage = (message) => handle(JSON.parse(message.data));
  ws.onclose = (closed) => {
    $("conn").dataset.state = "closed";
    $("conn").textContent = t("disconnected");
    sessionId = null;
    setRunning(false);
    if (closed.code === 4401) {
      $("token-form").hidden = false;
      return;
    }
    if (run.running) {
      setStatus("failed", {}, "bad");
      showError(t("connectionLost", { reason: closed.reason || closed.code }));
    }
  };
}

function send(message) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
}

function sendInSession(event, fields = {}) {
  send({ event, session_id: sessionId, ...fields });
}

// ---------------------------------------------------------------- events

function handle(event) {
  const content = event.content;
  const meta = event.metadata || {};
  switch (event.event) {
    case "agent.session_created":
      sessionId = event.session_id;
      setRunning(false);
      loadRuns();
      break;
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
      if (meta.scope === "plan") openEditor(event);
      else openToolConfirm(event);
      break;
    case "plan.coercion_error":
      showError(t("coercion", { error: content.error }));
      break;
    case "plan.cancelled":
      closeEditor();
      break;
    case "agent.tool_call":
    case "agent.tool_result":
      toolEvent(event);
      break;
    case "solver.start":
    case "solver.completed":
    case "solver.failed":
    case "solver.cancelled":
    case "solver.restarted":
      slideEvent(event);
      break;
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
      closeEditor();
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
  closeEditor();
  setRunning(false);
  renderSlides();
  setStatus(key, {}, "bad");
  showError(text);
  $("result-section").hidden = true;
  $("plan-section").hidden = run.tasks.length === 0 && run.planQueries.length === 0;
  loadRuns();
}

function finish(text, tone) {
  closeEditor();
  setRunning(false);
  renderSlides();
  $("result-section").hidden = false;
  $("final-text").textContent = text;
  const hasDeck = Boolean(run.deckReady && run.id);
  for (const [id, kind] of [["download-pptx", "pptx"], ["download-json", "json"]]) {
    $(id).hidden = !hasDeck;
    if (hasDeck) $(id).href = `/api/plan-solve/runs/${encodeURIComponent(run.id)}/deck.${kind}`;
  }
  setStatus(hasDeck ? "done" : "doneNoDeck", {}, tone);
  loadRuns();
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
  list.hidden = !$("plan-editor").hidden;
  renderQueries($("plan-queries"), run.planQueries, t("plannerQueries"));
}

function openEditor(event) {
  run.confirmStep = event.step_id;
  run.tasks = event.metadata.tasks || run.tasks;
  $("task-list").replaceChildren(...run.tasks.map(taskRow));
  $("plan-editor").hidden = false;
  $("plan-tasks").hidden = true;
  setStatus("confirming");
  let left = Math.floor(event.metadata.timeout_seconds || 0);
  clearInterval(confirmTimer);
  const tick = () => { $("confirm-timer").textContent = left > 0 ? t("confirmTimer", { seconds: left }) : ""; left -= 1; };
  tick();
  confirmTimer = setInterval(tick, 1000);
}

function closeEditor() {
  clearInterval(confirmTimer);
  run.confirmStep = null;
  $("plan-editor").hidden = true;
  $("plan-tasks").hidden = false;
  $("tool-confirm").hidden = true;
}

function taskRow(task) {
  const row = el("div", { class: "task-edit", "data-task-id": String(task.id) });
  const title = el("input", { class: "task-title", "data-i18n-placeholder": "taskTitle" });
  title.value = task.title || "";
  const objective = el("textarea", { class: "task-objective", rows: "2", "data-i18n-placeholder": "taskObjective" });
  objective.value = task.objective || "";
  const chart = el("select", { class: "task-chart" });
  for (const kind of CHART_KINDS) chart.append(el("option", { value: kind, "data-i18n": `chart_${kind}` }, t(`chart_${kind}`)));
  chart.value = CHART_KINDS.includes(task.chart_hint) ? task.chart_hint : "bar";
  const remove = el("button", { type: "button", class: "small remove-task", "data-i18n": "remove" }, t("remove"));
  remove.onclick = () => row.remove();
  title.placeholder = t("taskTitle");
  objective.placeholder = t("taskObjective");
  row.append(el("span", { class: "tid" }, `#${task.id}`), title, objective, chart, remove);
  row.task = task;
  return row;
}

function editedTasks() {
  return [...document.querySelectorAll("#task-list .task-edit")].map((row) => ({
    ...row.task,
    title: row.querySelector(".task-title").value.trim(),
    objective: row.querySelector(".task-objective").value.trim(),
    chart_hint: row.querySelector(".task-chart").value,
  }));
}

function answerPlan(content) {
  if (!run.confirmStep) return;
  sendInSession("user.response", { step_id: run.confirmStep, content });
  closeEditor();
}

// ---------------------------------------------------------------- slides and queries

function slideOf(task) {
  let slide = run.slides.get(task.id);
  if (!slide) {
    slide = { task, state: "queued", output: null, error: "", queries: [] };
    run.slides.set(task.id, slide);
  }
  slide.task = task;
  return slide;
}

function slideEvent(event) {
  const content = event.content;
  const slide = slideOf(content.task);
  const state = event.event.slice("solver.".length);
  slide.state = state === "start" ? "running" : state;
  if (state === "start" || state === "restarted") { slide.output = null; slide.error = ""; slide.queries = []; }
  if (state === "completed") slide.output = content.result.output;
  if (state === "failed") slide.error = content.error;
  $("slides-section").hidden = false;
  renderSlides();
  const done = [...run.slides.values()].filter((s) => ["completed", "failed", "cancelled"].includes(s.state)).length;
  if (run.running) setStatus("solving", { done, n: run.slides.size });
}

function toolEvent(event) {
  const meta = event.metadata || {};
  let entry = run.steps.get(event.step_id);
  if (!entry) {
    entry = { sql: (meta.args && meta.args.sql) || JSON.stringify(meta.args || {}), status: "running", data: null, error: "" };
    run.steps.set(event.step_id, entry);
    if (meta.scope === "plan") run.planQueries.push(entry);
    else if (meta.task_id != null) slideOf(run.slides.get(meta.task_id)?.task || { id: meta.task_id, title: "" }).queries.push(entry);
  }
  if (event.event === "agent.tool_result") {
    entry.status = meta.status;
    entry.data = meta.data || null;
    entry.error = meta.error || "";
  }
  if (meta.scope === "plan") renderPlan();
  else renderSlides();
}

function renderQueries(list, queries, heading) {
  list.replaceChildren();
  if (!queries.length) return;
  if (heading) list.append(el("li", { class: "heading" }, heading));
  for (const q of queries) {
    let outcome = t("queryRunning");
    if (q.status === "failed") outcome = t("queryFailed", { error: q.error.split("\n")[0] });
    else if (q.status === "success" && q.data) {
      const n = q.data.row_count;
      outcome = q.data.truncated ? t("queryRowsCut", { shown: q.data.rows.length, n }) : t(n === 1 ? "queryRow" : "queryRows", { n });
    }
    list.append(el("li", { class: q.status }, el("code", {}, q.sql), el("div", { class: "outcome" }, outcome)));
  }
}

function renderSlides() {
  const cards = [...run.slides.values()].sort((a, b) => a.task.id - b.task.id).map((slide) => {
    const card = el("article", { class: `slide ${slide.state}`, "data-task-id": String(slide.task.id) });
    const title = slide.output ? slide.output.title : slide.task.title;
    card.append(el("header", {}, el("h3", {}, `${slide.task.id}. ${title}`), el("span", { class: `badge ${slide.state}` }, t(`state_${slide.state}`))));
    const queries = el("ol", { class: "queries" });
    renderQueries(queries, slide.queries, "");
    card.append(queries);
    if (slide.output) {
      card.append(el("p", { class: "text" }, slide.output.text));
      for (const chart of slide.output.charts || []) card.append(chartView(chart));
    }
    if (slide.error) card.append(el("p", { class: "error" }, slide.error));
    if (run.running) {
      const actions = el("div", { class: "actions" });
      const cancel = el("button", { type: "button", class: "small cancel-slide" }, t("cancelSlide"));
      cancel.disabled = !["queued", "running", "restarted"].includes(slide.state);
      cancel.onclick = () => sendInSession("user.cancel_task", { content: { task_id: slide.task.id } });
      const restart = el("button", { type: "button", class: "small restart-slide" }, t("restartSlide"));
      restart.onclick = () => sendInSession("user.restart_task", { content: { task_id: slide.task.id } });
      actions.append(cancel, restart);
      card.append(actions);
    }
    return card;
  });
  $("slides").replaceChildren(...cards);
}

function chartView(chart) {
  const points = chart.data || [];
  const box = el("div", { class: "chart" }, el("div", { class: "ctitle" }, chart.title || ""));
  const ns = "http://www.w3.org/2000/svg";
  const row = 16;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 300 ${points.length * row + 4}`);
  const most = Math.max(...points.map((p) => Math.abs(p.value)), 1);
  points.forEach((point, i) => {
    const y = i * row + 2;
    const add = (tag, attrs, text) => {
      const node = document.createElementNS(ns, tag);
      for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
      if (text !== undefined) node.textContent = text;
      svg.append(node);
    };
    add("text", { class: "label", x: 0, y: y + 11 }, String(point.name).slice(0, 18));
    add("rect", { class: "bar", x: 100, y: y + 2, height: row - 5, width: Math.max(1, (130 * Math.abs(point.value)) / most) });
    add("text", { class: "value", x: 235, y: y + 11 }, Number(point.value).toLocaleString());
  });
  box.append(svg);
  return box;
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
  let answer;
  try {
    answer = await fetch("/api/plan-solve/runs", { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  } catch {
    return;
  }
  if (!answer.ok) return;
  const { runs } = await answer.json();
  $("runs-section").hidden = runs.length === 0;
  $("runs").replaceChildren(...runs.map((r) => {
    const item = el("li", { "data-run-id": r.run_id }, r.question, el("span", { class: "when" }, `${r.started_at.slice(0, 16).replace("T", " ")} · ${t(`status_${r.status}`)}`));
    if (r.deck) item.append(" ", el("a", { href: `/api/plan-solve/runs/${encodeURIComponent(r.run_id)}/deck.pptx`, download: "" }, ".pptx"));
    return item;
  }));
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
  connect();
}

// ---------------------------------------------------------------- wiring

$("start-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const question = $("question").value.trim();
  if (!question || !sessionId) return;
  run = freshRun();
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
$("replan-btn").onclick = () => { sendInSession("user.replan"); closeEditor(); };
$("add-task").onclick = () => {
  const ids = [...document.querySelectorAll("#task-list .task-edit")].map((row) => Number(row.dataset.taskId));
  const id = Math.max(0, ...ids, ...run.tasks.map((task) => task.id)) + 1;
  $("task-list").append(taskRow({ id, title: "", objective: "", chart_hint: "bar" }));
};
$("tool-allow").onclick = () => answerTool(true);
$("tool-deny").onclick = () => answerTool(false);
$("token-form").addEventListener("submit", (e) => { e.preventDefault(); saveToken($("token").value); });

mountPicker($("lang"));
onChange(() => {
  setStatus(...statusKey);
  $("conn").textContent = t($("conn").dataset.state === "open" ? "connected" : $("conn").dataset.state === "closed" ? "disconnected" : "connecting");
  renderPlan();
  renderSlides();
  loadRuns();
});
setStatus("idle");
connect();
