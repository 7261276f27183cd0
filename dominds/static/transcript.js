// Renders one dialog's events (live or replayed: the same vocabulary) into the transcript element.
// Streaming text is shown as plain text; when a saying finishes, each markdown run is replaced by the
// HTML the daemon rendered, highlighted and sanitised (markdownHtml). Tellask calls and function calls
// are readable, collapsible blocks: a one-line summary (who or what, status) that opens to the full
// request and result; each has a permalink (…&call=<id>) that brings it back into view after a reload.
// A tellask block gets its inline result, a link to the subdialog it created and — for a pending
// question — an inline answer form (Ctrl+Enter answers).

import { artifactImages } from "./artifacts.js";
import { h, onCtrlEnter, plainClick, setTrustedHtml, toast } from "./dom.js";
import { t } from "./i18n.js";
import { linkTo } from "./router.js";
import { argumentGist, foldable, LONG_TEXT, oneLine, prettyArguments } from "./text_blocks.js";

const USER_ORIGIN_LABEL = {
  user: "youWrote",
  q4h_answer: "origin_q4h_answer",
  assignment: "origin_assignment",
  tellask_back: "origin_tellask_back",
  new_course: "origin_new_course",
  diligence: "origin_diligence",
  system: "origin_system",
};

export class Transcript {
  /** actions: { openDialog(ref), answer(question, text): Promise, followLink(target), fork?(ref, at) } */
  constructor(root, actions) {
    this.root = root;
    this.actions = actions;
    this.agentId = "";
    this.ref = null; // {selfId, rootId, course} of what is shown (for permalinks)
    this.supdialogId = null; // the caller of a subdialog on screen (its answers are not a subdialog's)
    this.questions = new Map(); // questionId -> pending question of this dialog (survives reset())
    this.reset();
  }

  reset() {
    this.root.replaceChildren();
    this.gen = null;
    this.thinking = null;
    this.saying = null;
    this.md = null;
    this.call = null;
    this.calls = new Map(); // callId -> tellask block
    this.funcs = new Map(); // funcId -> function call block
    this.waiting = new Map(this.questions); // questions whose call block has not been rendered yet
  }

  forgetQuestions() {
    this.questions.clear();
    this.waiting.clear();
  }

  apply(event) {
    const handler = HANDLERS[event.type];
    if (!handler) return;
    const stick = this.root.scrollHeight - this.root.scrollTop - this.root.clientHeight < 80;
    handler.call(this, event);
    if (stick) this.root.scrollTop = this.root.scrollHeight;
  }

  /** An earlier page of the course (paging): rendered apart, then put above what is shown, keeping the
   * reader's place. The open generation and its streaming state belong to the newest page, so they are
   * kept; the page's call blocks join the maps so links and results find them. */
  prepend(events, before = null) {
    const live = { root: this.root, gen: this.gen, thinking: this.thinking, saying: this.saying, md: this.md, call: this.call };
    const page = document.createElement("div");
    Object.assign(this, { root: page, gen: null, thinking: null, saying: null, md: null, call: null });
    try {
      for (const event of events) HANDLERS[event.type]?.call(this, event);
    } finally {
      Object.assign(this, live);
    }
    const root = this.root;
    const height = root.scrollHeight;
    const top = root.scrollTop;
    root.insertBefore(page, before && before.parentNode === root ? before.nextSibling : root.firstChild);
    page.replaceWith(...page.childNodes);
    root.scrollTop = top + (root.scrollHeight - height);
  }

  container() {
    return this.gen ? this.gen.body : this.root;
  }

  add(el) {
    this.container().append(el);
    return el;
  }

  permalink(callId) {
    if (!this.ref || !callId) return null;
    const target = { ...this.ref, call: callId };
    return h("a", {
      class: "permalink", href: linkTo(target), title: t("linkTo"), "aria-label": t("linkTo"), text: "#",
      onclick: (e) => {
        if (!plainClick(e)) return;
        e.preventDefault();
        this.actions.followLink(target);
      },
    });
  }

  // -- questions ---------------------------------------------------------------------------------

  markQuestion(question) {
    this.questions.set(question.id, question);
    const block = this.calls.get(question.callId);
    if (block) this.attachAnswerForm(block, question);
    else this.waiting.set(question.id, question);
  }

