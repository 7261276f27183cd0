// Which parts of the panel are shown, at any width (the breakpoints are in style.css):
// - wide (≥ 1200 px): dialog list | conversation | side panels; either side can be collapsed;
// - medium (760–1199 px): the side panels are a drawer over the conversation (closed by default);
// - phone (< 760 px): one column, tabs at the bottom choose Dialogs / Conversation / Questions.
// The user's choice of collapsed panels on wide screens is remembered in localStorage.

import { $ } from "./dom.js";

const PHONE = window.matchMedia("(max-width: 759px)");
const MEDIUM = window.matchMedia("(max-width: 1199px)");
const STORE = "dominds.layout";

const layout = $("#layout");
let saved = {};
try {
  saved = JSON.parse(localStorage.getItem(STORE) || "{}") || {};
} catch {
  saved = {};
}

export function isPhone() {
  return PHONE.matches;
}

function remember() {
  localStorage.setItem(STORE, JSON.stringify(saved));
}

function apply() {
  const sidebarOpen = saved.sidebar !== "closed";
  layout.dataset.sidebar = sidebarOpen ? "open" : "closed";
  if (MEDIUM.matches) {
    if (layout.dataset.rightbar !== "open") layout.dataset.rightbar = "closed";
  } else {
    layout.dataset.rightbar = saved.rightbar === "closed" ? "closed" : "open";
  }
  $("#toggle-sidebar").setAttribute("aria-expanded", String(sidebarOpen));
  $("#toggle-rightbar").setAttribute("aria-expanded", String(layout.dataset.rightbar === "open"));
  for (const tab of document.querySelectorAll("#pane-tabs button")) {
    if (tab.dataset.pane === layout.dataset.pane) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
}

/** On a phone, bring a pane to the front ("list", "dialog" or "side"); elsewhere, open what shows it. */
export function showPane(pane) {
  layout.dataset.pane = pane;
  if (!PHONE.matches && pane === "side") openRightbar(true);
  apply();
}

export function openRightbar(open) {
  if (MEDIUM.matches) layout.dataset.rightbar = open ? "open" : "closed";
  else {
    saved.rightbar = open ? "open" : "closed";
    remember();
  }
  apply();
}

export function closeDrawers() {
  if (MEDIUM.matches && layout.dataset.rightbar === "open") {
    layout.dataset.rightbar = "closed";
    apply();
  }
}

export function wireLayout() {
  $("#toggle-sidebar").addEventListener("click", () => {
    saved.sidebar = saved.sidebar === "closed" ? "open" : "closed";
    remember();
    apply();
  });
  $("#toggle-rightbar").addEventListener("click", () => openRightbar(layout.dataset.rightbar !== "open"));
  $("#scrim").addEventListener("click", closeDrawers);
  for (const tab of document.querySelectorAll("#pane-tabs button")) tab.addEventListener("click", () => showPane(tab.dataset.pane));
  const more = $("#more");
  $("#more-btn").addEventListener("click", (event) => {
    event.stopPropagation();
    const open = !more.hasAttribute("data-open");
    more.toggleAttribute("data-open", open);
    $("#more-btn").setAttribute("aria-expanded", String(open));
  });
  document.addEventListener("click", (event) => {
    if (more.hasAttribute("data-open") && !more.contains(event.target)) {
      more.removeAttribute("data-open");
      $("#more-btn").setAttribute("aria-expanded", "false");
    }
  });
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    if (more.hasAttribute("data-open")) {
      more.removeAttribute("data-open");
      $("#more-btn").setAttribute("aria-expanded", "false");
    } else closeDrawers();
  });
  PHONE.addEventListener("change", apply);
  MEDIUM.addEventListener("change", apply);
  if (PHONE.matches && !new URL(location.href).searchParams.get("dialog")) layout.dataset.pane = "list";
  apply();
}
