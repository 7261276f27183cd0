// The dialog on screen: header (title, agent, run state, tree cost, assignment), run controls, course
// navigation, transcript and composer. It follows exactly one dialog ("display_dialog", follow: "replace")
// and remembers the last seq it saw so a reconnect resumes without gaps or repeats. What it shows is in
// the address (router.js): the dialog, the course, and a call site or question to bring into view.
// A course is shown a page at a time (docs/protocol.md §4 Paging): the daemon sends the last page, and
// scrolling to the top (or the "earlier" bar) asks for the page before; a link to a call that is not on
// screen asks for the page around it, a window that then grows both ways as the reader scrolls.

import { apiGet, apiPost } from "./api.js";
import { Composer } from "./composer.js";
import { badge, formatCost, headlineTitle, titleFromMessage } from "./dialog_lists.js";
import { $, askInPage, debounce, h, setTrustedHtml, toast } from "./dom.js";
import { t } from "./i18n.js";
import { goToDialog, linkTo, patchRoute } from "./router.js";

export class DialogView {
  constructor(conn, transcript, hooks) {
    this.conn = conn;
    this.transcript = transcript;
    this.hooks = hooks; // { onReady(ready), questionsFor(selfId), answer(question, text), onMissing(ref), drafts }
    this.ref = null;
    this.info = null;
    this.epoch = null;
    this.lastSeq = 0;
    this.runStateSeq = 0;
    this.viewingCourse = null;
    this.snapshotRemaining = 0;
    this.target = null; // {course, call, question} to bring into view once the snapshot is complete
    this.awaitingCreate = false;
    this.starting = null; // {title} of a dialog created with its first message on the way (create())
    this.page = null; // {course, from, to, total}: the records of the course on screen
    this.pageLoad = null; // {mode: "prepend"|"append"|"window", started, remaining, events[]}
    this.earlier = h("button", { type: "button", class: "load-earlier", text: t("loadEarlier"), onclick: () => this.loadEarlier() });
    this.refreshCost = debounce(() => this.loadCost(), 150);
    this.composer = new Composer(conn, {
      ref: () => this.ref, answer: (q, text) => hooks.answer(q, text), drafts: hooks.drafts,
      willSend: (content) => this.willSend(content), sendSettled: (sent) => this.sendSettled(sent),
    });
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
    $("#course-latest").addEventListener("click", () => this.showCourse(this.info?.currentCourse));
    this.transcript.root.addEventListener("scroll", () => this.onScroll(), { passive: true });
    $("#dh-parent").addEventListener("click", (e) => {
      e.preventDefault();
      if (this.info?.supdialogId) this.navigate({ selfId: this.info.supdialogId, rootId: this.ref.rootId });
    });
    $("#dh-rename").addEventListener("click", () => this.rename());
    $("#dh-link").addEventListener("click", () => this.copyLink({ ...this.ref, course: this.courseInLink() }));
  }

  /** Open a dialog as a user action: a history entry, then the daemon's snapshot. */
  navigate(ref, target = {}) {
    goToDialog({ ...ref, ...target });
    return this.open(ref, target);
  }

  /** Show a dialog; with `resume` the daemon sends only what this page missed since its last seq. */
  async open(ref, { resume = false, force = false, course = null, call = null, question = null } = {}) {
    const wanted = Number(course) || null;
    this.target = { course: wanted, call, question };
    const sameDialog = this.ref?.selfId === ref.selfId;
    if (!sameDialog && !this.awaitingCreate) this.starting = null;
    const since = resume && sameDialog && this.epoch && this.viewingCourse === this.info?.currentCourse && !this.windowed()
      ? { epoch: this.epoch, seq: this.lastSeq } : undefined;
    const shown = sameDialog && this.info && !resume && !force && this.snapshotRemaining === 0;
    if (shown && wanted && wanted !== this.viewingCourse) {
      await this.showCourse(wanted, { keepTarget: true });
      return;
    }
    if (shown && (wanted || this.info.currentCourse) === this.viewingCourse) {
      this.bringTargetIntoView(); // already on screen: only scroll to what the link names
      return;
    }
    this.ref = { selfId: ref.selfId, rootId: ref.rootId || ref.selfId };
    const message = { type: "display_dialog", dialog: this.ref, follow: "replace" };
    if (since) message.since = since;
    try {
      await this.conn.request(message);
    } catch (error) {
      if (/unknown dialog|no dialog|could not be loaded|not a dialog id/i.test(error.message)) {
        this.ref = null;
        this.info = null;
        this.hooks.onMissing?.(ref);
      } else toast(error.message, "error");
    }
  }