  /** The snapshot is complete: questions whose call block never appeared get a standalone form. */
  settle() {
    for (const question of this.waiting.values()) {
      const block = this.root.appendChild(
        h("div", { class: "tellask standalone", dataset: { callId: question.callId } },
          h("div", { class: "tellask-head", text: question.tellaskHead }),
          question.bodyContent ? h("div", { class: "tellask-body", text: question.bodyContent }) : null),
      );
      this.attachAnswerForm(block, question);
    }
    this.waiting.clear();
  }

  attachAnswerForm(block, question) {
    if (block.querySelector(`form.answer[data-question-id="${CSS.escape(question.id)}"]`)) return;
    block.classList.add("asking");
    const input = h("textarea", { rows: "2", placeholder: t("answerPlaceholder"), class: "answer-input" });
    const form = h("form", { class: "answer", dataset: { questionId: question.id } },
      input, h("button", { type: "submit", class: "primary", text: t("answer") }));
    onCtrlEnter(input, () => form.requestSubmit());
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      form.querySelector("button").disabled = true;
      try {
        if (!(await this.actions.answer(question, text))) {
          // kept as a draft (listed above the composer) until the daemon is back: not typed again
          input.value = "";
          form.querySelector("button").disabled = false;
          toast(t("draftKept"));
        }
      } catch (error) {
        toast(error.message, "error");
        form.querySelector("button").disabled = false;
      }
    });
    block.append(form);
  }

  unmarkQuestion(questionId) {
    this.questions.delete(questionId);
    this.waiting.delete(questionId);
    const form = this.root.querySelector(`form.answer[data-question-id="${CSS.escape(questionId)}"]`);
    if (!form) return;
    form.closest(".tellask")?.classList.replace("asking", "answered");
    form.remove();
  }

  highlight(block) {
    for (const details of ancestors(block, "details")) details.open = true;
    block.scrollIntoView({ block: "center" });
    block.classList.add("highlight");
    setTimeout(() => block.classList.remove("highlight"), 2500);
  }

  focusQuestion(question) {
    const form = this.root.querySelector(`form.answer[data-question-id="${CSS.escape(question.id)}"]`);
    if (!form) return false;
    this.highlight(form.closest(".tellask"));
    form.querySelector("textarea").focus();
    return true;
  }

  /** Bring a call site (a tellask or a function call) into view. */
  focusCall(callId) {
    const block = this.calls.get(callId) || this.funcs.get(callId)
      || this.root.querySelector(`[data-call-id="${CSS.escape(callId)}"], [data-func-id="${CSS.escape(callId)}"]`);
    if (!block) return false;
    this.highlight(block);
    return true;
  }

  /** A prompt that frames a tellask for the model (a subdialog's assignment, an ask-back) as its sender
   * wrote it: who, a link back to the call, the headline, the body as markdown; the framed prompt the
   * model reads stays available, folded. */
  tellaskBubble(e, a) {
    const body = h("div", { class: "md" });
    if (a.bodyHtml !== undefined && a.bodyHtml !== null) setTrustedHtml(body, a.bodyHtml);
    else body.textContent = a.tellaskBody;
    const content = a.tellaskBody.length > LONG_TEXT
      ? h("details", { class: "fold assignment-body" }, h("summary", {}, h("span", { class: "fold-preview", text: oneLine(a.tellaskBody, 160) }), h("span", { class: "fold-more", text: t("showAll") })), body)
      : body;
    const target = { selfId: a.dialogId, rootId: this.ref?.rootId || a.dialogId, call: a.callId };
    const back = h("a", {
      class: "caller-link", href: linkTo(target), text: `↩ ${t(a.back)}`,
      onclick: (ev) => {
        if (!plainClick(ev)) return;
        ev.preventDefault();
        this.actions.followLink(target);
      },
    });
    const framed = h("details", { class: "framed-prompt" },
      h("summary", { text: t("promptAsRead") }), h("div", { class: "plain", text: e.content }));
    return h("div", { class: `bubble user origin-${e.origin} framed-tellask`, dataset: { msgId: e.msgId, callId: a.callId } },
      h("div", { class: "who" }, h("span", { text: t(a.label, { agent: a.fromAgentId }) }), back),
      h("div", { class: "tellask-head", text: a.tellaskHead.trim() }),
      a.tellaskBody.trim() ? content : null, framed);
  }

  subdialogLink(ref, agentId, label = "openSubdialog") {
    return h("a", {
      href: linkTo(ref), class: "subdialog-link", dataset: { selfId: ref.selfId },
      onclick: (e) => {
        if (!plainClick(e)) return;
        e.preventDefault();
        this.actions.openDialog(ref);
      },
      text: `${label === "openSubdialog" ? "→" : "↑"} ${t(label, { agent: agentId })}`,
    });
  }
}

