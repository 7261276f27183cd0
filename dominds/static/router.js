// The panel's address: what is open and how the list is filtered, kept in the URL's query so a reload,
// a bookmark or a shared link shows the same thing. Opening a dialog is a history entry (Back works);
// typing in the search box or changing a filter replaces the current entry.
//
//   /?dialog=<selfId>&root=<rootId>      a dialog (a root, or a subdialog of root)
//     &course=N                          one of its courses (default: the current one)
//     &call=<callId>                     a call site (tellask or function call) in that course
//     &question=<questionId>             a pending question (its answer form is focused)
//   &q=…&agent=…&state=…&taskdoc=…&asks=1&tab=run|done|archive     the list's search and filters

const DIALOG_KEYS = ["dialog", "root", "course", "call", "question"];
const LIST_KEYS = ["q", "agent", "state", "taskdoc", "asks", "tab"];
const listeners = [];

export function readRoute() {
  const params = new URL(location.href).searchParams;
  const route = {};
  for (const key of [...DIALOG_KEYS, ...LIST_KEYS]) {
    const value = params.get(key);
    if (value) route[key] = value;
  }
  if (route.course && !/^\d+$/.test(route.course)) delete route.course;
  return route;
}

function write(route, push) {
  const url = new URL(location.href);
  for (const key of [...DIALOG_KEYS, ...LIST_KEYS]) {
    if (route[key] === undefined || route[key] === null || route[key] === "") url.searchParams.delete(key);
    else url.searchParams.set(key, String(route[key]));
  }
  const next = url.pathname + url.search + url.hash;
  if (next === location.pathname + location.search + location.hash) return;
  if (push) history.pushState(null, "", next);
  else history.replaceState(null, "", next);
}

/** Show a dialog (and optionally a course, a call or a question): a new history entry. */
export function goToDialog({ selfId, rootId, course = null, call = null, question = null }, { replace = false } = {}) {
  const list = Object.fromEntries(LIST_KEYS.map((k) => [k, readRoute()[k]]));
  write({ ...list, dialog: selfId, root: rootId && rootId !== selfId ? rootId : null, course, call, question }, !replace);
}

/** Change part of the current address in place (filters, the course being read). */
export function patchRoute(patch) {
  write({ ...readRoute(), ...patch }, false);
}

/** The address of a dialog, a course or a call site (for links and "copy link"). */
export function linkTo({ selfId, rootId, course = null, call = null, question = null }) {
  const url = new URL("/", location.origin);
  url.searchParams.set("dialog", selfId);
  if (rootId && rootId !== selfId) url.searchParams.set("root", rootId);
  if (course) url.searchParams.set("course", String(course));
  if (call) url.searchParams.set("call", call);
  if (question) url.searchParams.set("question", question);
  return url.pathname + url.search;
}

export function onRouteChange(listener) {
  listeners.push(listener);
}

window.addEventListener("popstate", () => {
  for (const listener of listeners) listener(readRoute());
});
