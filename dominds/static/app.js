// The panel's entry point: wires the connection, the layout, the lists, the dialog view and the side
// panels, keeps what is shown in the address (router.js), and routes every message from the daemon.
// Protocol: docs/protocol.md.

import { apiGet, apiPost } from "./api.js";
import { renderProblems, refreshBannerLanguage, wireBanner } from "./banner.js";
import { Connection, signIn, takeAuthFailure } from "./connection.js";
import { DialogLists } from "./dialog_lists.js";
import { DialogView } from "./dialog_view.js";
import { Drafts } from "./drafts.js";
import { $, askInPage, debounce, h, randomId, toast } from "./dom.js";
import { applyStatic, language, onLanguageChange, setLanguage, t } from "./i18n.js";
import { closeDrawers, isPhone, showPane, wireLayout } from "./layout.js";
import { onRouteChange, patchRoute, readRoute } from "./router.js";
import { QuestionsPanel, renderReminders, TaskdocPanel } from "./side_panels.js";
import { Transcript } from "./transcript.js";

const linkRefused = takeAuthFailure();
applyStatic();
wireLayout();
$("#lang").value = language();

const conn = new Connection();
const drafts = new Drafts(conn);
const questions = new QuestionsPanel($("#q4h-list"), $("#q4h-empty"), [$("#q4h-count"), $("#q4h-count-2"), $("#q4h-count-3")], {
  jump: jumpToQuestion,
});
const taskdoc = new TaskdocPanel($("#taskdoc-path"), $("#taskdoc-body"), conn);
const transcript = new Transcript($("#transcript"), {
  openDialog: (ref) => openDialog(ref),
  answer: answerQuestion,
  followLink: (target) => openDialog(target, target),
  fork: (ref, at) => forkAt(ref, at),
});
const view = new DialogView(conn, transcript, {
  onReady: onDialogReady,
  questionsFor: (id) => questions.forDialog(id),
  answer: answerQuestion,
  onMissing: onMissingDialog,
  onCreated: (ready, title) => lists.addCreated({
    selfId: ready.dialog.selfId, rootId: ready.dialog.rootId, status: "run", title: title || ready.title || null, agentId: ready.agentId,
    taskDocPath: ready.taskDocPath, createdAt: new Date().toISOString(), runState: ready.runState,
  }),
  drafts,
});
const lists = new DialogLists($("#dialog-lists"), [...document.querySelectorAll(".tab")], { open: (ref) => openDialog(ref) });
const refreshLists = debounce(() => lists.refresh(), 200);
const listRunStateSeq = new Map(); // selfId -> seq of the run state shown in the lists

const globalChannel = { connectedOnce: false, epoch: null, seq: 0 };
const catalog = { team: null, taskdocs: [], suggestions: [], suggestionsAgent: null };

conn.addEventListener("state", (event) => renderConnection(event.detail));
conn.addEventListener("message", (event) => route(event.detail));

/** A user opened a dialog (a row, a link, a question): a history entry, then the daemon's snapshot. */
function openDialog(ref, target = {}) {
  closeDrawers();
  if (isPhone()) showPane("dialog");
  return view.navigate({ selfId: ref.selfId, rootId: ref.rootId }, target);
}

function route(msg) {
  switch (msg.type) {
    case "welcome":
      onWelcome(msg);
      return;
    case "dialog_ready":
      view.onReady(msg);
      return;
    case "taskdoc_content":
      if (view.info && msg.taskDocPath === view.info.taskDocPath) taskdoc.render(msg);
      return;
    case "error":
      if (msg.requestId === undefined) toast(msg.message, "error");
      return;
    case "problems_snapshot":
      renderProblems(msg.problems || []);
      break;
    case "team_config_updated":
      if (!msg.replay) loadCatalog();
      break;
    case "full_reminders_update":
      if (msg.dialog?.selfId === view.ref?.selfId) renderReminders($("#reminders-list"), $("#reminders-empty"), msg.reminders);
      break;
    case "new_q4h_asked":
      if (msg.replay) break;
      questions.add(msg.question);
      if (msg.dialog.selfId === view.ref?.selfId) {
        transcript.markQuestion(msg.question);
        view.composer.addQuestion(msg.question);
      }
      break;
    case "q4h_answered":
      questions.remove(msg.questionId);
      transcript.unmarkQuestion(msg.questionId);
      view.composer.removeQuestion(msg.questionId);
      break;
    case "dlg_run_state_evt":
      if ((listRunStateSeq.get(msg.dialog.selfId) || 0) < msg.seq) {
        listRunStateSeq.set(msg.dialog.selfId, msg.seq);
        if (!lists.updateRunState(msg.dialog.selfId, msg.runState) || msg.runState.kind !== "proceeding") refreshLists();
      }
      break;
    case "dialog_retitled":
      if (!lists.updateTitle(msg.selfId, msg.title)) refreshLists();
      view.setTitle(msg.selfId, msg.title);
      break;
    case "subdialog_created_evt":
    case "dialogs_created":
    case "dialogs_moved":
    case "dialogs_deleted":
      if (!msg.replay) refreshLists();
      break;
    case "taskdoc_updated":
      // Only for the dialog on screen: with none open, undefined === undefined must not send a request.
      if (view.ref && msg.dialog?.selfId === view.ref.selfId) conn.send({ type: "get_taskdoc", dialog: view.ref });
      break;
    default:
      break;
  }
  if (!msg.dialog && msg.epoch === globalChannel.epoch && typeof msg.seq === "number") globalChannel.seq = Math.max(globalChannel.seq, msg.seq);
  if (msg.dialog && typeof msg.seq === "number") view.onEvent(msg);
}

