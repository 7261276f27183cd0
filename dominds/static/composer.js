// The composer of the dialog on screen. It always says what Send will do: while the dialog has a pending
// question, Send answers the selected question, or — when the user picks "queue a message" — queues the
// text to be read after the answer. Every queued message (and every answer still waiting) is listed above
// the input until the agent reads it, with a Cancel button for the user's own messages: nothing is ever
// sent that the user cannot see. The daemon announces the queue (prompt_queued_evt,
// queued_prompt_cancelled_evt) and the end_of_user_saying_evt with the same msgId takes an entry out.
// Images pasted or dropped into the input are stored as artifacts of the dialog at once (POST
// /api/dialogs/<selfId>/artifacts), shown above the input, and sent as lines naming them: the daemon
// gives a vision-capable model the images themselves.

import { $, h, onCtrlEnter, randomId, toast } from "./dom.js";
import { t } from "./i18n.js";

export class Composer {
  /** actions: { ref(): the dialog ref or null, answer(question, text): Promise<bool sent>, drafts: Drafts,
   *   willSend?(content), sendSettled?(sent): around a message (not an answer) } */
  constructor(conn, actions) {
    this.conn = conn;
    this.actions = actions;
    this.drafts = actions.drafts;
    this.drafts.addEventListener("change", () => this.render());
    this.questions = new Map(); // questionId -> question of the dialog on screen
    this.queued = new Map(); // msgId -> queued prompt of the dialog on screen
    this.mode = "answer";
    this.target = null; // questionId the composer answers
    this.busy = false;
    this.input = $("#input");
    this.attachments = []; // {line, url} of images attached to the next message
    this.attachmentList = h("div", { id: "attachments", class: "attachments", hidden: true });
    this.input.before(this.attachmentList);
    this.input.addEventListener("paste", (e) => this.takeImages(e, e.clipboardData?.files));
    this.input.addEventListener("dragover", (e) => { if (e.dataTransfer?.types.includes("Files")) e.preventDefault(); });
    this.input.addEventListener("drop", (e) => this.takeImages(e, e.dataTransfer?.files));
    $("#send").addEventListener("click", () => this.send());
    $("#decline").addEventListener("click", () => this.decline());
    onCtrlEnter(this.input, () => this.send());
    $("#answer-target").addEventListener("change", (e) => {
      this.target = e.target.value;
      this.render();
    });
    for (const radio of document.querySelectorAll('input[name="composer-mode"]')) {
      radio.addEventListener("change", () => {
        this.mode = radio.value;
        this.render();
      });
    }
  }

  /** A dialog was (re)opened: its pending questions and its queue as the daemon reported them. */
  reset(questions, queued) {
    this.questions = new Map((questions || []).map((q) => [q.id, q]));
    this.queued = new Map((queued || []).map((p) => [p.msgId, p]));
    if (!this.questions.has(this.target)) this.target = null;
    this.mode = "answer";
    this.render();
  }

  addQuestion(question) {
    this.questions.set(question.id, question);
    this.render();
  }

  removeQuestion(questionId) {
    if (!this.questions.delete(questionId)) return;
    if (this.target === questionId) this.target = null;
    this.render();
  }

  /** Pick the question the composer answers (from the Q4H panel or a deep link). */
  selectQuestion(questionId) {
    if (!this.questions.has(questionId)) return;
    this.target = questionId;
    this.mode = "answer";
    this.render();
  }

  onEvent(event) {
    if (event.replay) return;
    if (event.type === "prompt_queued_evt") {
      this.queued.set(event.msgId, event);
      this.render();
    } else if (event.type === "queued_prompt_cancelled_evt" || event.type === "end_of_user_saying_evt") {
      if (this.queued.delete(event.msgId)) this.render();
    }
  }

  /** The questions Send can answer: one whose answer waits as a draft is answered already (a second
   * answer would be refused once the first arrives), unless the daemon refused that draft. */
  sortedQuestions() {
    const drafted = new Set(this.drafts.items.filter((d) => d.kind === "answer" && !d.refused).map((d) => d.questionId));
    return [...this.questions.values()].filter((q) => !drafted.has(q.id))
      .sort((a, b) => String(a.askedAt).localeCompare(String(b.askedAt)));
  }

  currentQuestion() {
    const questions = this.sortedQuestions();
    return questions.find((q) => q.id === this.target) || questions[0] || null;
  }

