// A dialog tree on a time axis (GET /api/dialogs/{rootId}/timeline): one row per dialog, a bar per
// generation (its provider call darker inside it) and per tool call, a mark per tellask. Hover a bar for
// its figures; click a generation to open the dialog at its course. Authenticated by the panel's cookie.
import { apiGet } from "./api.js";
import { $, h } from "./dom.js";
import { linkTo } from "./router.js";

const params = new URLSearchParams(location.search);
const rootId = params.get("root") || "";

const seconds = (ms) => (ms >= 10000 ? `${(ms / 1000).toFixed(0)} s` : ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`);

function bar(kind, left, width, title, extra = {}) {
  return h("div", { class: `tl-bar ${kind}`, style: `left:${left}%;width:${Math.max(width, 0.15)}%`, title, ...extra });
}

function dialogRow(dialog, start, span) {
  const at = (t) => ((t - start) / span) * 100;
  const track = h("div", { class: "tl-track" });
  for (const g of dialog.generations) {
    const total = g.end - g.start;
    const failed = g.status === "error" || g.status === "interrupted";
    const tip = [`#${g.genseq} (course ${g.course}) ${g.status}`, `total ${seconds(total)}`,
      g.durationMs != null ? `provider ${seconds(g.durationMs)}` : null, g.model ? `model ${g.model}` : null,
      g.usage ? `tokens ${g.usage.input} in / ${g.usage.output} out` : null].filter(Boolean).join("\n");
    const el = bar(`gen${failed ? " failed" : ""}`, at(g.start), (total / span) * 100, tip, {
      dataset: { genseq: g.genseq, course: g.course },
      onclick: () => { location.href = linkTo({ selfId: dialog.selfId, rootId, course: g.course }); },
    });
    if (g.durationMs != null && total > 0) {
      el.append(h("div", { class: "tl-provider", style: `width:${Math.min(100, (g.durationMs / total) * 100)}%` }));
    }
    track.append(el);
  }
  for (const c of dialog.calls) {
    if (c.kind === "tellask") {
      track.append(h("div", { class: "tl-mark tellask", style: `left:${at(c.start)}%`, title: `tellask @${c.name}` }));
      continue;
    }
    const end = c.end ?? c.start;
    track.append(bar(`tool${c.isError ? " failed" : ""}`, at(c.start), ((end - c.start) / span) * 100,
      `${c.name} ${seconds(end - c.start)}${c.end == null ? " (no result)" : ""}`, { dataset: { tool: c.name } }));
  }
  const label = h("a", { class: "tl-label", href: linkTo({ selfId: dialog.selfId, rootId }), text: `@${dialog.agentId}`,
    title: dialog.selfId });
  return h("div", { class: "tl-row", dataset: { selfId: dialog.selfId } }, label, track);
}

async function load() {
  if (!rootId) {
    $("#tl-error").hidden = false;
    $("#tl-error").textContent = "No dialog named: open the timeline from a dialog's header.";
    return;
  }
  $("#tl-back").href = linkTo({ selfId: rootId, rootId });
  try {
    const data = await apiGet(`/api/dialogs/${encodeURIComponent(rootId)}/timeline`);
    const gens = data.dialogs.reduce((n, d) => n + d.generations.length, 0);
    if (data.start == null) {
      $("#tl-summary").textContent = "No generation yet.";
      return;
    }
    const span = Math.max(1, data.end - data.start);
    $("#tl-summary").textContent = `${data.dialogs.length} dialog(s), ${gens} generation(s) over ${seconds(span)}`
      + (data.truncated ? " (the newest only)" : "");
    $("#tl-rows").replaceChildren(...data.dialogs.map((d) => dialogRow(d, data.start, span)));
  } catch (error) {
    $("#tl-error").hidden = false;
    $("#tl-error").textContent = error.message;
  }
}

load();
