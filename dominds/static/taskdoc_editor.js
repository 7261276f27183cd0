// The editor of one Taskdoc section (the ✎ of the Taskdoc panel). A save names the hash of the text the
// editor started from, and the daemon refuses it (409, with the section's text now) when an agent or a
// person wrote the file meanwhile. Before, the editor then only showed the refusal; now it keeps the
// user's text and offers what changed (a line diff from the file's text to the user's), a copy of the
// user's text, loading the current text (the user's stays beside it to copy from), and saving over it.

import { apiPost } from "./api.js";
import { h, onCtrlEnter, toast } from "./dom.js";
import { language, t } from "./i18n.js";

const MAX_DIFF_CELLS = 400_000; // lines × lines: past it the diff is the two texts, whole

/** A line diff: [{op: " " | "-" | "+", line}], "-" only in `before`, "+" only in `after`. */
export function lineDiff(before, after) {
  const a = before.split("\n");
  const b = after.split("\n");
  if (a.length * b.length > MAX_DIFF_CELLS) return [...a.map((line) => ({ op: "-", line })), ...b.map((line) => ({ op: "+", line }))];
  const common = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push({ op: " ", line: a[i++] });
      j++;
    } else if (i < a.length && (j === b.length || common[i + 1][j] >= common[i][j + 1])) out.push({ op: "-", line: a[i++] });
    else out.push({ op: "+", line: b[j++] });
  }
  return out;
}

async function copyText(text, fallbackField) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    fallbackField.select(); // no clipboard (permissions): the old way, or the user's Ctrl+C
    if (!document.execCommand("copy")) throw new Error(t("tdCopyFailed"));
  }
}

/** Edit `section` of the Taskdoc at `taskDocPath`; resolves with the daemon's fresh payload, or null. */
export function editSection({ taskDocPath, section, title }) {
  return new Promise((resolve) => {
    let baseHash = section.hash;
    let conflict = null; // {current, currentHash} of the last refusal
    const input = h("textarea", { class: "modal-input", rows: "3", autocomplete: "off", "aria-label": section.file });
    input.value = section.markdown || "";
    const error = h("p", { class: "form-error", role: "alert" });
    const diff = h("pre", { class: "td-diff" });
    const mine = h("textarea", { class: "modal-input td-mine", readonly: true, rows: "3", "aria-label": t("tdMine") });
    // the user's text beside the loaded one: in the page only once "Load the current text" was used
    const mineBox = h("label", { class: "td-mine-box" }, h("span", { text: t("tdMine") }));
    const copy = h("button", { type: "button", class: "td-copy-mine", text: t("tdCopyMine") });
    const load = h("button", { type: "button", class: "td-load-current", text: t("tdLoadCurrent") });
    const overwrite = h("button", { type: "button", class: "td-overwrite danger", text: t("tdOverwrite") });
    const diffBox = h("details", { class: "td-diff-box", open: true }, h("summary", { text: t("tdDiff") }), diff);
    const conflictBox = h("div", { class: "td-conflict", hidden: true }, diffBox, h("div", { class: "row td-conflict-buttons" }, copy, load, overwrite));
    const submit = h("button", { type: "submit", class: "primary", text: t("save") });
    const cancel = h("button", { type: "button", class: "modal-cancel", text: t("cancel") });
    const form = h("form", { class: "modal-form" },
      h("h2", { text: title }), h("p", { class: "modal-text", text: t("editSectionText", { file: section.file }) }),
      input, error, conflictBox, h("div", { class: "row modal-buttons" }, cancel, submit));
    const dialog = h("dialog", { class: "modal td-editor", id: "taskdoc-edit-dialog" }, form);
    const finish = (value) => {
      dialog.close();
      dialog.remove();
      resolve(value);
    };
    const showConflict = (message) => {
      error.textContent = message;
      conflictBox.hidden = false;
      diffBox.hidden = false;
      diff.replaceChildren(...lineDiff(conflict.current, input.value).map(({ op, line }) =>
        h("span", { class: `td-diff-line ${op === "-" ? "del" : op === "+" ? "ins" : "same"}`, text: `${op} ${line}\n` })));
    };
    const save = async () => {
      submit.disabled = true;
      try {
        const fresh = await apiPost(`/api/taskdocs/section?lang=${language()}`, { taskDocPath, section: section.key, content: input.value, baseHash });
        finish(fresh);
      } catch (err) {
        if (err.status === 409 && typeof err.data?.current === "string") {
          conflict = { current: err.data.current, currentHash: err.data.currentHash };
          showConflict(err.message);
        } else error.textContent = String(err.message || err);
        input.focus();
      } finally {
        submit.disabled = false;
      }
    };
    copy.addEventListener("click", async () => {
      const field = mine.isConnected ? mine : input;
      try {
        await copyText(field.value, field);
        toast(t("tdCopied"));
      } catch (err) {
        toast(err.message, "error");
      }
    });
    load.addEventListener("click", () => {
      if (!mine.isConnected) {
        mine.value = input.value; // the user's text stays beside the current one
        mineBox.append(mine);
        diffBox.after(mineBox);
      }
      input.value = conflict.current;
      baseHash = conflict.currentHash;
      diffBox.hidden = true;
      overwrite.hidden = true;
      error.textContent = t("tdLoaded");
    });
    overwrite.addEventListener("click", () => {
      baseHash = conflict.currentHash; // knowingly over the text the diff showed
      save();
    });
    cancel.addEventListener("click", () => finish(null));
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      finish(null);
    });
    onCtrlEnter(input, () => form.requestSubmit());
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      save();
    });
    document.body.append(dialog);
    dialog.showModal();
    input.focus();
  });
}
