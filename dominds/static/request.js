// What the model saw for one generation (GET /api/dialogs/{selfId}/requests/{genseq}): the request as sent
// to the provider, its figures (tokens, latency, retries, cost), then its parts: system prompt, messages,
// tools and parameters, read from the body in the shape of its API. The exact bytes are one link away
// (…/body). Authenticated by the panel's cookie.
import { apiGet } from "./api.js";
import { $, h } from "./dom.js";
import { linkTo } from "./router.js";

const params = new URLSearchParams(location.search);
const selfId = params.get("self") || "";
const rootId = params.get("root") || selfId;
const genseq = params.get("genseq") || "";
const course = params.get("course");

const ms = (v) => (v == null ? "–" : v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${v} ms`);
const size = (n) => (n >= 1048576 ? `${(n / 1048576).toFixed(1)} MB` : n >= 1024 ? `${(n / 1024).toFixed(1)} kB` : `${n} B`);
const pretty = (value) => (typeof value === "string" ? value : JSON.stringify(value, null, 2));

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    // a block's text, a tool result's text, or its kind ([tool_use], [image]…)
    return content.map((b) => (typeof b === "string" ? b : b.text ?? b.thinking ?? (typeof b.content === "string" ? b.content : `[${b.type}]`)))
      .filter(Boolean).join("\n");
  }
  return "";
}

/** The body's parts in the shape of its API (docs/observability.md). */
function partsOf(apiType, body) {
  if (!body || typeof body !== "object" || Array.isArray(body)) return null;
  const taken = new Set(["messages", "input", "system", "instructions", "tools"]);
  let system = body.system ?? body.instructions ?? null;
  let messages = body.messages ?? body.input ?? [];
  if ((apiType === "openai" || apiType === "openai-compatible") && Array.isArray(messages)) {
    const first = messages.filter((m) => m.role === "system" || m.role === "developer");
    if (first.length) system = first.map((m) => textOf(m.content)).join("\n\n");
    messages = messages.filter((m) => !(m.role === "system" || m.role === "developer"));
  }
  if (typeof messages === "string") messages = [{ role: "user", content: messages }];
  const rest = Object.fromEntries(Object.entries(body).filter(([key]) => !taken.has(key)));
  return { system: system == null ? null : textOf(system) || pretty(system), messages, tools: body.tools || [], rest };
}

function item(label, detail, content, extraClass = "", text = pretty(content)) {
  const summary = h("summary", {}, h("span", { class: "rq-role", text: label }), detail || "");
  summary.append(h("span", { class: "rq-size", text: size(new Blob([text]).size) }));
  return h("details", { class: `rq-item ${extraClass}` }, summary, h("pre", { class: "rq-pre", text }));
}

function section(id, title, ...children) {
  return h("div", { class: "rq-section", id }, h("h2", { text: title }), ...children);
}

/** A message's text as text (line breaks kept), then its other fields as JSON. */
function messageText(m) {
  if (!m || typeof m !== "object" || typeof m.content !== "string") return pretty(m);
  const { content, ...rest } = m;
  return `${content}\n\n${JSON.stringify(rest, null, 2)}`;
}

function messageLabel(m) {
  return m.role ?? m.type ?? "item";
}

function preview(m) {
  const text = textOf(m.content) || (m.type ? m.name || m.call_id || "" : "");
  return text.length > 90 ? `${text.slice(0, 90)}…` : text;
}

function figures(v) {
  const g = v.generation || {};
  const u = g.usage;
  const rows = [
    ["Dialog", `${v.dialog.selfId}${v.dialog.selfId !== v.dialog.rootId ? ` (in ${v.dialog.rootId})` : ""}`],
    ["Generation", `#${v.genseq} of course ${v.course}`],
    ["Model", `${v.provider}/${v.model} (${v.apiType})`],
    ["Sent to", `${v.method} ${v.url}`],
    ["Body", `${size(v.size)} · sha256 ${v.sha256.slice(0, 16)}…`],
    ["Attempts", `${v.attempts} (${v.retries} ${v.retries === 1 ? "retry" : "retries"})`],
    ["Latency", `first output ${ms(v.firstOutputMs)} · total ${ms(v.totalMs)}`],
  ];
  if (g.status) rows.push(["Ended", `${g.status}${g.finishReason ? ` (${g.finishReason})` : ""}`]);
  if (u) {
    rows.push(["Tokens", `${u.inputTokens} in · ${u.cacheReadTokens} cache read · ${u.cacheWriteTokens} cache write · `
      + `${u.outputTokens} out${u.reasoningTokens ? ` (${u.reasoningTokens} reasoning)` : ""}`]);
  }
  if (g.costText) rows.push(["Cost", g.costText]);
  return rows.flatMap(([k, val]) => [h("dt", { text: k }), h("dd", { text: val, dataset: { figure: k.toLowerCase() } })]);
}

async function load() {
  const error = (text) => {
    $("#rq-error").hidden = false;
    $("#rq-error").textContent = text;
  };
  if (!selfId || !/^\d+$/.test(genseq)) {
    error("No generation named: open a request from a reply's Request link.");
    return;
  }
  $("#rq-back").href = linkTo({ selfId, rootId, ...(course ? { course: Number(course) } : {}) });
  $("#rq-heading").textContent = `Request of reply #${genseq}`;
  const query = course ? `?course=${encodeURIComponent(course)}` : "";
  const path = `/api/dialogs/${encodeURIComponent(selfId)}/requests/${genseq}`;
  $("#rq-raw").href = `${path}/body${query}`;
  let v;
  try {
    v = await apiGet(path + query);
  } catch (e) {
    error(e.message);
    return;
  }
  $("#rq-figures").replaceChildren(...figures(v));
  const parts = partsOf(v.apiType, v.body);
  const sections = [];
  if (parts) {
    if (parts.system != null) sections.push(section("rq-system", "System prompt", item("system", "", parts.system, "rq-system-item")));
    sections.push(section("rq-messages", `Messages (${parts.messages.length})`,
      ...parts.messages.map((m, i) => item(`${i + 1}. ${messageLabel(m)}`, preview(m), m, "rq-message", messageText(m)))));
    sections.push(section("rq-tools", `Tools (${parts.tools.length})`,
      ...parts.tools.map((t) => item(t.name ?? t.function?.name ?? t.type ?? "tool", "", t, "rq-tool"))));
    sections.push(section("rq-params", "Parameters", h("pre", { class: "rq-pre", text: pretty(parts.rest) })));
  }
  sections.push(section("rq-json", "The whole request", item("JSON", "", v.body ?? "(not JSON: see the exact bytes)", "rq-whole")));
  $("#rq-sections").replaceChildren(...sections);
}

load();
