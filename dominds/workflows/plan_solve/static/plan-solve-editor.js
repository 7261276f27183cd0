// The plan editor of the Plan & Solve page: while a run waits for the user to confirm its plan, each task
// is an editable row (plan-solve-views.js's taskRow), with the time the confirmation has left.

import { taskRow } from "/plan-solve/static/plan-solve-views.js";

const $ = (id) => document.getElementById(id);
let confirmTimer = null;

/** Shows the tasks as editable rows in place of the plan's list, counting down `timeoutSeconds`. */
export function openEditor(tasks, timeoutSeconds, t) {
  $("task-list").replaceChildren(...tasks.map((task) => taskRow(task, t)));
  $("plan-editor").hidden = false;
  $("plan-tasks").hidden = true;
  let left = Math.floor(timeoutSeconds || 0);
  clearInterval(confirmTimer);
  const tick = () => { $("confirm-timer").textContent = left > 0 ? t("confirmTimer", { seconds: left }) : ""; left -= 1; };
  tick();
  confirmTimer = setInterval(tick, 1000);
}

export function closeEditor() {
  clearInterval(confirmTimer);
  $("plan-editor").hidden = true;
  $("plan-tasks").hidden = false;
}

export function editorOpen() {
  return !$("plan-editor").hidden;
}

/** The tasks as edited (fields a row does not show are sent back as they were). */
export function editedTasks() {
  return [...document.querySelectorAll("#task-list .task-edit")].map((row) => ({
    ...row.task,
    title: row.querySelector(".task-title").value.trim(),
    objective: row.querySelector(".task-objective").value.trim(),
    chart_hint: row.querySelector(".task-chart").value,
  }));
}

/** Adds an empty task with the next id (past every id of the rows and of `tasks`). */
export function addTaskRow(tasks, t) {
  const ids = [...document.querySelectorAll("#task-list .task-edit")].map((row) => Number(row.dataset.taskId));
  const id = Math.max(0, ...ids, ...tasks.map((task) => task.id)) + 1;
  $("task-list").append(taskRow({ id, title: "", objective: "", chart_hint: "bar" }, t));
}
