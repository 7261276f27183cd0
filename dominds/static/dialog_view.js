// The dialog on screen: header (agent, run state, cost, assignment), run controls, course navigation,
// transcript and composer. It follows exactly one dialog ("display_dialog", follow: "replace") and
// remembers the last seq it saw so a reconnect resumes without gaps or repeats.

import { apiGet, apiPost } from "./api.js";
import { Composer } from "./composer.js";
import { $, askInPage, debounce, h, toast } from "./dom.js";
import { badge, formatCost } from "./dialog_lists.js";
import { t } from "./i18n.js";

export class DialogView {
  constructor(conn, transcript, hooks) {
    this.conn = conn;
    this.transcript = transcript;
    this.hooks = hooks; // { onReady(ready), questionsFor(selfId), answer(question, text) }
    this.ref = null;
    this.info = null;
    this.epoch = null;
    this.lastSeq = 0;
    this.runStateSeq = 0;
    this.viewingCourse = null;
    this.snapshotRemaining = 0;
    this.pendingJump = null;
    this.awaitingCreate = false;
    this.refreshCost = debounce(() => this.loadCost(), 150);
    this.composer = new Composer(conn, { ref: () => this.ref, answer: (q, text) => hooks.answer(q, text) });
    this.wire();
  }

  wire() {
    $("#stop").addEventListener("click", () => this.command({ type: "interrupt_dialog" }));
    $("#ctl-resume").addEventListener("click", () => this.command({ type: "resume_dialog" }));
    $("#ctl-dead").addEventListener("click", async () => {
      const note = await askInPage({
        id: "declare-dead-dialog",
        title: t("declareDeadTitle"),
        text: t("declareDeadNote"),
        field: { multiline: true, placeholder: t("declareDeadPlaceholder"), label: t("declareDeadTitle") },
        confirm: t("declareDead"),
        cancel: t("cancel"),
        danger: true,
      });
      if (note !== null) this.command({ type: "declare_subdialog_dead", note });
    });
    $("#ctl-done").addEventListener("click", () => this.move("done"));
    $("#ctl-archive").addEventListener("click", () => this.move("archive"));
    $("#ctl-revive").addEventListener("click", () => this.move("run"));
    $("#course-prev").addEventListener("click", () => this.showCourse((this.viewingCourse || 1) - 1));
    $("#course-next").addEventListener("click", () => this.showCourse((this.viewingCourse || 1) + 1));
    $("#course-latest").addEventListener("click", () => this.open(this.ref));
    $("#dh-parent").addEventListener("click", (e) => {
      e.preventDefault();
      if (this.info?.supdialogId) this.open({ selfId: this.info.supdialogId, rootId: this.ref.rootId });
    });
  }

  /** Show a dialog; with `resume` the daemon sends only what this page missed since its last seq. */
  async open(ref, { resume = false, jumpTo = null } = {}) {
    this.pendingJump = jumpTo;
    const since = resume && this.ref?.selfId === ref.selfId && this.epoch && this.viewingCourse === this.info?.currentCourse
      ? { epoch: this.epoch, seq: this.lastSeq } : undefined;
    this.ref = { selfId: ref.selfId, rootId: ref.rootId };
    const message = { type: "display_dialog", dialog: this.ref, follow: "replace" };
    if (since) message.since = since;
    try {
      await this.conn.request(message);
    } catch (error) {
      toast(error.message, "error");
    }
  }

  /** Create a root dialog and show it (the reply is a dialog_ready for a dialog we do not know yet). */
  async create(agentId, taskDocPath) {
    this.awaitingCreate = true;
    this.pendingJump = null;
    try {
      return await this.conn.request({ type: "create_dialog", agentId: agentId || null, taskDocPath, follow: "replace" });
    } finally {
      this.awaitingCreate = false;
    }
  }

  onReady(ready) {
    if (!this.awaitingCreate && ready.dialog.selfId !== this.ref?.selfId) return;
    this.awaitingCreate = false;
    this.ref = ready.dialog;
    this.info = ready;
    this.epoch = ready.epoch;
    this.lastSeq = ready.seq;
    this.runStateSeq = ready.seq;
    this.viewingCourse = ready.currentCourse;
    if (ready.mode === "replay") {
      this.transcript.forgetQuestions();
      this.transcript.reset();
    }
    this.transcript.agentId = ready.agentId;
    $("#empty-state").hidden = true;
    $("#dialog-pane").hidden = false;
    this.renderHeader();
    this.loadCost();
    const pending = new Map([...this.hooks.questionsFor(ready.dialog.selfId), ...(ready.q4h || [])].map((q) => [q.id, q]));
    for (const question of pending.values()) this.transcript.markQuestion(question);
    this.composer.reset([...pending.values()], ready.queuedPrompts);
    this.snapshotRemaining = ready.eventCount || 0;
    if (!this.snapshotRemaining) this.snapshotDone();
    this.hooks.onReady(ready);
  }