function onWelcome(msg) {
  const reconnect = globalChannel.connectedOnce;
  globalChannel.connectedOnce = true;
  if (reconnect && globalChannel.epoch === msg.epoch) {
    conn.send({ type: "resume_global", since: { epoch: globalChannel.epoch, seq: globalChannel.seq } });
  } else {
    globalChannel.epoch = msg.epoch;
    globalChannel.seq = msg.seq;
  }
  conn.send({ type: "set_ui_language", uiLanguage: language() });
  conn.request({ type: "get_q4h_state" }).then((reply) => questions.replaceAll(reply.questions)).catch(() => {});
  lists.refresh();
  if (view.ref) view.open(view.ref, { resume: true });
  else showRoute(readRoute()); // the first connection: show what the address names (a deep link)
  if (!catalog.team) loadCatalog();
}

/** Show what an address names (a reload, a deep link, Back/Forward). */
function showRoute(where) {
  if (where.dialog) {
    view.open({ selfId: where.dialog, rootId: where.root || where.dialog }, { course: where.course, call: where.call, question: where.question });
  }
}

onRouteChange((where) => {
  if (where.dialog) showRoute(where);
});

function onMissingDialog(ref) {
  toast(`${t("notFound")} (${ref.selfId})`, "error");
  patchRoute({ dialog: null, root: null, course: null, call: null, question: null });
  $("#dialog-pane").hidden = true;
  $("#empty-state").hidden = false;
  if (isPhone()) showPane("list");
}

function onDialogReady(ready) {
  lists.setCurrent(ready.dialog.selfId, ready.dialog.rootId);
  renderSuggestions();
  renderReminders($("#reminders-list"), $("#reminders-empty"), ready.reminders);
  if (ready.mode === "replay") conn.send({ type: "get_taskdoc", dialog: ready.dialog });
}

/** Answer a question: true when the daemon took it, false when it is kept as a draft (drafts.js) to be
 * sent on reconnect; a refusal is thrown for the caller to show. */
function answerQuestion(question, content) {
  return drafts.submit({
    kind: "answer",
    dialog: { selfId: question.selfId, rootId: question.rootId },
    questionId: question.id,
    content,
    msgId: randomId("ans-"),
  });
}

/** Fork the main dialog ``ref`` at a reply: the person may edit the message that reply answered. */
async function forkAt(ref, { course, genseq, prompt }) {
  let forked = null;
  const submitted = await askInPage({
    id: "fork-dialog",
    title: t("forkTitle", { n: genseq }),
    text: t("forkText"),
    field: { multiline: true, value: prompt || "", label: t("forkMessage"), placeholder: t("forkMessagePlaceholder") },
    confirm: t("forkConfirm"),
    cancel: t("cancel"),
    check: async (value) => {
      const body = { genseq, course };
      if (value.trim() && value !== (prompt || "")) body.message = value;
      try {
        forked = await apiPost(`/api/dialogs/${encodeURIComponent(ref.rootId)}/fork`, body);
        return null;
      } catch (error) {
        return error.message;
      }
    },
  });
  if (submitted === null || !forked) return;
  refreshLists();
  openDialog({ selfId: forked.selfId, rootId: forked.rootId });
}

function jumpToQuestion(question) {
  openDialog({ selfId: question.selfId, rootId: question.rootId }, { question: question.id });
}

// -- connection status, top bar ---------------------------------------------------------------------

function renderConnection({ state, attempt }) {
  const box = $("#conn-status");
  box.dataset.state = state;
  $("#conn-label").textContent = state === "reconnecting" ? t("reconnecting", { n: attempt }) : t(state);
  box.title = $("#conn-label").textContent;
  $("#conn-retry").hidden = !(state === "reconnecting" || state === "unauthorized" || state === "disconnected");
  if (state === "unauthorized") askForToken();
}

let asking = false;
async function askForToken() {
  if (asking) return;
  asking = true;
  try {
    const accepted = await askInPage({
      id: "token-dialog",
      title: t("tokenTitle"),
      text: `${linkRefused ? `${t("tokenLinkRefused")} ` : ""}${t("tokenText")}`,
      field: { placeholder: t("tokenPlaceholder"), label: t("tokenTitle") },
      confirm: t("tokenConnect"),
      check: async (value) => {
        try {
          return (await signIn(value)) ? null : t("tokenRefused");
        } catch (error) {
          return String(error.message || error);
        }
      },
    });
    if (accepted !== null) conn.reconnectNow();
  } finally {
    asking = false;
  }
}

