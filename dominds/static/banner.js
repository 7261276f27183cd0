// The configuration-problems banner: every problem of .minds/ files (and provider or MCP failures) with
// its file and line, visible without hovering. Errors keep the list open; warnings alone fold it to a
// one-line summary the user can expand.

import { $, h } from "./dom.js";
import { t } from "./i18n.js";

let problems = [];
let expanded = null; // null = the default for what is shown (open when there is an error)

export function renderProblems(list) {
  problems = [...(list || [])].sort((a, b) => rank(a) - rank(b));
  render();
}

function rank(problem) {
  if (problem.kind === "config_fallback") return 0;
  return problem.severity === "error" ? 1 : 2;
}

function render() {
  const banner = $("#problem-banner");
  // The config_fallback note says what is in use because of the errors it names: not one more problem.
  const counted = problems.filter((p) => p.kind !== "config_fallback");
  const errors = counted.filter((p) => p.severity === "error").length;
  const warnings = counted.length - errors;
  banner.hidden = problems.length === 0;
  banner.dataset.severity = errors ? "error" : "warning";
  const open = expanded ?? errors > 0;
  $("#pb-title").textContent = errors
    ? t(warnings ? "bannerErrors" : "bannerErrorsOnly", { n: errors, w: warnings })
    : t("bannerWarnings", { n: warnings });
  $("#pb-toggle").textContent = open ? t("hide") : t("show");
  $("#pb-toggle").setAttribute("aria-expanded", String(open));
  $("#pb-list").hidden = !open;
  $("#pb-list").replaceChildren(...problems.map((p) => h("li", { class: `problem severity-${p.severity} kind-${p.kind}` },
    h("code", { class: "where", text: p.line ? `${p.source}:${p.line}` : p.source }),
    h("span", { class: "severity", text: p.severity === "error" ? t("error") : t("warning") }),
    h("span", { class: "message", text: p.message }))));
  const chip = $("#problems");
  chip.hidden = problems.length === 0;
  chip.textContent = `⚠ ${t("problems", { n: counted.length || problems.length })}`;
}

export function wireBanner() {
  const toggle = () => {
    const errors = problems.some((p) => p.severity === "error");
    expanded = !(expanded ?? errors);
    render();
  };
  $("#pb-toggle").addEventListener("click", toggle);
  $("#problems").addEventListener("click", () => {
    expanded = true;
    render();
    $("#problem-banner").scrollIntoView({ block: "nearest" });
  });
}

export function refreshBannerLanguage() {
  render();
}