  /** Create a root dialog and show it (the reply is a dialog_ready for a dialog we do not know yet).
   * With `firstMessage` (a suggestion about to be sent), the header names the dialog after it and says
   * it is starting, not "(untitled) idle", until the daemon's title and run state arrive. */
  async create(agentId, taskDocPath, firstMessage = null) {
    this.awaitingCreate = true;
    this.target = null;
    this.starting = firstMessage ? { title: titleFromMessage(firstMessage) } : null;
    try {
      const ready = await this.conn.request({ type: "create_dialog", agentId: agentId || null, taskDocPath, follow: "replace" });
      goToDialog({ selfId: ready.dialog.selfId, rootId: ready.dialog.rootId });
      return ready;
    } catch (error) {
      this.starting = null;
      throw error;
    } finally {
      this.awaitingCreate = false;
    }
  }

  onReady(ready) {
    if (!this.awaitingCreate && ready.dialog.selfId !== this.ref?.selfId) return;
    if (this.awaitingCreate) this.hooks.onCreated?.(ready, this.starting?.title || null); // listed as it is shown
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
    this.transcript.ref = { ...ready.dialog, course: ready.currentCourse };
    this.transcript.agentId = ready.agentId;
    this.transcript.supdialogId = ready.supdialogId || null;
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
    const wanted = this.target?.course;
    if (wanted && wanted !== this.viewingCourse && this.info && wanted <= this.info.totalCourses) {
      this.showCourse(wanted, { keepTarget: true });
      return;
    }
    this.bringTargetIntoView();
  }

  bringTargetIntoView() {
    const target = this.target;
    this.target = null;
    if (!target) return;
    if (target.question) {
      if (this.transcript.focusQuestion({ id: target.question })) this.composer.selectQuestion(target.question);
    } else if (target.call) {
      if (!this.transcript.focusCall(target.call) && this.page?.from > 0) this.loadAround(target.call);
    }
  }

  // -- paging ------------------------------------------------------------------------------------

  /** The course on screen is a window that does not reach its end: live events wait for "latest". */
  windowed() {
    return Boolean(this.page && this.page.to !== null && this.page.total !== null && this.page.to < this.page.total);
  }

  showEarlierBar() {
    const root = this.transcript.root;
    if (this.page?.from > 0) {
      this.earlier.disabled = false;
      this.earlier.textContent = t("loadEarlier");
      if (root.firstChild !== this.earlier) root.prepend(this.earlier);
    } else this.earlier.remove();
  }

  onScroll() {
    const root = this.transcript.root;
    if (this.pageLoad || !this.page || this.snapshotRemaining > 0) return;
    if (root.scrollTop < 120 && this.page.from > 0) this.loadEarlier();
    else if (this.windowed() && root.scrollHeight - root.scrollTop - root.clientHeight < 120) this.loadLater();
  }

  async requestPage(mode, fields) {
    if (this.pageLoad || !this.page || !this.ref) return;
    this.pageLoad = { mode, started: false, remaining: 0, events: [] };
    if (mode === "prepend") {
      this.earlier.disabled = true;
      this.earlier.textContent = t("loadingEarlier");
    }
    try {
      await this.conn.request({ type: "display_course", dialog: this.ref, course: this.page.course, ...fields });
    } catch (error) {
      this.pageLoad = null;
      this.showEarlierBar();
      toast(error.message, "error");
    }
  }

  loadEarlier() {
    if (this.page?.from > 0) this.requestPage("prepend", { before: this.page.from });
  }

  loadLater() {
    if (this.windowed()) this.requestPage("append", { after: this.page.to });
  }

  loadAround(call) {
    this.target = { call };
    this.requestPage("window", { aroundCall: call });
  }

  /** An event of a page being loaded: the course_update that starts it, then its events. */
  takePageEvent(event) {
    const load = this.pageLoad;
    if (!load.started) {
      if (event.type !== "course_update" || event.requestId === undefined) return false;
      load.started = true;
      load.remaining = event.eventCount || 0;
      load.head = event;
    } else {
      load.events.push(event);
      load.remaining -= 1;
    }
    if (load.remaining === 0) this.pageDone(load);
    return true;
  }