wireBanner();

$("#conn-retry").addEventListener("click", () => (conn.state === "unauthorized" ? askForToken() : conn.reconnectNow()));
$("#q4h-toggle").addEventListener("click", () => {
  showPane("side");
  $("#q4h-panel").scrollIntoView({ block: "start" });
});
$("#resume-all").addEventListener("click", async () => {
  try {
    toast(t("resumedCount", { n: (await conn.request({ type: "resume_all" })).resumed }));
  } catch (error) {
    toast(error.message, "error");
  }
});
$("#emergency-stop").addEventListener("click", async () => {
  try {
    toast(t("stoppedCount", { n: (await conn.request({ type: "emergency_stop" })).stopped }));
  } catch (error) {
    toast(error.message, "error");
  }
});
$("#lang").addEventListener("change", (event) => setLanguage(event.target.value));
onLanguageChange((lang) => {
  conn.send({ type: "set_ui_language", uiLanguage: lang });
  lists.render();
  questions.render();
  refreshBannerLanguage();
  view.composer.render();
  // the transcript's labels were rendered in the old language: show it again (a replay)
  if (view.ref) view.open(view.ref, { force: true });
});

// -- new dialog form and suggestions ----------------------------------------------------------------

async function loadCatalog() {
  try {
    const [team, taskdocs, suggestions] = await Promise.all([apiGet("/api/team"), apiGet("/api/taskdocs"), apiGet("/api/suggestions")]);
    catalog.team = team;
    catalog.taskdocs = taskdocs.taskdocs;
    catalog.suggestions = suggestions.suggestions;
    catalog.suggestionsAgent = suggestions.agentId || null;
  } catch (error) {
    toast(error.message, "error");
    return;
  }
  const chosen = $("#nd-agent").value;
  $("#nd-agent").replaceChildren(...catalog.team.members.map((m) =>
    h("option", { value: m.id, selected: chosen ? m.id === chosen : m.id === catalog.team.defaultResponder }, `${m.icon ? `${m.icon} ` : ""}@${m.id} — ${m.name}`)));
  // Create stays disabled until the team and Taskdocs are here (index.html); a team.yaml that leaves
  // nobody visible must not route new dialogs to a hidden member
  const nobody = catalog.team.members.length === 0;
  $("#nd-no-members").hidden = !nobody;
  $("#new-dialog-form button[type=submit]").disabled = nobody;
  $("#nd-taskdocs").replaceChildren(...catalog.taskdocs.map((path) => h("option", { value: path })));
  if (!$("#nd-taskdoc").value) $("#nd-taskdoc").value = catalog.taskdocs[0] || "";
  renderSuggestions();
}

// The demo's prompts go to the agent whose scripted database has them (the server names it, and none on
// a real provider): in the composer only on a main dialog of that agent, never in a subdialog.
function renderSuggestions() {
  const info = view.info;
  const here = info && info.dialog.selfId === info.dialog.rootId && info.agentId === catalog.suggestionsAgent;
  for (const [box, shown] of [[$("#suggestions"), here], [$("#empty-suggestions"), true]]) {
    box.replaceChildren(...(shown && catalog.suggestionsAgent ? catalog.suggestions : []).map((text) =>
      h("button", { type: "button", class: "chip", onclick: () => useSuggestion(text), text })));
  }
}

async function useSuggestion(text) {
  const alive = view.info && view.info.status === "run" && view.info.runState?.kind !== "dead" && !view.info.conductor;
  if (!alive) {
    const members = catalog.team?.members || [];
    const agent = members.find((m) => m.id === catalog.suggestionsAgent);
    if (!agent) {
      toast(t("noVisibleMembers"), "error");
      return;
    }
    try {
      await view.create(agent.id, catalog.taskdocs[0] || "tasks/demo.tsk", text);
    } catch (error) {
      toast(error.message, "error");
      return;
    }
    if (isPhone()) showPane("dialog");
  }
  await view.send(text);
}

function closeNewDialogForm() {
  $("#new-dialog-form").hidden = true;
  $("#new-dialog-btn").focus();
}
$("#new-dialog-btn").addEventListener("click", () => {
  $("#new-dialog-form").hidden = false;
  $("#nd-error").textContent = "";
  $("#nd-taskdoc").focus();
});
$("#nd-cancel").addEventListener("click", closeNewDialogForm);
$("#new-dialog-form").addEventListener("keydown", (event) => {
  if (event.key === "Escape") {
    event.preventDefault();
    event.stopPropagation();
    closeNewDialogForm();
  }
});
$("#new-dialog-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  try {
    await view.create($("#nd-agent").value, $("#nd-taskdoc").value.trim());
    $("#new-dialog-form").hidden = true;
    lists.show("run");
    toast(t("created"));
    if (isPhone()) showPane("dialog");
    $("#input").focus();
  } catch (error) {
    $("#nd-error").textContent = error.message;
  }
});

conn.connect();