  snapshotDone() {
    this.transcript.settle();
    const root = this.transcript.root;
    root.scrollTop = root.scrollHeight;
    if (this.pendingJump) {
      this.transcript.focusQuestion(this.pendingJump);
      this.pendingJump = null;
    }
  }

  /** Every event of the dialog on screen (live or replay) goes through here. */
  onEvent(event) {
    if (!this.ref || event.dialog?.selfId !== this.ref.selfId) return;
    if (!event.replay) this.lastSeq = Math.max(this.lastSeq, event.seq);
    this.composer.onEvent(event);
    if (event.type === "course_update" && event.requestId !== undefined) {
      // the reply to display_course: eventCount events of that course follow
      this.onCourse(event);
      this.snapshotRemaining = event.eventCount || 0;
      if (!this.snapshotRemaining) this.snapshotDone();
      return;
    }
    if (event.type === "dlg_run_state_evt") this.setRunState(event.runState, event.seq);
    else if (event.type === "course_update") this.onCourse(event);
    else if (event.replay || this.viewingCourse === this.info?.currentCourse) this.transcript.apply(event);
    if (event.type === "generating_finish_evt" && !event.replay) this.refreshCost();
    if (this.snapshotRemaining > 0) {
      this.snapshotRemaining -= 1;
      if (this.snapshotRemaining === 0) this.snapshotDone();
    }
  }

  onCourse(event) {
    if (event.replay) {
      this.viewingCourse = event.course;
      this.transcript.reset();
    } else {
      // clear_mind started a new course live: the new course begins empty
      this.info.currentCourse = event.course;
      this.viewingCourse = event.course;
      this.transcript.reset();
    }
    this.info.totalCourses = event.totalCourses;
    this.renderHeader();
  }

  async showCourse(course) {
    if (!this.info || course < 1 || course > this.info.totalCourses) return;
    if (course === this.info.currentCourse) {
      this.open(this.ref);
      return;
    }
    try {
      await this.conn.request({ type: "display_course", dialog: this.ref, course });
    } catch (error) {
      toast(error.message, "error");
    }
  }

  setRunState(runState, seq) {
    if (seq !== undefined && seq <= this.runStateSeq) return; // older than the state already shown
    if (seq !== undefined) this.runStateSeq = seq;
    if (!this.info) return;
    this.info.runState = runState;
    this.renderHeader();
    if (runState.kind !== "proceeding") this.refreshCost();
  }

  renderHeader() {
    const info = this.info;
    if (!info) return;
    $("#dh-agent").textContent = `@${info.agentId}`;
    $("#dh-id").textContent = info.dialog.selfId;
    $("#dh-state").replaceWith(Object.assign(badge(info.runState), { id: "dh-state" }));
    const parent = $("#dh-parent");
    parent.hidden = !info.supdialogId;
    const assignment = $("#dh-assignment");
    assignment.hidden = !info.assignmentFromSup;
    if (info.assignmentFromSup) {
      assignment.replaceChildren(h("span", { class: "head", text: info.assignmentFromSup.tellaskHead }),
        info.assignmentFromSup.tellaskBody ? h("span", { class: "body", text: ` ${info.assignmentFromSup.tellaskBody}` }) : null);
    }
    const viewing = this.viewingCourse || info.currentCourse;
    $("#course-label").textContent = t("course", { n: viewing, total: info.totalCourses });
    $("#course-prev").disabled = viewing <= 1;
    $("#course-next").disabled = viewing >= info.totalCourses;
    $("#course-latest").hidden = viewing === info.currentCourse;
    const running = info.status === "run";
    const kind = info.runState?.kind;
    const alive = running && kind !== "dead" && !info.loadError;
    $("#send").disabled = !alive;
    $("#input").disabled = !alive;
    $("#stop").disabled = !(kind === "proceeding" || kind === "stop_requested");
    $("#ctl-resume").hidden = !(running && kind === "interrupted");
    $("#ctl-dead").hidden = info.isRoot || kind === "dead" || !running;
    $("#ctl-done").hidden = !info.isRoot || info.status === "done";
    $("#ctl-archive").hidden = !info.isRoot || info.status === "archive";
    $("#ctl-revive").hidden = !info.isRoot || running;
  }

  async loadCost() {
    if (!this.ref) return;
    try {
      const usage = await apiGet(`/api/dialogs/${encodeURIComponent(this.ref.rootId)}/usage`);
      $("#dh-cost").textContent = formatCost(usage.total);
    } catch {
      $("#dh-cost").textContent = "";
    }
  }

  /** Send a message (a suggestion chip) or, without `text`, whatever the composer says it will do. */
  async send(text) {
    await this.composer.send(text);
  }

  async command(message) {
    if (!this.ref) return;
    try {
      await this.conn.request({ ...message, dialog: this.ref });
    } catch (error) {
      toast(error.message, "error");
    }
  }

  async move(toStatus) {
    try {
      await apiPost("/api/dialogs/move", { rootId: this.ref.rootId, toStatus });
      await this.open(this.ref);
    } catch (error) {
      toast(error.message, "error");
    }
  }
}
