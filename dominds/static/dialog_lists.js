// Running / Done / Archived lists: each root with its subdialog tree, live run-state badges,
// pending-question counts and the tree's cost. The tree comes from GET /api/dialogs; badges are
// then updated in place from dlg_run_state_evt broadcasts without refetching.

import { apiGet } from "./api.js";
import { h } from "./dom.js";
import { runStateLabel, t } from "./i18n.js";

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

export class DialogLists {
  constructor(root, tabs, actions) {
    this.root = root;
    this.tabs = tabs;
    this.actions = actions; // { open(ref) }
    this.status = "run";
    this.trees = [];
    this.currentSelfId = null;
    for (const tab of tabs) tab.addEventListener("click", () => this.show(tab.dataset.status));
  }

  show(status) {
    this.status = status;
    for (const tab of this.tabs) tab.classList.toggle("active", tab.dataset.status === status);
    this.render();
  }

  async refresh() {
    try {
      const { dialogs } = await apiGet("/api/dialogs");
      this.trees = dialogs;
      this.render();
    } catch (error) {
      this.root.replaceChildren(h("p", { class: "form-error", text: String(error.message || error) }));
    }
  }

  find(selfId) {
    const walk = (nodes) => {
      for (const node of nodes) {
        if (node.selfId === selfId) return node;
        const found = walk(node.subdialogs || []);
        if (found) return found;
      }
      return null;
    };
    return walk(this.trees);
  }

  render() {
    for (const tab of this.tabs) {
      const count = this.trees.filter((tree) => tree.status === tab.dataset.status).length;
      tab.querySelector(".tab-count").textContent = count ? String(count) : "";
    }
    const roots = this.trees.filter((tree) => tree.status === this.status);
    if (!roots.length) {
      this.root.replaceChildren(h("p", { class: "muted", text: t("noDialogs") }));
      return;
    }
    this.root.replaceChildren(h("ul", { class: "tree" }, roots.map((root) => this.item(root, true))));
  }

  item(node, isRoot) {
    const row = h("div", {
      class: `row${node.selfId === this.currentSelfId ? " current" : ""}`,
      dataset: { selfId: node.selfId },
      role: "button",
      tabindex: "0",
      title: node.tellaskHead || node.taskDocPath || "",
      onclick: () => this.actions.open({ selfId: node.selfId, rootId: node.rootId }),
      onkeydown: (e) => { if (e.key === "Enter") this.actions.open({ selfId: node.selfId, rootId: node.rootId }); },
    },
    badge(node.runState),
    h("span", { class: "agent", text: `@${node.agentId ?? "?"}` }),
    isRoot ? h("span", { class: "taskdoc", text: node.taskDocPath || "" }) : h("span", { class: "head", text: (node.tellaskHead || "").split("\n")[0] }),
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

  setCurrent(selfId) {
    this.currentSelfId = selfId;
    for (const row of this.root.querySelectorAll(".row")) row.classList.toggle("current", row.dataset.selfId === selfId);
  }
}
