// The right-hand panels: every pending question of the workspace (Q4H), and the reminders and
// Taskdoc of the dialog on screen. The Taskdoc is shown as people read it: each section once, with the
// file it lives in and an Edit button that replaces that file atomically (POST /api/taskdocs/section,
// refused when the file changed since it was shown: taskdoc_editor.js then offers a diff, a reload and a
// copy of the user's text).

import { h, plainClick, setTrustedHtml, toast } from "./dom.js";
import { t } from "./i18n.js";
import { linkTo } from "./router.js";
import { editSection } from "./taskdoc_editor.js";

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
    }, h("a", {
      class: "question-link",
      href: linkTo({ selfId: q.selfId, rootId: q.rootId, question: q.id }),
      onclick: (e) => {
        if (!plainClick(e)) return;
        e.preventDefault();
        this.actions.jump(q);
      },
    },
    h("div", { class: "q-head", text: q.tellaskHead }),
    q.bodyContent ? h("div", { class: "q-body", text: q.bodyContent }) : null,
    h("div", { class: "q-meta", text: `${t("askedIn", { agent: q.agentId })} · ${q.selfId}` })))));
  }
}

export function renderReminders(list, empty, reminders) {
  list.replaceChildren(...(reminders || []).map((r) => h("li", { text: r.content })));
  empty.hidden = Boolean(reminders && reminders.length);
}

/** The title of a section key: goals, bearinmind/contracts, or an extra <category>/<selector>. */
function sectionTitle(section) {
  const key = `td_${section.key.replace("/", "_")}`;
  const known = t(key);
  if (known !== key) return known;
  return `${section.category} / ${section.selector}`;
}

export class TaskdocPanel {
  constructor(pathEl, bodyEl, conn) {
    this.pathEl = pathEl;
    this.bodyEl = bodyEl;
    this.conn = conn;
    this.payload = null;
  }

  render(payload) {
    this.payload = payload;
    this.pathEl.textContent = payload ? payload.taskDocPath : "";
    if (!payload) {
      this.bodyEl.replaceChildren();
      return;
    }
    const sections = (payload.sections || []).map((section) => {
      const content = h("div", { class: "md td-content" });
      if (section.html) setTrustedHtml(content, section.html);
      else content.append(h("p", { class: "muted", text: t("sectionEmpty") }));
      return h("section", { class: `td-section${section.exists ? "" : " missing"}`, dataset: { key: section.key } },
        h("header", { class: "td-head" },
          h("h3", { text: sectionTitle(section) }),
          h("button", {
            type: "button", class: "icon-btn small td-edit", title: section.readOnlyReason || t("editSection"),
            "aria-label": `${t("editSection")}: ${sectionTitle(section)}`, disabled: !section.editable,
            onclick: () => this.edit(section), text: "✎",
          })),
        h("code", { class: "td-file", text: section.file }),
        content);
    });
    const more = (payload.moreSections || []).length
      ? h("p", { class: "muted td-more", text: t("moreSections", { n: payload.moreSections.length }) }) : null;
    const notes = (payload.notes || []).length
      ? h("details", { class: "td-notes" }, h("summary", { text: t("taskdocNotes", { n: payload.notes.length }) }),
        h("ul", {}, payload.notes.map((n) => h("li", {}, h("code", { text: n.where }), ` ${n.kind}${n.detail ? `: ${n.detail}` : ""}`))))
      : null;
    this.bodyEl.replaceChildren(...sections, more || "", notes || "");
  }

  async edit(section) {
    const payload = this.payload;
    if (!payload) return;
    const fresh = await editSection({ taskDocPath: payload.taskDocPath, section, title: `${t("editSection")}: ${sectionTitle(section)}` });
    if (fresh === null) return;
    this.render(fresh);
    toast(t("sectionSaved", { file: section.file }));
  }
}
