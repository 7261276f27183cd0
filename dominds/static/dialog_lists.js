// Running / Done / Archived lists: each root with its subdialog tree, title, live run-state badge,
// pending-question count and the tree's cost. Search and filters (agent, state, Taskdoc, has-question)
// work on the loaded trees and live in the URL; workflow runs are grouped under their workflow instead
// of flooding the list. The trees come from GET /api/dialogs, a page per status (the LIST_PAGE most
// recently active trees, more on demand: a whole listing of 100,000 dialogs is seconds of work and
// megabytes); badges are then updated in place from dlg_run_state_evt broadcasts, titles from
// dialog_retitled. A dialog opened by a link whose tree is not in the loaded pages is fetched alone and
// shown after them. Search and filters cover the loaded trees.

import { apiGet } from "./api.js";
import { $, h, plainClick } from "./dom.js";
import { runStateLabel, t } from "./i18n.js";
import { linkTo, patchRoute, readRoute } from "./router.js";

const GROUPS_KEY = "dominds.openGroups";
const STATUSES = ["run", "done", "archive"];
/** Trees asked for per status at a time (GET /api/dialogs?status=…&limit=…). */
export const LIST_PAGE = 50;

/** A subdialog's head without the "@agent" it starts with: the row shows the agent just before it. */
export function withoutAgent(head, agentId) {
  const mention = `@${agentId}`;
  return head.startsWith(mention) && /^\s/.test(head.slice(mention.length)) ? head.slice(mention.length).trimStart() : head;
}

/** A subdialog's title from its call's headline: the first line without the callee's @mention and the
 * `!tellaskSession <slug>` directive (the list showed "!tellaskSession demo-build Write a plan…"). */
export function headlineTitle(head, agentId) {
  const line = withoutAgent(String(head || "").split("\n")[0].replace(/^!\?/, "").trim(), agentId);
  return line.replace(/(^|\s)!tellaskSession\s+\S+/g, " ").replace(/\s+/g, " ").trim();
}

/** The title the daemon gives a dialog from its first message (driver/titles.py title_from_message):
 * its first non-empty line without Tellask or markdown markers, at most 80 characters. */