  render() {
    const question = this.currentQuestion();
    const answering = Boolean(question) && this.mode === "answer";
    const modeBar = $("#composer-mode");
    modeBar.hidden = !question;
    if (question) {
      const select = $("#answer-target");
      select.replaceChildren(...this.sortedQuestions().map((q) =>
        h("option", { value: q.id, selected: q.id === question.id }, shortText(q.tellaskHead.replace(/^(!\?)?@human\s*/, ""), 80))));
      for (const radio of document.querySelectorAll('input[name="composer-mode"]')) radio.checked = radio.value === (answering ? "answer" : "queue");
    }
    $("#composer").dataset.mode = !question ? "message" : answering ? "answer" : "queue";
    $("#send").textContent = !question ? t("send") : answering ? t("answer") : t("queueMessage");
    // an MCP server's question (elicitation) can be declined: the server hears "decline"
    $("#decline").hidden = !(answering && question.kind === "elicitation");
    this.input.placeholder = !question ? t("inputPlaceholder") : answering ? t("answerComposerPlaceholder") : t("queueComposerPlaceholder");
    $("#composer-hint").textContent = !question ? "" : answering
      ? t("composerWillAnswer", { question: shortText(question.tellaskHead.replace(/^(!\?)?@human\s*/, ""), 120) })
      : t("composerWillQueue");
    $("#composer-hint").hidden = !question;
    const list = $("#queued-list");
    const entries = [...this.queued.values()];
    const drafts = this.actions.ref() ? this.drafts.forDialog(this.actions.ref().selfId) : [];
    list.hidden = entries.length + drafts.length === 0;
    list.replaceChildren(...entries.map((p) => h("li", { class: `queued origin-${p.origin}`, dataset: { msgId: p.msgId } },
      h("span", { class: "queued-label", text: p.origin === "q4h_answer" ? t("queuedAnswer") : this.questions.size ? t("queuedAfterAnswer") : t("queuedMessage") }),
      h("span", { class: "queued-text", text: shortText(p.content, 300) }),
      p.cancellable ? h("button", { type: "button", class: "queued-cancel", text: t("cancel"), onclick: () => this.cancel(p.msgId) }) : null)),
    ...drafts.map((d) => this.draftEntry(d)));
  }

  /** A draft kept while the daemon was unreachable: sent on reconnect; a refused one can be edited. */
  draftEntry(d) {
    const label = d.refused ? t("draftRefused", { error: d.refused }) : t(d.kind === "answer" ? "draftAnswer" : "draftMessage");
    return h("li", { class: `queued draft${d.refused ? " refused" : ""}`, dataset: { msgId: d.msgId }, title: d.content },
      h("span", { class: "queued-label", text: label }),
      h("span", { class: "queued-text", text: shortText(d.content, 300) }),
      h("button", { type: "button", class: "draft-edit", text: t("editDraft"), onclick: () => {
        this.input.value = [this.input.value.trim(), d.content].filter(Boolean).join("\n");
        this.drafts.drop(d.msgId);
        this.input.focus();
      } }),
      h("button", { type: "button", class: "draft-discard", text: t("discardDraft"), onclick: () => this.drafts.drop(d.msgId) }));
  }

  async decline() {
    const question = this.currentQuestion();
    if (!question || question.kind !== "elicitation") return;
    try {
      await this.actions.answer(question, "decline");
    } catch (error) {
      toast(error.message, "error");
    }
  }

  async cancel(msgId) {
    const ref = this.actions.ref();
    if (!ref) return;
    try {
      await this.conn.request({ type: "cancel_queued_msg", dialog: ref, msgId });
    } catch (error) {
      toast(error.message, "error");
    }
  }

  /** Images pasted or dropped into the input: each is stored in the dialog and shown until sent. */
  takeImages(event, files) {
    const images = [...(files || [])].filter((file) => file.type.startsWith("image/"));
    if (!images.length) return;
    event.preventDefault();
    for (const file of images) this.attach(file);
  }

  async attach(file) {
    const ref = this.actions.ref();
    if (!ref) return;
    try {
      const response = await fetch(`/api/dialogs/${encodeURIComponent(ref.selfId)}/artifacts`, {
        method: "POST", credentials: "same-origin", headers: { "Content-Type": file.type, Accept: "application/json" }, body: file,
      });
      const data = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error(data.error || `${response.status} ${response.statusText}`);
      this.attachments.push({ line: data.line, url: data.url, preview: URL.createObjectURL(file) });
      this.renderAttachments();
    } catch (error) {
      toast(error.message, "error");
    }
  }

  renderAttachments() {
    this.attachmentList.hidden = this.attachments.length === 0;
    this.attachmentList.replaceChildren(...this.attachments.map((a, index) => h("span", { class: "attachment", dataset: { url: a.url } },
      h("img", { src: a.preview, alt: a.url.split("/").pop() }),
      h("button", { type: "button", class: "attachment-remove", text: "×", title: t("cancel"), onclick: () => {
        this.attachments.splice(index, 1);
        this.renderAttachments();
      } }))));
  }

  /** Send the input (or `text`): an answer to the selected question, or a message (queued if need be).
   * True when the daemon took it; false when nothing was sent, it was refused, or it is kept as a draft. */
  async send(text) {
    const ref = this.actions.ref();
    const typed = (text ?? this.input.value).trim();
    const attached = text === undefined ? this.attachments.map((a) => a.line) : [];
    const content = [typed, ...attached].filter(Boolean).join("\n");
    if (!content || !ref || this.busy) return false;
    const question = text === undefined ? this.currentQuestion() : null;
    this.busy = true;
    try {
      const answering = question && this.mode === "answer";
      if (!answering) this.actions.willSend?.(content);
      const sent = answering
        ? await this.actions.answer(question, content)
        : await this.drafts.submit({ kind: "message", dialog: { selfId: ref.selfId, rootId: ref.rootId }, content, msgId: randomId("ui-") });
      if (!answering) this.actions.sendSettled?.(sent);
      if (!sent) toast(t("draftKept"));
      if (text === undefined) {
        this.input.value = "";
        this.attachments = [];
        this.renderAttachments();
      }
      return sent;
    } catch (error) {
      toast(error.message, "error");
      this.actions.sendSettled?.(false);
      return false;
    } finally {
      this.busy = false;
    }
  }
}

function shortText(text, limit) {
  const flat = String(text || "").replace(/\s+/g, " ").trim();
  return flat.length > limit ? `${flat.slice(0, limit - 1)}…` : flat;
}