  pageDone(load) {
    this.pageLoad = null;
    const head = load.head;
    if (load.mode === "window") {
      const target = this.target;
      this.onCourse(head);
      for (const event of load.events) this.transcript.apply(event);
      this.transcript.settle();
      this.target = target;
      this.bringTargetIntoView();
      this.renderHeader();
      return;
    }
    if (load.mode === "prepend") {
      this.page.from = head.fromRecord;
      this.transcript.prepend(load.events, this.earlier);
    } else {
      this.page.to = head.toRecord;
      this.page.total = head.totalRecords;
      for (const event of load.events) this.transcript.apply(event);
      if (!this.windowed() && this.viewingCourse === this.info?.currentCourse) {
        // the window reached the live end: show it as a follower again (new events may have come)
        this.open(this.ref, { force: true });
        return;
      }
    }
    this.showEarlierBar();
    this.renderHeader();
  }

  /** Every event of the dialog on screen (live or replay) goes through here. */
  onEvent(event) {
    if (!this.ref || event.dialog?.selfId !== this.ref.selfId) return;
    if (!event.replay) this.lastSeq = Math.max(this.lastSeq, event.seq);
    if (this.pageLoad && event.replay && this.takePageEvent(event)) return;
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
    else if (event.replay || (this.viewingCourse === this.info?.currentCourse && !this.windowed())) this.transcript.apply(event);
    if (event.type === "generating_finish_evt" && !event.replay) this.refreshCost();
    if (this.snapshotRemaining > 0) {
      this.snapshotRemaining -= 1;
      if (this.snapshotRemaining === 0) this.snapshotDone();
    }
  }

  onCourse(event) {
    if (!event.replay) this.info.currentCourse = event.course; // clear_mind started a new course live
    this.viewingCourse = event.course;
    this.pageLoad = null;
    this.page = { course: event.course, from: event.fromRecord || 0, to: event.toRecord ?? null, total: event.totalRecords ?? null };
    this.transcript.reset();
    this.showEarlierBar();
    this.transcript.ref = { ...this.ref, course: event.course };
    this.info.totalCourses = event.totalCourses;
    this.renderHeader();
  }

  async showCourse(course, { keepTarget = false } = {}) {
    if (!this.info || !course || course < 1 || course > this.info.totalCourses) return;
    if (!keepTarget) {
      this.target = null;
      patchRoute({ course: course === this.info.currentCourse ? null : course, call: null, question: null });
    }
    this.pageLoad = null;
    if (course === this.info.currentCourse) {
      await this.open(this.ref, { ...(keepTarget ? this.target : {}), course: null, force: true });
      return;
    }
    try {
      await this.conn.request({ type: "display_course", dialog: this.ref, course });
    } catch (error) {
      toast(error.message, "error");
    }
  }

  courseInLink() {
    return this.info && this.viewingCourse !== this.info.currentCourse ? this.viewingCourse : null;
  }

  setRunState(runState, seq) {
    if (seq !== undefined && seq <= this.runStateSeq) return; // older than the state already shown
    if (seq !== undefined) this.runStateSeq = seq;
    if (!this.info) return;
    this.info.runState = runState;
    if (runState.kind !== "idle") this.starting = null; // the daemon has taken the first message up
    this.renderHeader();
    if (runState.kind !== "proceeding") this.refreshCost();
  }

  setTitle(selfId, title) {
    if (!this.info || this.info.dialog.selfId !== selfId) return;
    this.info.title = title;
    this.renderHeader();
  }

  /** A subdialog's assignment in the header: the headline as written, then the body as the daemon rendered
   * and sanitised it (``bodyHtml``), flattened into one paragraph and clipped to two lines (style.css);
   * the whole text is the tooltip, the whole assignment is the course's Assignment bubble. */
  renderAssignment(assignment) {
    const line = $("#dh-assignment");
    line.hidden = !assignment;
    if (!assignment) return;
    const body = h("span", { class: "body" });
    if (assignment.bodyHtml !== undefined && assignment.bodyHtml !== null) setTrustedHtml(body, assignment.bodyHtml);
    else body.textContent = assignment.tellaskBody;
    line.replaceChildren(h("span", { class: "head", text: assignment.tellaskHead.trim() }), " ", body);
    line.title = line.textContent.replace(/\s+/g, " ").trim();
  }