function ancestors(el, selector) {
  const found = [];
  for (let node = el; node; node = node.parentElement?.closest(selector)) if (node.matches?.(selector)) found.push(node);
  return found;
}

const INCOMPLETE_LABELS = { stopped: "incompleteStopped", broken: "incompleteBroken" };
const FINISH_NOTES = {
  max_tokens: "finishMaxTokens", context_window: "finishContextWindow",
  refusal: "finishRefusal", content_filter: "finishContentFilter",
};

// A segment cut before its end (stop, broken stream) keeps its text and says so.
function markIncomplete(el, reason) {
  if (!reason) return;
  el.classList.add("incomplete");
  el.dataset.incomplete = reason;
  el.append(h("div", { class: "incomplete-note", text: `⋯ ${t(INCOMPLETE_LABELS[reason] || "incompleteBroken")}` }));
}

const HANDLERS = {
  end_of_user_saying_evt(e) {
    const label = t(USER_ORIGIN_LABEL[e.origin] || "youWrote");
    const body = e.origin === "user" || e.origin === "q4h_answer"
      ? h("div", { class: "plain", text: e.content })
      : foldable("plain", e.content, t("showAll"));
    const framed = e.assignment
      ? { ...e.assignment, dialogId: e.assignment.callerDialogId, label: "assignmentFrom", back: "assignmentCall" }
      : e.askBack && { ...e.askBack, dialogId: e.askBack.fromDialogId, label: "askBackFrom", back: "askBackCall" };
    const bubble = framed
      ? this.tellaskBubble(e, framed)
      : h("div", { class: `bubble user origin-${e.origin}`, dataset: { msgId: e.msgId } }, h("div", { class: "who", text: label }), body,
        ...artifactImages(e.content));
    // the prompt is recorded by the generation that consumes it, just after generating_start_evt
    if (this.gen && this.gen.genseq === e.genseq) {
      this.gen.el.before(bubble);
      if (e.origin === "user" || e.origin === "q4h_answer") this.gen.prompt = e.content;  // what a fork re-asks
    } else this.root.append(bubble);
  },
  generating_start_evt(e) {
    const body = h("div", { class: "gen-body" });
    const who = h("div", { class: "who" }, h("span", { class: "agent", text: `@${this.agentId}` }), h("span", { class: "genseq", text: `#${e.genseq}` }));
    const el = h("div", { class: "bubble gen streaming", dataset: { genseq: e.genseq } }, who, body);
    this.root.append(el);
    const gen = { el, body, genseq: e.genseq, prompt: null };
    this.gen = gen;
    // a main dialog can be forked at any reply: a new dialog that runs this reply again (driver/fork.py)
    if (this.actions.fork && this.ref && this.ref.selfId === this.ref.rootId) {
      const course = e.course ?? this.ref.course;
      who.append(h("button", {
        type: "button", class: "fork-gen", text: t("fork"), title: t("forkHint"), "aria-label": t("forkHint"),
        onclick: () => this.actions.fork(this.ref, { course, genseq: e.genseq, prompt: gen.prompt }),
      }));
    }
    // what the model saw: the request this reply sent to its provider (static/request.html, docs/observability.md)
    if (this.ref) {
      const at = new URLSearchParams({ self: this.ref.selfId, root: this.ref.rootId, genseq: String(e.genseq) });
      if ((e.course ?? this.ref.course) != null) at.set("course", String(e.course ?? this.ref.course));
      who.append(h("a", {
        class: "request-gen", href: `/static/request.html?${at}`, target: "_blank", rel: "noopener",
        text: t("request"), title: t("requestHint"), "aria-label": t("requestHint"),
      }));
    }
  },
  generating_finish_evt(e) {
    if (this.gen && e.outputTokens != null) {
      const reasoning = e.reasoningTokens ? ` (${t("reasoningTokens", { count: e.reasoningTokens })})` : "";
      this.gen.el.querySelector(".who")?.append(h("span", { class: "gen-usage", text: `${e.inputTokens ?? 0} → ${e.outputTokens}${reasoning}` }));
    }
    const note = FINISH_NOTES[e.finishReason];
    if (note && this.gen) this.gen.body.append(h("div", { class: "notice finish-note", dataset: { finishReason: e.finishReason }, text: t(note) }));
    this.gen?.el.classList.remove("streaming");
    // a generation cut before any output was kept (a kill -9, a stop at once) left an empty "@lead #n"
    // card; the interrupted marker after it says what happened
    if (this.gen && e.status === "interrupted" && !this.gen.body.hasChildNodes()) this.gen.el.remove();
    this.thinking = this.saying = this.md = this.call = null;
  },
  thinking_start_evt() {
    const pre = h("div", { class: "plain" });
    const el = h("details", { class: "thinking", open: true }, h("summary", { text: t("thinking") }), pre);
    this.thinking = { el, pre };
    this.add(el);
  },
  thinking_chunk_evt(e) {
    this.thinking?.pre.append(e.chunk);
  },
  thinking_finish_evt(e) {
    if (this.thinking) {
      this.thinking.el.open = false;
      markIncomplete(this.thinking.el, e.incomplete);
    }
    this.thinking = null;
  },
  saying_start_evt() {
    this.saying = { el: this.add(h("div", { class: "saying" })), runs: [] };
  },
  markdown_start_evt() {
    this.md = h("div", { class: "md streaming" });
    if (this.saying) {
      this.saying.runs.push(this.md);
      this.saying.el.append(this.md);
    } else this.add(this.md);
  },
  markdown_chunk_evt(e) {
    this.md?.append(e.chunk);
  },
  markdown_finish_evt() {
    this.md = null;
  },
  saying_finish_evt(e) {
    if (!this.saying) return;
    (e.markdownHtml || []).forEach((html, index) => {
      const run = this.saying.runs[index];
      if (!run) return;
      setTrustedHtml(run, html);
      run.classList.remove("streaming");
    });
    markIncomplete(this.saying.el, e.incomplete);
    this.saying = null;
  },
  teammate_call_start_evt(e) {
    const head = h("div", { class: "tellask-head" });
    const body = h("div", { class: "tellask-body", hidden: true });
    const el = h("div", { class: `tellask${e.validation === "valid" ? "" : " malformed"}`, title: e.validation === "valid" ? null : e.validation },
      h("div", { class: "tellask-top" }, h("span", { class: "block-kind", text: t("tellaskCall") }), head), body);
    this.call = { el, head, body };
    (this.saying?.el || this.container()).append(el);
  },
  teammate_call_headline_chunk_evt(e) {
    this.call?.head.append(e.chunk);
  },
  teammate_call_body_start_evt() {
    if (this.call) this.call.body.hidden = false;
  },
  teammate_call_body_chunk_evt(e) {
    this.call?.body.append(e.chunk);
  },
  teammate_call_finish_evt(e) {
    if (!this.call) return;
    const { el, body } = this.call;
    el.dataset.callId = e.callId;
    el.querySelector(".tellask-top").append(this.permalink(e.callId) || "");
    if (body.textContent.length > LONG_TEXT) body.replaceWith(foldable("tellask-body", body.textContent, t("showAll")));
    this.calls.set(e.callId, el);
    for (const [id, question] of this.waiting) {
      if (question.callId === e.callId) {
        this.attachAnswerForm(el, question);
        this.waiting.delete(id);
      }
    }
    this.call = null;
  },
  teammate_call_response_evt(e) {
    const block = this.calls.get(e.callId);
    const note = h("div", { class: `call-result status-${e.status}`, text: e.result });
    if (block) block.append(note);
    else this.add(h("div", { class: "tellask standalone", dataset: { callId: e.callId } }, h("div", { class: "tellask-head", text: e.tellaskHead }), note));
  },
  subdialog_created_evt(e) {
    const link = this.subdialogLink(e.subDialog, e.targetAgentId);
    const block = this.calls.get(e.callId);
    if (block) block.append(h("div", { class: "call-link" }, link));
    else this.add(h("div", { class: "notice" }, link));
  },
  teammate_response_evt(e) {
    const body = h("div", { class: "md" });
    if (e.responseHtml !== undefined) setTrustedHtml(body, e.responseHtml);
    else body.textContent = e.response;
    const long = String(e.response || "").length > LONG_TEXT;
    const ref = e.calleeDialog || { selfId: e.calleeDialogId };
    // an ask-back (`@tellasker …`) is answered by the caller, not by a subdialog: it was labelled
    // "open subdialog @lead" inside the subdialog
    const fromCaller = /^\s*(!\?)?@tellasker\b/.test(e.tellaskHead || "") || (this.supdialogId && ref.selfId === this.supdialogId);
    const head = h("div", { class: "who" },
      h("span", { class: `block-status status-${e.status}`, text: e.status === "failed" ? "✗" : "✓" }),
      h("span", { text: t(fromCaller ? "answerFromCaller" : "responseFrom", { agent: e.responderId }) }), " ",
      this.subdialogLink(ref, e.responderId, fromCaller ? "openCallerDialog" : "openSubdialog"), this.permalink(e.callId));
    const content = long
      ? h("details", { class: "fold reply-body" }, h("summary", {}, h("span", { class: "fold-preview", text: oneLine(e.response, 160) }), h("span", { class: "fold-more", text: t("showAll") })), body)
      : body;
    this.root.append(h("div", { class: `bubble response status-${e.status}`, dataset: { callId: e.callId } },
      head, h("div", { class: "tellask-head", text: e.tellaskHead }), content));
    this.calls.get(e.callId)?.classList.add(`responded-${e.status}`);
  },
  func_call_requested_evt(e) {
    const status = h("span", { class: "block-status status-pending", text: "…" });
    const el = h("details", { class: "func", dataset: { funcId: e.funcId } },
      h("summary", {},
        h("span", { class: "block-kind", text: t("toolCall") }),
        h("span", { class: "func-name", text: e.funcName }),
        h("span", { class: "func-gist", text: argumentGist(e.arguments) }),
        status, this.permalink(e.funcId)),
      h("div", { class: "block-label", text: t("arguments") }),
      h("pre", { class: "func-args", text: prettyArguments(e.arguments) }));
    this.funcs.set(e.funcId, el);
    this.add(el);
  },
  func_progress_evt(e) {  // an MCP server's progress on a running call: one line in the call's summary
    const block = this.funcs.get(e.funcId);
    if (!block) return;
    let line = block.querySelector(".func-progress");
    if (!line) {
      line = h("span", { class: "func-progress" });
      block.querySelector(".block-status").before(line);
    }
    const count = e.total != null ? `${e.progress}/${e.total}` : `${e.progress}`;
    line.textContent = e.message ? `${count} · ${e.message}` : count;
  },
  mcp_sampling_evt(e) {  // the member's model answered the MCP server during the call
    const block = this.funcs.get(e.funcId);
    if (!block) return;
    block.append(h("div", { class: "block-label", text: t("sampledFor", { server: e.server }) }),
      h("pre", { class: `func-sampling${e.error ? " error" : ""}`, text: e.error || e.reply }));
  },
  func_result_evt(e) {
    const result = h("pre", { class: `func-result${e.isError ? " error" : ""}`, text: e.content });
    const images = artifactImages(e.content);
    const block = this.funcs.get(e.id);
    if (block) {
      const status = block.querySelector(".block-status");
      status.className = `block-status status-${e.isError ? "failed" : "completed"}`;
      status.textContent = e.isError ? "✗" : "✓";
      status.title = e.isError ? t("failedCall") : t("completedCall");
      block.append(h("div", { class: "block-label", text: t("result") }), result, ...images);
      if (e.isError) block.open = true;
    } else {
      this.add(h("details", { class: "func", open: e.isError || null, dataset: { funcId: e.id } },
        h("summary", {}, h("span", { class: "block-kind", text: t("toolResult") }), h("span", { class: "func-name", text: e.name })),
        result, ...images));
    }
  },
  stream_error_evt(e) {
    this.add(h("div", { class: "stream-error" }, h("strong", { text: `${t("streamError")}: ` }), e.error));
  },
  dlg_run_state_marker_evt(e) {
    const text = e.kind === "interrupted" ? t("interruptedMarker", { reason: e.reason || "" }) : t("resumedMarker");
    this.root.append(h("div", { class: `marker marker-${e.kind}`, text: `— ${text} —` }));
  },
};
