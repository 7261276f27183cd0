// Drafts: an answer or a message the user sent while the daemon could not be reached. Before, the send
// failed with a toast and an inline answer form was re-rendered empty on reconnect: the text was lost.
// A draft is kept in localStorage (a reload keeps it too), listed above the composer of its dialog, and
// sent when the connection is back, in the order typed. Each keeps the msgId it got when typed: the
// daemon accepts an id once (driver/intake.py refuse_duplicate), so a send whose reply was lost is never
// delivered twice, and "already accepted" means the first attempt arrived. A draft the daemon refuses
// (the question was answered meanwhile) stays listed with the reason until the user edits or discards it.

const STORAGE_KEY = "dominds.drafts";

function load() {
  try {
    const items = JSON.parse(localStorage.getItem(STORAGE_KEY) || "[]");
    return Array.isArray(items) ? items.filter((d) => d && d.msgId && d.dialog?.selfId && typeof d.content === "string") : [];
  } catch {
    return [];
  }
}

/** The websocket request that delivers a draft. */
function requestOf(draft) {
  return draft.kind === "answer"
    ? { type: "drive_dialog_by_user_answer", dialog: draft.dialog, questionId: draft.questionId, content: draft.content, msgId: draft.msgId }
    : { type: "drive_dlg_by_user_msg", dialog: draft.dialog, content: draft.content, msgId: draft.msgId };
}

export class Drafts extends EventTarget {
  constructor(conn) {
    super();
    this.conn = conn;
    this.items = load();
    this.flushing = null;
    conn.addEventListener("state", (event) => {
      if (event.detail.state === "connected") this.flush();
    });
    // another tab of the panel kept or sent a draft
    window.addEventListener("storage", (event) => {
      if (event.key === STORAGE_KEY) {
        this.items = load();
        this.changed();
      }
    });
  }

  forDialog(selfId) {
    return this.items.filter((d) => d.dialog.selfId === selfId);
  }

  /** Send `draft` ({kind: "answer"|"message", dialog, content, msgId, questionId?}) now. True: the daemon
   * took it; false: kept as a draft (the daemon is unreachable). A refusal by the daemon is thrown. */
  async submit(draft) {
    try {
      await this.conn.request(requestOf(draft));
      return true;
    } catch (error) {
      if (!error.offline) throw error;
      this.items.push({ ...draft, keptAt: new Date().toISOString() });
      this.save();
      return false;
    }
  }

  /** Send every kept draft (on each reconnect); one flush at a time, stopped by the next disconnect. */
  flush() {
    this.flushing ??= this.sendKept().finally(() => { this.flushing = null; });
    return this.flushing;
  }

  async sendKept() {
    for (const draft of [...this.items]) {
      if (draft.refused) continue;
      if (!this.conn.open) return;
      try {
        await this.conn.request(requestOf(draft));
        this.drop(draft.msgId);
      } catch (error) {
        if (error.offline) return;
        if (/already accepted/.test(error.message)) this.drop(draft.msgId); // the first attempt arrived
        else {
          draft.refused = error.message;
          this.save();
        }
      }
    }
  }

  drop(msgId) {
    this.items = this.items.filter((d) => d.msgId !== msgId);
    this.save();
  }

  save() {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(this.items));
    this.changed();
  }

  changed() {
    this.dispatchEvent(new Event("change"));
  }
}
