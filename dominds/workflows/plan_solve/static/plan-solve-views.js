// Pieces of the Plan & Solve page that only draw: queries with their outcome, a chart as SVG bars.
// Model-written text goes in through textContent, never innerHTML.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const child of children) node.append(child);
  return node;
}

/** The queries of a step, each with its row count or error; ``t`` is the page's translator. */
export function renderQueries(list, queries, heading, t) {
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

export function chartView(chart) {
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
