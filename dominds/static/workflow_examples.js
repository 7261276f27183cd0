// The offline demo's example question on a workflow page (/tot, /debate, /plan-solve): a button that fills
// the question field (before, the example was only the field's placeholder, so Start answered "Please
// fill out this field"), and the plain note that the demo answers only its example. The daemon names
// the examples (GET /api/workflow-examples, from the demo's scripted database); on a real model, or on
// a service without that route (the standalone Plan & Solve), nothing is added.

const STORAGE_KEY = "dominds.uiLanguage";
const TEXT = {
  en: { try: "Try the example:", note: "The offline demo answers only its example; use a real model for your own question." },
  zh: { try: "试试示例：", note: "离线演示只能回答它的示例问题；你自己的问题请使用真实模型。" },
};

/** Offer the examples of `workflow` under `field`; returns a function that relabels them (language change). */
export async function offerExamples({ workflow, field, authorization }) {
  let examples = [];
  try {
    const headers = { Accept: "application/json" };
    const token = authorization();
    if (token) headers.Authorization = `Bearer ${token}`;
    const answer = await fetch("/api/workflow-examples", { headers });
    if (answer.ok) examples = (await answer.json()).examples?.[workflow] || [];
  } catch {
    examples = [];
  }
  if (!examples.length) return () => {};
  const box = document.createElement("div");
  box.id = "demo-examples";
  box.className = "demo-examples";
  const label = document.createElement("span");
  const note = document.createElement("p");
  note.className = "demo-note muted";
  const buttons = examples.map((question) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "demo-example";
    button.textContent = question;
    button.addEventListener("click", () => {
      field.value = question;
      field.dispatchEvent(new Event("input", { bubbles: true }));
      field.focus();
    });
    return button;
  });
  box.append(label, ...buttons, note);
  field.insertAdjacentElement("afterend", box);
  const relabel = () => {
    const words = TEXT[localStorage.getItem(STORAGE_KEY)] || TEXT[navigator.language?.startsWith("zh") ? "zh" : "en"];
    label.textContent = `${words.try} `;
    note.textContent = words.note;
  };
  relabel();
  return relabel;
}