export function titleFromMessage(content) {
  for (const line of String(content || "").split("\n")) {
    const text = line.replace(/^\s*(?:!\?|[#>*-]+\s)*\s*/, "").replace(/\s+/g, " ").trim();
    if (text) return text.length <= 80 ? text : `${text.slice(0, 79).trimEnd()}…`;
  }
  return null;
}

/** When a dialog was started, short: the time today, else the date and time (two dialogs with the same
 * first message had identical rows). */
export function startedAt(iso) {
  const when = iso ? new Date(iso) : null;
  if (!when || Number.isNaN(when.getTime())) return "";
  const today = new Date().toDateString() === when.toDateString();
  const locale = document.documentElement.lang || undefined;
  return today
    ? when.toLocaleTimeString(locale, { hour: "2-digit", minute: "2-digit", second: "2-digit" })
    : when.toLocaleString(locale, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

/** A tree's cost as the daemon wrote it (driver/usage.py formats it once for the panel and the CLI). */
export function formatCost(cost) {
  if (!cost) return "";
  return `${cost.costText} · ${cost.tokensText} tok`;
}

export function badge(runState) {
  const kind = runState?.kind || "idle";
  const reason = runState?.reason || "";
  return h("span", { class: `badge state-${kind}${reason ? ` reason-${reason}` : ""}`, text: runStateLabel(runState) });
}

/** Which filter bucket a run state falls in (the State filter's values). */
function stateBucket(runState) {
  const kind = runState?.kind || "idle";
  if (kind === "proceeding" || kind === "stop_requested") return "running";
  if (kind === "blocked") return String(runState.reason || "").includes("human") ? "needs_you" : "waiting";
  if (kind === "interrupted") return "interrupted";
  if (kind === "error" || kind === "dead") return "failed";
  return "idle";
}

const STATE_FILTERS = [
  ["running", "filterRunning"],
  ["needs_you", "filterNeedsYou"],
  ["waiting", "filterWaiting"],
  ["idle", "filterIdle"],
  ["interrupted", "filterInterrupted"],
  ["failed", "filterFailed"],
];

function* walk(node) {
  yield node;
  for (const child of node.subdialogs || []) yield* walk(child);
}

export class DialogLists {
  constructor(root, tabs, actions) {
    this.root = root;
    this.tabs = tabs;
    this.actions = actions; // { open(ref) }
    const route = readRoute();
    this.status = ["run", "done", "archive"].includes(route.tab) ? route.tab : "run";
    this.filter = { q: route.q || "", agent: route.agent || "", state: route.state || "", taskdoc: route.taskdoc || "", asks: route.asks === "1" };
    this.trees = [];
    this.listed = { run: [], done: [], archive: [] }; // status -> trees of its loaded pages, in listing order
    this.limits = { run: LIST_PAGE, done: LIST_PAGE, archive: LIST_PAGE }; // status -> trees asked for
    this.more = { run: 0, done: 0, archive: 0 }; // status -> trees the daemon has beyond the loaded pages
    this.tickets = { run: 0, done: 0, archive: 0 }; // status -> its latest request (an older answer is dropped)
    this.created = new Map(); // selfId -> node of a dialog created here that no listing has shown yet
    this.pinned = new Map(); // rootId -> tree of a dialog opened here (a link) that the loaded pages lack
    this.pinning = new Set(); // rootIds being fetched for this.pinned
    this.wanted = null; // { selfId, rootId } of the dialog on screen, to pin once a listing is in
    this.loaded = false;
    this.currentSelfId = null;
    try {
      this.openGroups = new Set(JSON.parse(localStorage.getItem(GROUPS_KEY) || "[]"));
    } catch {
      this.openGroups = new Set();
    }
    for (const tab of tabs) tab.addEventListener("click", () => this.show(tab.dataset.status));
    this.wireFilters();
  }

  wireFilters() {
    const search = $("#search");
    search.value = this.filter.q;
    search.addEventListener("input", () => this.setFilter({ q: search.value }));
    for (const [id, key] of [["#f-agent", "agent"], ["#f-state", "state"], ["#f-taskdoc", "taskdoc"]]) {
      $(id).addEventListener("change", (e) => this.setFilter({ [key]: e.target.value }));
    }
    $("#f-asks").checked = this.filter.asks;
    $("#f-asks").addEventListener("change", (e) => this.setFilter({ asks: e.target.checked }));
    $("#f-clear").addEventListener("click", () => {
      search.value = "";
      this.setFilter({ q: "", agent: "", state: "", taskdoc: "", asks: false });
    });
    if (this.filter.agent || this.filter.state || this.filter.taskdoc || this.filter.asks) $("#filters").open = true;
  }

  setFilter(patch) {
    Object.assign(this.filter, patch);
    const f = this.filter;
    patchRoute({ q: f.q.trim() || null, agent: f.agent || null, state: f.state || null, taskdoc: f.taskdoc || null, asks: f.asks ? "1" : null });
    this.render();
  }

  show(status) {
    this.status = status;
    patchRoute({ tab: status === "run" ? null : status });
    this.render();
  }

  /** A dialog this page just created, shown at once (the list said "No dialogs here" until the next
   * listing); kept until a listing has it, so a listing that started before the creation cannot drop it. */
  addCreated(node) {
    this.created.set(node.selfId, { subdialogs: [], q4hCount: 0, ...node });
    this.compose();
    this.loaded = true;
    this.render();
  }

  /** Ask again for the loaded pages of ``statuses`` (as many trees as are shown, or one more page). */
  async refresh(statuses = STATUSES) {
    try {
      await Promise.all([...statuses.map((status) => this.loadStatus(status)), ...[...this.pinned.keys()].map((rootId) => this.loadPinned(rootId))]);
      this.compose();
      this.loaded = true;
      this.render();
      if (this.wanted) this.reveal(this.wanted);
    } catch (error) {
      // the daemon is away (the list is refreshed on reconnect): keep the list shown, not "Failed to fetch"
      if (this.loaded) return;
      this.root.replaceChildren(h("p", { class: "form-error", text: String(error.message || error) }));
    }
  }

  async loadStatus(status) {
    const ticket = ++this.tickets[status];
    const { dialogs, more } = await apiGet(`/api/dialogs?status=${status}&limit=${this.limits[status]}`);
    if (ticket !== this.tickets[status]) return; // a newer request of this status answers instead
    this.listed[status] = dialogs;
    this.more[status] = more || 0;
  }

  /** The tree of ``rootId`` alone, kept in ``this.pinned`` (dropped when the daemon no longer has it). */
  async loadPinned(rootId) {
    try {
      const { hierarchy } = await apiGet(`/api/dialogs/${encodeURIComponent(rootId)}/hierarchy`);
      this.pinned.set(rootId, hierarchy);
    } catch (error) {
      if (error.status === 404) this.pinned.delete(rootId); // deleted since
      else throw error;
    }
  }

  /** One more page of ``status``'s trees. */
  async loadMore(status) {
    this.limits[status] = Math.max(this.limits[status], this.listed[status].length) + LIST_PAGE;
    await this.refresh([status]);
  }

  /** ``this.trees``: the loaded pages, then dialogs created here and trees pinned, none twice. */
  compose() {
    const listed = STATUSES.flatMap((status) => this.listed[status]);
    const roots = new Set(listed.map((tree) => tree.rootId));
    for (const id of [...this.created.keys()]) if (roots.has(this.created.get(id).rootId)) this.created.delete(id);
    for (const tree of this.created.values()) roots.add(tree.rootId);
    for (const rootId of [...this.pinned.keys()]) if (roots.has(rootId)) this.pinned.delete(rootId);
    this.trees = [...listed, ...this.created.values(), ...this.pinned.values()];
  }

  /** Trees of ``status`` that the daemon has and this list does not show. */
  notLoaded(status) {
    const pinned = [...this.pinned.values()].filter((tree) => tree.status === status).length;
    return Math.max(0, this.more[status] - pinned);
  }

  /** Show the dialog on screen in the list even when its tree is past the loaded pages (a deep link). */
  async reveal(ref) {
    this.wanted = ref;
    if (!this.loaded || !ref.rootId || this.find(ref.selfId) || this.pinned.has(ref.rootId) || this.pinning.has(ref.rootId)) return;
    this.pinning.add(ref.rootId);
    try {
      await this.loadPinned(ref.rootId);
    } catch {
      return; // the daemon is away: tried again after the next listing
    } finally {
      this.pinning.delete(ref.rootId);
    }
    this.compose();
    this.render();
  }

  find(selfId) {
    for (const tree of this.trees) {
      for (const node of walk(tree)) if (node.selfId === selfId) return node;
    }
    return null;
  }

  matches(tree) {
    const f = this.filter;
    const nodes = [...walk(tree)];
    if (f.agent && !nodes.some((n) => n.agentId === f.agent)) return false;
    if (f.taskdoc && tree.taskDocPath !== f.taskdoc) return false;
    if (f.asks && !(tree.q4hTotal > 0)) return false;
    if (f.state && !nodes.some((n) => stateBucket(n.runState) === f.state)) return false;
    const q = f.q.trim().toLowerCase();
    if (!q) return true;
    return nodes.some((n) => [n.title, n.agentId && `@${n.agentId}`, n.taskDocPath, n.selfId, n.tellaskHead]
      .some((text) => text && String(text).toLowerCase().includes(q)));
  }

  renderFilterChoices() {
    const agents = [...new Set(this.trees.flatMap((tree) => [...walk(tree)].map((n) => n.agentId)).filter(Boolean))].sort();
    const taskdocs = [...new Set(this.trees.map((tree) => tree.taskDocPath).filter(Boolean))].sort();
    const options = (select, anyKey, values, current) => {
      const all = current && !values.some(([v]) => v === current) ? [...values, [current, current]] : values;
      select.replaceChildren(h("option", { value: "", text: t(anyKey) }),
        ...all.map(([value, label]) => h("option", { value, selected: value === current, text: label })));
    };
    options($("#f-agent"), "anyAgent", agents.map((a) => [a, `@${a}`]), this.filter.agent);
    options($("#f-state"), "anyState", STATE_FILTERS.map(([v, key]) => [v, t(key)]), this.filter.state);
    options($("#f-taskdoc"), "anyTaskdoc", taskdocs.map((p) => [p, p]), this.filter.taskdoc);
    const active = [this.filter.agent, this.filter.state, this.filter.taskdoc, this.filter.asks].filter(Boolean).length;
    const badgeEl = $("#filter-count");
    badgeEl.hidden = !active;
    badgeEl.textContent = String(active);
    badgeEl.dataset.count = String(active);
  }

  render() {
    for (const tab of this.tabs) {
      tab.classList.toggle("active", tab.dataset.status === this.status);
      tab.setAttribute("aria-selected", String(tab.dataset.status === this.status));
      const status = tab.dataset.status;
      const count = this.trees.filter((tree) => tree.status === status).length + (this.notLoaded(status) || 0);
      tab.querySelector(".tab-count").textContent = count ? String(count) : "";
    }
    this.renderFilterChoices();
    if (!this.loaded) return;
    const inTab = this.trees.filter((tree) => tree.status === this.status);
    const shown = inTab.filter((tree) => this.matches(tree));
    const more = this.moreControl(this.status);
    if (!inTab.length && !more) {
      this.root.replaceChildren(h("p", { class: "muted", text: t("noDialogs") }));
      return;
    }
    if (!shown.length) {
      this.root.replaceChildren(h("p", { class: "muted no-matches", text: t("noMatches") }), ...(more ? [more] : []));
      return;
    }
    const plain = shown.filter((tree) => !tree.conductor);
    const byWorkflow = new Map();
    for (const tree of shown.filter((tree) => tree.conductor)) {
      if (!byWorkflow.has(tree.conductor)) byWorkflow.set(tree.conductor, []);
      byWorkflow.get(tree.conductor).push(tree);
    }
    const filtering = shown.length !== inTab.length;
    this.root.replaceChildren(
      ...(filtering ? [h("p", { class: "list-note", text: t("shownOf", { n: shown.length, total: inTab.length }) })] : []),
      h("ul", { class: "tree" },
        ...[...byWorkflow].map(([name, runs]) => this.group(name, runs, filtering)),
        ...plain.map((tree) => this.item(tree, true))),
      ...(more ? [more] : []));
  }

  /** "N more" and a button that loads the next page of ``status``, or null when all are loaded. */
  moreControl(status) {
    const left = this.notLoaded(status);
    if (!left) return null;
    const button = h("button", { type: "button", class: "show-more", text: t("showMore", { n: Math.min(left, LIST_PAGE) }) });
    button.addEventListener("click", async () => {
      button.disabled = true;
      await this.loadMore(status);
      button.disabled = false; // still on screen only when the request failed (a render replaces it)
    });
    return h("div", { class: "list-more", dataset: { more: String(left) } },
      h("span", { class: "muted", text: t("moreDialogs", { n: left }) }), button);
  }

  group(name, runs, filtering) {
    const key = `${this.status}:${name}`;
    const open = filtering || this.openGroups.has(key) || runs.some((r) => [...walk(r)].some((n) => n.selfId === this.currentSelfId));
    const running = runs.filter((r) => stateBucket(r.runState) === "running").length;
    const label = t(`workflow_${name}`) === `workflow_${name}` ? name : t(`workflow_${name}`);
    const li = h("li", { class: "group", dataset: { workflow: name }, "data-open": open || null },
      h("button", { type: "button", class: "group-head", "aria-expanded": String(open), onclick: () => {
        if (this.openGroups.has(key)) this.openGroups.delete(key);
        else this.openGroups.add(key);
        localStorage.setItem(GROUPS_KEY, JSON.stringify([...this.openGroups]));
        this.render();
      } },
      h("span", { class: "chev", text: "▸" }),
      h("span", { class: "group-name", text: t("workflowRuns", { name: label, n: runs.length }) }),
      running ? h("span", { class: "badge state-proceeding", text: t("workflowRunning", { n: running }) }) : null),
      h("ul", {}, runs.map((tree) => this.item(tree, true))));
    return li;
  }

  item(node, isRoot) {
    const ref = { selfId: node.selfId, rootId: node.rootId };
    const open = (event) => {
      if (!plainClick(event)) return; // a new tab: let the link work
      event.preventDefault();
      this.actions.open(ref);
    };
    const title = isRoot ? node.title : node.title || headlineTitle(node.tellaskHead, node.agentId) || node.tellaskSession || "";
    const row = h("a", {
      class: `row${node.selfId === this.currentSelfId ? " current" : ""}`,
      href: linkTo(ref),
      dataset: { selfId: node.selfId },
      title: node.tellaskHead || node.title || node.taskDocPath || "",
      onclick: open,
    },
    isRoot ? h("span", { class: `title${title ? "" : " untitled"}`, text: title || t("untitled") }) : null,
    badge(node.runState),
    h("span", { class: "agent", text: `@${node.agentId ?? "?"}` }),
    isRoot && node.createdAt ? h("time", { class: "when", dateTime: node.createdAt, title: new Date(node.createdAt).toLocaleString(), text: startedAt(node.createdAt) }) : null,
    isRoot ? h("span", { class: "taskdoc", text: node.taskDocPath || "" }) : h("span", { class: "head", text: title }),
    node.q4hCount ? h("span", { class: "count q4h", title: t("pendingQuestions"), text: String(node.q4hCount) }) : null,
    isRoot && node.cost ? h("span", { class: "cost", text: formatCost(node.cost) }) : null);
    const children = node.subdialogs || [];
    return h("li", {}, row, children.length ? h("ul", {}, children.map((child) => this.item(child, false))) : null);
  }

  /** Apply a live run-state change to the badge (and the cached tree). */
  updateRunState(selfId, runState) {
    const node = this.find(selfId);
    if (node) node.runState = runState;
    const row = this.root.querySelector(`.row[data-self-id="${CSS.escape(selfId)}"]`);
    if (row) row.querySelector(".badge").replaceWith(badge(runState));
    return Boolean(node);
  }

  updateTitle(selfId, title) {
    const node = this.find(selfId);
    if (!node) return false;
    node.title = title;
    this.render();
    return true;
  }

  /** The dialog on screen: its row is marked, and its tree is fetched when no loaded page has it. */
  setCurrent(selfId, rootId = null) {
    this.currentSelfId = selfId;
    if (rootId) this.reveal({ selfId, rootId });
    for (const row of this.root.querySelectorAll(".row")) row.classList.toggle("current", row.dataset.selfId === selfId);
  }
}
