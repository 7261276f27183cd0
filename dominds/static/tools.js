// The Tools page: every toolset (built-in or MCP server), its state, its members and its tools, from
// GET /api/tools. Authenticated by the panel's session cookie (or open it once with ?auth=<token>).
import { apiGet } from "./api.js";
import { $, h } from "./dom.js";

function row(ts) {
  const source = ts.source === "built-in" ? "built-in" : `MCP ${ts.transport} · ${ts.target || ""}${ts.stateful ? " · stateful" : ""}`;
  const state = ts.state + (ts.error ? `: ${ts.error}` : "") + (ts.restarts ? ` (restarted ${ts.restarts}×)` : "");
  const tools = ts.tools === null
    ? h("span", { class: "muted", text: "not listed yet (the server starts when a member needs it)" })
    : ts.tools.map((tool) => h("code", { title: tool.description, text: tool.name }));
  return h("tr", { dataset: { toolset: ts.name } },
    h("td", {}, h("strong", { text: ts.name })),
    h("td", { text: source }),
    h("td", { class: `state state-${ts.state.replace(/ /g, "-")}`, text: state }),
    h("td", { text: (ts.members || []).join(", ") }),
    h("td", { class: "tools" }, tools));
}

async function load(connect = false) {
  $("#tools-error").hidden = true;
  try {
    const [data, problems] = await Promise.all([
      apiGet(connect ? "/api/tools?connect=1" : "/api/tools"),
      apiGet("/api/problems"),
    ]);
    $("#tools-table tbody").replaceChildren(...data.toolsets.map(row));
    $("#tools-no-mcp").hidden = data.toolsets.some((ts) => ts.source !== "built-in");
    const mcp = problems.problems.filter((p) => p.source === ".minds/mcp.yaml");
    $("#tools-problems").hidden = mcp.length === 0;
    $("#tools-problems ul").replaceChildren(...mcp.map((p) =>
      h("li", { text: `${p.source}${p.line ? ":" + p.line : ""}: ${p.severity}: ${p.message}` })));
    return data;
  } catch (err) {
    $("#tools-error").textContent = `Cannot load the tools: ${err.message}`;
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
  status.textContent = "Starting the MCP servers…";
  const data = await load(true);
  button.disabled = false;
  if (!data) {
    status.hidden = true;
    return;
  }
  const servers = data.toolsets.filter((ts) => ts.source !== "built-in");
  const count = (state) => servers.filter((ts) => ts.state === state).length;
  status.textContent = servers.length === 0
    ? "No MCP servers to start."
    : `MCP servers: ${count("running")} running, ${count("unreachable")} unreachable, ${servers.length} in all.`;
});
load(false);
