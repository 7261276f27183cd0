// Tiny DOM helpers. Untrusted text always goes through textContent; the only HTML ever inserted is
// what the daemon rendered with markdown-it-py and sanitised with nh3 (see setTrustedHtml).

export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export const $ = (selector, root = document) => root.querySelector(selector);

/** Ctrl+Enter (⌘+Enter) in `el` runs `action`: sends, answers, saves, wherever text is written. */
export function onCtrlEnter(el, action) {
  el.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      action();
    }
  });
}

/** A plain left click on a link the panel follows itself (a modified click opens a new tab instead). */
export function plainClick(event) {
  return !(event.button > 0 || event.metaKey || event.ctrlKey || event.shiftKey);
}

/** Insert HTML produced by the daemon's sanitiser (nh3). Never call this with anything else. */
export function setTrustedHtml(el, sanitisedHtml) {
  el.innerHTML = sanitisedHtml;
}

export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

let toastTimer = null;
export function toast(text, kind = "info") {
  const el = $("#toast");
  el.textContent = text;
  el.dataset.kind = kind;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.hidden = true; }, 5000);
}

export function randomId(prefix) {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * An in-page dialog (never the browser's prompt()): a title, a text, an optional text field, and
 * confirm/cancel buttons. Resolves with the field's text (or true without a field), or null when
 * cancelled (Escape, the Cancel button). `check(value)` may return an error message (or a promise of
 * one) that is shown in the dialog instead of closing it.
 */
export function askInPage({ title, text = "", field = null, confirm, cancel = null, danger = false, check = null, id = null }) {
  return new Promise((resolve) => {
    const input = field
      ? h(field.multiline ? "textarea" : "input", { class: "modal-input", rows: field.multiline ? "3" : null, placeholder: field.placeholder || "", autocomplete: "off", "aria-label": field.label || title })
      : null;
    if (input && field.value) input.value = field.value;
    const error = h("p", { class: "form-error", role: "alert" });
    const submit = h("button", { type: "submit", class: danger ? "primary danger-fill" : "primary", text: confirm });
    const cancelButton = cancel ? h("button", { type: "button", class: "modal-cancel", text: cancel }) : null;
    const form = h("form", { class: "modal-form" },
      h("h2", { text: title }), text ? h("p", { class: "modal-text", text }) : null, input, error,
      h("div", { class: "row modal-buttons" }, cancelButton, submit));
    const dialog = h("dialog", { class: "modal", id });
    dialog.append(form);
    let settled = false;
    const finish = (value) => {
      if (settled) return;
      settled = true;
      dialog.close();
      dialog.remove();
      resolve(value);
    };
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      if (cancel) finish(null);
    });
    cancelButton?.addEventListener("click", () => finish(null));
    if (input && field.multiline) onCtrlEnter(input, () => form.requestSubmit());
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const value = input ? input.value : true;
      if (check) {
        submit.disabled = true;
        const problem = await check(value);
        submit.disabled = false;
        if (problem) {
          error.textContent = problem;
          input?.focus();
          return;
        }
      }
      finish(value);
    });
    document.body.append(dialog);
    dialog.showModal();
    (input || submit).focus();
  });
}
