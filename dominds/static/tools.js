// The Tools page: every toolset (built-in or MCP server), its state, its members and its tools, from
// GET /api/tools. Authenticated by the panel's session cookie (or open it once with ?auth=<token>).
// English or Chinese as the panel's language picker says (tools_messages.js).
import { apiGet } from "./api.js";
import { $, h } from "./dom.js";
import { MESSAGES } from "./tools_messages.js";
import { makeI18n } from "./workflow_i18n.js";

const { t, mountPicker, onChange } = makeI18n(MESSAGES);
let shown = null; // the last /api/tools answer, re-rendered when the language changes
let summary = null; // the last "Start MCP servers" outcome: [key, vars]

function row(ts) {
  const source = ts.source === "built-in"
    ? t("builtIn")
    : `MCP ${ts.transport} · ${ts.target || ""}${ts.stateful ? ` · ${t("stateful")}` : ""}`;
  const state = stateLabel(ts.state) + (ts.error ? `: ${ts.error}` : "") + (ts.restarts ? ` (${t("restarted", { n: ts.restarts })})` : "");
  const tools = ts.tools === null
    ? h("span", { class: "muted", text: t("notListed") })
    : ts.tools.map((tool) => h("code", { title: tool.description, text: tool.name }));
  // data-label: a narrow screen shows each row as a card, every cell under its column's name
  return h("tr", { dataset: { toolset: ts.name, state: ts.state } },
    h("td", { dataset: { label: t("colToolset") } }, h("strong", { text: ts.name })),
    h("td", { text: source, dataset: { label: t("colSource") } }),
    h("td", { class: `state state-${ts.state.replace(/ /g, "-")}`, text: state, dataset: { label: t("colState") } }),
    h("td", { text: (ts.members || []).join(", "), dataset: { label: t("colMembers") } }),
    h("td", { class: "tools", dataset: { label: t("colTools") } }, tools));
}

/** A state in the page's language; a state this page does not know is shown as the daemon names it. */
const stateLabel = (state) => (`state_${state}` in MESSAGES.en ? t(`state_${state}`) : state);

/** The empty state's sentence, its file and command names as code. */
function noMcpText() {
  const codes = { file: ".minds/mcp.yaml", docs: "dominds docs mcp", toolsets: "toolsets", team: ".minds/team.yaml" };
  return t("noMcp").split(/(\{\w+\})/).map((part) => {
    const name = part.match(/^\{(\w+)\}$/)?.[1];
    return name && codes[name] ? h("code", { text: codes[name] }) : document.createTextNode(part);
  });
}

function render() {
  $("#tools-no-mcp").replaceChildren(...noMcpText());
  if (summary) $("#tools-status").textContent = t(...summary);
  if (!shown) return;
  $("#tools-table tbody").replaceChildren(...shown.toolsets.map(row));
  $("#tools-no-mcp").hidden = shown.toolsets.some((ts) => ts.source !== "built-in");
}

async function load(connect = false) {
  $("#tools-error").hidden = true;
  try {
    const [data, problems] = await Promise.all([
      apiGet(connect ? "/api/tools?connect=1" : "/api/tools"),
      apiGet("/api/problems"),
    ]);
    shown = data;
    render();
    const mcp = problems.problems.filter((p) => p.source === ".minds/mcp.yaml");
    $("#tools-problems").hidden = mcp.length === 0;
    $("#tools-problems ul").replaceChildren(...mcp.map((p) =>
      h("li", { text: `${p.source}${p.line ? ":" + p.line : ""}: ${p.severity}: ${p.message}` })));
    return data;
  } catch (err) {
    $("#tools-error").textContent = t("cannotLoad", { error: err.message });
    $("#tools-error").hidden = false;
  }
}

$("#tools-refresh").addEventListener("click", () => load(false));
// Starting servers can take a while: say so, then say how it went (before, nothing showed until a reload)
$("#tools-connect").addEventListener("click", async () => {
  const button = $("#tools-connect");
  const status = $("#tools-status");
  button.disabled = true;
  status.hidden = false;
  summary = ["starting"];
  status.textContent = t(...summary);
  const data = await load(true);
  button.disabled = false;
  if (!data) {
    summary = null;
    status.hidden = true;
    return;
  }
  const servers = data.toolsets.filter((ts) => ts.source !== "built-in");
  const count = (state) => servers.filter((ts) => ts.state === state).length;
  summary = servers.length === 0
    ? ["noneToStart"]
    : ["startedSummary", { running: count("running"), unreachable: count("unreachable"), total: servers.length }];
  status.textContent = t(...summary);
});
mountPicker($("#lang"));
onChange(render);
render();
load(false);
