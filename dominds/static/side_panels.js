// The right-hand panels: every pending question of the workspace (Q4H), and the reminders and
// Taskdoc of the dialog on screen.

import { h, setTrustedHtml } from "./dom.js";
import { t } from "./i18n.js";

export class QuestionsPanel {
  constructor(list, empty, counters, actions) {
    this.list = list;
    this.empty = empty;
    this.counters = counters;
    this.actions = actions; // { jump(question) }
    this.questions = new Map();
  }

  replaceAll(questions) {
    this.questions = new Map(questions.map((q) => [q.id, q]));
    this.render();
  }

  add(question) {
    this.questions.set(question.id, question);
    this.render();
  }

  remove(questionId) {
    if (this.questions.delete(questionId)) this.render();
  }

  forDialog(selfId) {
    return [...this.questions.values()].filter((q) => q.selfId === selfId);
  }

  render() {
    const count = this.questions.size;
    for (const counter of this.counters) {
      counter.textContent = String(count);
      counter.dataset.count = String(count);
    }
    this.empty.hidden = count > 0;
    const sorted = [...this.questions.values()].sort((a, b) => String(a.askedAt).localeCompare(String(b.askedAt)));
    this.list.replaceChildren(...sorted.map((q) => h("li", {
      class: "question",
      dataset: { questionId: q.id },
      role: "button",
      tabindex: "0",
      onclick: () => this.actions.jump(q),
      onkeydown: (e) => { if (e.key === "Enter") this.actions.jump(q); },
    },
    h("div", { class: "q-head", text: q.tellaskHead }),
    q.bodyContent ? h("div", { class: "q-body", text: q.bodyContent }) : null,
    h("div", { class: "q-meta", text: `${t("askedIn", { agent: q.agentId })} · ${q.selfId}` }))));
  }
}

export function renderReminders(list, empty, reminders) {
  list.replaceChildren(...(reminders || []).map((r) => h("li", { text: r.content })));
  empty.hidden = Boolean(reminders && reminders.length);
}

export function renderTaskdoc(pathEl, bodyEl, payload) {
  pathEl.textContent = payload ? payload.taskDocPath : "";
  if (payload) setTrustedHtml(bodyEl, payload.html);
  else bodyEl.replaceChildren();
}
