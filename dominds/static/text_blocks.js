// Text helpers of the transcript's blocks: one-line gists, folding long text, pretty tool arguments.

import { h } from "./dom.js";

export const LONG_TEXT = 600; // characters: a longer request or reply starts folded

/** Arguments of a function call as readable text: pretty JSON when it parses, else as given. */
export function prettyArguments(text) {
  try {
    const value = JSON.parse(text);
    return JSON.stringify(value, null, 2);
  } catch {
    return String(text ?? "");
  }
}

/** A one-line gist of a function call's arguments for its summary line. */
export function argumentGist(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return oneLine(text, 80);
  }
  if (value && typeof value === "object" && !Array.isArray(value)) {
    return oneLine(Object.entries(value).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(", "), 80);
  }
  return oneLine(JSON.stringify(value), 80);
}

export function oneLine(text, limit) {
  const flat = String(text ?? "").replace(/\s+/g, " ").trim();
  return flat.length > limit ? `${flat.slice(0, limit - 1)}…` : flat;
}

/** A block of text that folds when it is long (the first lines stay visible). */
export function foldable(className, text, label) {
  const long = String(text || "").length > LONG_TEXT;
  if (!long) return h("div", { class: className, text });
  return h("details", { class: `fold ${className}` },
    h("summary", {}, h("span", { class: "fold-preview", text: oneLine(text, 160) }), h("span", { class: "fold-more", text: label })),
    h("div", { class: "fold-body", text }));
}
