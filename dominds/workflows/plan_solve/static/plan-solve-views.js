// Pieces of the Plan & Solve page that only draw: queries with their outcome, a chart as SVG bars, a
// slide's card, a task's row in the plan editor.
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

const CHART_KINDS = ["bar", "line", "pie", "area", "none"];

/** A slide's card: title, state, queries, text and charts; ``actions`` ({cancel, restart}) while its run goes on. */
export function slideCard(slide, t, actions) {
  const card = el("article", { class: `slide ${slide.state}`, "data-task-id": String(slide.task.id) });
  const title = slide.output ? slide.output.title : slide.task.title;
  card.append(el("header", {}, el("h3", {}, `${slide.task.id}. ${title}`), el("span", { class: `badge ${slide.state}` }, t(`state_${slide.state}`))));
  const queries = el("ol", { class: "queries" });
  renderQueries(queries, slide.queries, "", t);
  card.append(queries);
  if (slide.output) {
    card.append(el("p", { class: "text" }, slide.output.text));
    for (const chart of slide.output.charts || []) card.append(chartView(chart));
  }
  if (slide.error) card.append(el("p", { class: "error" }, slide.error));
  if (actions) {
    const cancel = el("button", { type: "button", class: "small cancel-slide" }, t("cancelSlide"));
    cancel.disabled = !["queued", "running", "restarted"].includes(slide.state);
    cancel.onclick = () => actions.cancel(slide.task.id);
    const restart = el("button", { type: "button", class: "small restart-slide" }, t("restartSlide"));
    restart.onclick = () => actions.restart(slide.task.id);
    card.append(el("div", { class: "actions" }, cancel, restart));
  }
  return card;
}

/** A task's row in the plan editor (the row keeps the task: fields it does not show are sent back as they were). */
export function taskRow(task, t) {
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