  renderHeader() {
    const info = this.info;
    if (!info) return;
    // a subdialog is named by its assignment, without the "@agent" the line below shows anyway
    const head = headlineTitle(info.assignmentFromSup?.tellaskHead, info.agentId) || info.tellaskSession || "";
    const title = info.title || head || this.starting?.title || t("untitled");
    $("#dh-title").textContent = title;
    $("#dh-title").title = title;
    $("#dh-title").classList.toggle("untitled", title === t("untitled"));
    document.title = `${title} · Dominds`;
    $("#dh-agent").textContent = `@${info.agentId}`;
    $("#dh-id").textContent = info.dialog.selfId;
    const state = this.starting && (info.runState?.kind || "idle") === "idle"
      ? h("span", { class: "badge state-proceeding", text: t("startingDialog") })
      : badge(info.runState);
    $("#dh-state").replaceWith(Object.assign(state, { id: "dh-state" }));
    const parent = $("#dh-parent");
    parent.hidden = !info.supdialogId;
    if (info.supdialogId) parent.href = linkTo({ selfId: info.supdialogId, rootId: info.dialog.rootId });
    $("#dh-timeline").href = `/static/timeline.html?root=${encodeURIComponent(info.dialog.rootId)}`;
    const origin = $("#dh-forked-from");  // a fork links back to the reply it was forked at
    origin.hidden = !info.forkedFrom;
    if (info.forkedFrom) {
      const { rootId, course, genseq } = info.forkedFrom;
      origin.href = linkTo({ selfId: rootId, rootId, course });
      origin.textContent = t("forkedFrom", { n: genseq });
    }
    this.renderAssignment(info.assignmentFromSup);
    const viewing = this.viewingCourse || info.currentCourse;
    $("#course-label").textContent = t("course", { n: viewing, total: info.totalCourses });
    $("#course-prev").disabled = viewing <= 1;
    $("#course-next").disabled = viewing >= info.totalCourses;
    $("#course-latest").hidden = viewing === info.currentCourse && !this.windowed();
    const running = info.status === "run";
    const kind = info.runState?.kind;
    const alive = running && kind !== "dead" && !info.loadError && !info.conductor;
    $("#send").disabled = !alive;
    $("#input").disabled = !alive;
    // a dialog waiting on its subdialogs can be stopped too: the Stop reaches the work done for it
    const waitsOnWork = kind === "blocked" && String(info.runState?.reason || "").endsWith("subdialogs");
    $("#stop").disabled = !(kind === "proceeding" || kind === "stop_requested" || waitsOnWork);
    $("#ctl-resume").hidden = !(running && kind === "interrupted");
    $("#ctl-dead").hidden = info.isRoot || kind === "dead" || !running;
    $("#ctl-done").hidden = !info.isRoot || info.status === "done";
    $("#ctl-archive").hidden = !info.isRoot || info.status === "archive";
    $("#ctl-revive").hidden = !info.isRoot || running;
  }

  async rename() {
    if (!this.ref || !this.info) return;
    const title = await askInPage({
      id: "rename-dialog",
      title: t("renameTitle"),
      text: t("renameText"),
      field: { placeholder: t("untitled"), label: t("renameTitle"), value: this.info.title || "" },
      confirm: t("save"),
      cancel: t("cancel"),
    });
    if (title === null) return;
    try {
      await this.conn.request({ type: "set_dialog_title", dialog: this.ref, title });
    } catch (error) {
      toast(error.message, "error");
    }
  }

  async copyLink(target) {
    const path = linkTo(target);
    const url = new URL(path, location.origin).href;
    try {
      await navigator.clipboard.writeText(url);
      toast(t("linkCopied"));
    } catch {
      toast(url);
    }
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

  /** The first message of an untitled main dialog is on its way: name the dialog after it and say it is
   * starting (the daemon's title and run state follow within moments; "(untitled) idle" showed meanwhile). */
  willSend(content) {
    const info = this.info;
    if (!info || !info.isRoot || info.title || info.conductor || (info.runState?.kind || "idle") !== "idle") return;
    this.starting = { title: titleFromMessage(content) };
    this.renderHeader();
  }

  sendSettled(sent) {
    if (sent || !this.starting) return;
    this.starting = null; // the message did not go: the dialog is what the daemon says
    this.renderHeader();
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
      await this.open(this.ref, { force: true });
    } catch (error) {
      toast(error.message, "error");
    }
  }
}
