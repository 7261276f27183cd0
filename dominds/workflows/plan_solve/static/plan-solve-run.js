// A run as the Plan & Solve page keeps it, and how the seed's events change it (no drawing here: the page
// draws from this state after each change, and a past run from plan-solve-past.js has the same shape).

/** A run before its first event. */
export function freshRun() {
  return { id: null, question: "", running: false, tasks: [], slides: new Map(), planQueries: [], steps: new Map(), summary: "", confirmStep: null, toolStep: null, deckReady: false };
}

/** The slide of a task (created queued on its first mention), holding the task as last sent. */
function slideOf(run, task) {
  let slide = run.slides.get(task.id);
  if (!slide) {
    slide = { task, state: "queued", output: null, error: "", queries: [] };
    run.slides.set(task.id, slide);
  }
  slide.task = task;
  return slide;
}

/** Applies a `solver.*` event to its slide; returns how many slides have ended. */
export function applySolverEvent(run, event) {
  const content = event.content;
  const slide = slideOf(run, content.task);
  const state = event.event.slice("solver.".length);
  slide.state = state === "start" ? "running" : state;
  if (state === "start" || state === "restarted") { slide.output = null; slide.error = ""; slide.queries = []; }
  if (state === "completed") slide.output = content.result.output;
  if (state === "failed") slide.error = content.error;
  return [...run.slides.values()].filter((s) => ["completed", "failed", "cancelled"].includes(s.state)).length;
}

/** Applies an `agent.tool_call` / `agent.tool_result` to its query (the planner's, or a slide's);
 * returns the query's scope (`plan` or not). */
export function applyToolEvent(run, event) {
  const meta = event.metadata || {};
  let entry = run.steps.get(event.step_id);
  if (!entry) {
    entry = { sql: (meta.args && meta.args.sql) || JSON.stringify(meta.args || {}), status: "running", data: null, error: "" };
    run.steps.set(event.step_id, entry);
    if (meta.scope === "plan") run.planQueries.push(entry);
    else if (meta.task_id != null) slideOf(run, run.slides.get(meta.task_id)?.task || { id: meta.task_id, title: "" }).queries.push(entry);
  }
  if (event.event === "agent.tool_result") {
    entry.status = meta.status;
    entry.data = meta.data || null;
    entry.error = meta.error || "";
  }
  return meta.scope;
}
