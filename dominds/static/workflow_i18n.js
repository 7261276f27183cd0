// English and Chinese for the workflow pages (/tot, /debate), the same way as the main panel (i18n.js):
// elements carry data-i18n / data-i18n-placeholder / data-i18n-title keys and are re-labelled when the
// language changes; dynamic text calls t(key, vars). The choice is shared with the panel (same storage
// key), so a user who picked 中文 there gets it here too.

const STORAGE_KEY = "dominds.uiLanguage";

export function makeI18n(messages) {
  let current = localStorage.getItem(STORAGE_KEY) || (navigator.language?.startsWith("zh") ? "zh" : "en");
  const listeners = [];

  function t(key, vars = {}) {
    let text = messages[current]?.[key] ?? messages.en[key] ?? key;
    for (const [name, value] of Object.entries(vars)) text = text.replaceAll(`{${name}}`, String(value));
    return text;
  }

  function applyStatic(root = document) {
    for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
    for (const el of root.querySelectorAll("[data-i18n-placeholder]")) el.placeholder = t(el.dataset.i18nPlaceholder);
    for (const el of root.querySelectorAll("[data-i18n-title]")) el.title = t(el.dataset.i18nTitle);
    document.documentElement.lang = current === "zh" ? "zh-CN" : "en";
    if (messages[current]?.pageTitle) document.title = messages[current].pageTitle;
  }

  function setLanguage(lang) {
    current = lang === "zh" ? "zh" : "en";
    localStorage.setItem(STORAGE_KEY, current);
    applyStatic();
    for (const listener of listeners) listener(current);
  }

  /** Wire a <select> with en/zh options to the language, and label the page once. */
  function mountPicker(select) {
    select.value = current;
    select.addEventListener("change", () => setLanguage(select.value));
    applyStatic();
  }

  return { t, applyStatic, setLanguage, mountPicker, language: () => current, onChange: (f) => listeners.push(f) };
}
