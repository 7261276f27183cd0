// English and Chinese UI text. Elements carry data-i18n / data-i18n-placeholder / data-i18n-title keys
// and are re-labelled when the language changes; dynamic text calls t(key, vars).

const MESSAGES = {
  en: {
    reconnect: "Reconnect",
    connecting: "Connecting…",
    connected: "Connected",
    reconnecting: "Reconnecting (attempt {n})…",
    disconnected: "Disconnected",
    unauthorized: "Token required",
    tokenTitle: "Access token needed",
    tokenText: "Run `dominds url` in the workspace and open the URL it prints, or paste that URL (or the token) here.",
    tokenLinkRefused: "The token in the link was refused (it may have been rotated).",
    tokenPlaceholder: "http://127.0.0.1:5666/?auth=… or the token",
    tokenConnect: "Connect",
    tokenRefused: "That token is not this daemon's. `dominds url` prints the current one.",
    questions: "Questions",
    resumeAll: "Resume all",
    workflowTot: "Tree of Thoughts",
    workflowDebate: "Debate",
    workflowPlanSolve: "Plan & Solve",
    emergencyStop: "Emergency stop",
    running: "Running",
    done: "Done",
    archived: "Archived",
    newDialog: "+ New dialog",
    agent: "Agent",
    taskdoc: "Taskdoc",
    create: "Create",
    cancel: "Cancel",
    welcomeTitle: "Welcome to Dominds",
    welcomeText: "Pick a dialog on the left, create a new one, or try a suggested prompt.",
    openCaller: "↑ caller",
    backToLatest: "Back to latest",
    course: "Course {n} / {total}",
    resume: "Resume",
    declareDead: "Declare dead",
    declareDeadNote: "Declare this subdialog dead? Its caller gets a failure. Optional note:",
    markDone: "Mark done",
    archive: "Archive",
    revive: "Revive",
    inputPlaceholder: "Message the agent… (Ctrl+Enter to send)",
    send: "Send",
    stop: "Stop",
    answer: "Answer",
    answerPlaceholder: "Your answer…",
    pendingQuestions: "Pending questions",
    noQuestions: "No pending questions.",
    reminders: "Reminders",
    noReminders: "No reminders.",
    noDialogs: "No dialogs here.",
    thinking: "Thinking",
    functionCall: "Function call",
    result: "Result",
    responseFrom: "Response from @{agent}",
    openSubdialog: "open subdialog @{agent}",
    openDialog: "open dialog",
    streamError: "Stream error",
    incompleteStopped: "incomplete: stopped by the user",
    incompleteBroken: "incomplete: the stream broke",
    finishMaxTokens: "Reply cut off: the output limit (max_tokens) was reached",
    finishContextWindow: "Reply cut off: the context window is full",
    finishRefusal: "The model refused to continue",
    finishContentFilter: "Reply stopped by the provider's content filter",
    interruptedMarker: "interrupted ({reason})",
    resumedMarker: "resumed",
    askedIn: "asked by @{agent}",
    youWrote: "You",
    origin_q4h_answer: "Your answer",
    origin_assignment: "Assignment",
    origin_tellask_back: "Ask-back from a subdialog",
    origin_new_course: "New course",
    origin_diligence: "Diligence push",
    origin_system: "System",
    state_idle: "idle",
    state_proceeding: "generating",
    state_stop_requested: "stopping",
    state_interrupted: "interrupted",
    state_blocked: "blocked",
    state_needs_human_input: "waiting for you",
    state_waiting_for_subdialogs: "waiting for subdialogs",
    state_needs_human_input_and_subdialogs: "waiting for you and subdialogs",
    state_dead: "dead",
    state_terminal: "finished",
    state_error: "error",
    problems: "{n} problem(s)",
    stoppedCount: "Stopped {n} dialog(s).",
    resumedCount: "Resumed {n} dialog(s).",
    created: "Dialog created.",
    subdialogs: "{n} subdialog(s)",
  },
  zh: {
    reconnect: "重新连接",
    connecting: "连接中…",
    connected: "已连接",
    reconnecting: "重新连接中（第 {n} 次）…",
    disconnected: "已断开",
    unauthorized: "需要令牌",
    tokenTitle: "需要访问令牌",
    tokenText: "在工作区运行 `dominds url` 并打开它打印的网址，或把该网址（或令牌）粘贴到这里。",
    tokenLinkRefused: "链接中的令牌被拒绝（可能已更换）。",
    tokenPlaceholder: "http://127.0.0.1:5666/?auth=… 或令牌",
    tokenConnect: "连接",
    tokenRefused: "这不是此守护进程的令牌。`dominds url` 会打印当前令牌。",
    questions: "问题",
    resumeAll: "全部继续",
    workflowTot: "思维树",
    workflowDebate: "辩论",
    workflowPlanSolve: "计划与求解",
    emergencyStop: "紧急停止",
    running: "运行中",
    done: "已完成",
    archived: "已归档",
    newDialog: "+ 新建对话",
    agent: "智能体",
    taskdoc: "差遣牒",
    create: "创建",
    cancel: "取消",
    welcomeTitle: "欢迎使用 Dominds",
    welcomeText: "在左侧选择一个对话、新建对话，或试试推荐的提示。",
    openCaller: "↑ 调用方",
    backToLatest: "回到最新",
    course: "第 {n} / {total} 程",
    resume: "继续",
    declareDead: "宣告终止",
    declareDeadNote: "宣告此子对话终止？其调用方将收到失败结果。可选备注：",
    markDone: "标记完成",
    archive: "归档",
    revive: "恢复运行",
    inputPlaceholder: "给智能体发消息…（Ctrl+Enter 发送）",
    send: "发送",
    stop: "停止",
    answer: "回答",
    answerPlaceholder: "你的回答…",
    pendingQuestions: "待回答的问题",
    noQuestions: "没有待回答的问题。",
    reminders: "提醒",
    noReminders: "没有提醒。",
    noDialogs: "这里没有对话。",
    thinking: "思考",
    functionCall: "函数调用",
    result: "结果",
    responseFrom: "来自 @{agent} 的回复",
    openSubdialog: "打开子对话 @{agent}",
    openDialog: "打开对话",
    streamError: "流错误",
    incompleteStopped: "未完成：已被用户停止",
    incompleteBroken: "未完成：流已中断",
    finishMaxTokens: "回复被截断：已达到输出上限（max_tokens）",
    finishContextWindow: "回复被截断：上下文窗口已满",
    finishRefusal: "模型拒绝继续",
    finishContentFilter: "回复被服务商的内容过滤器终止",
    interruptedMarker: "已中断（{reason}）",
    resumedMarker: "已继续",
    askedIn: "由 @{agent} 提问",
    youWrote: "你",
    origin_q4h_answer: "你的回答",
    origin_assignment: "任务分派",
    origin_tellask_back: "来自子对话的提问",
    origin_new_course: "新一程",
    origin_diligence: "鞭策",
    origin_system: "系统",
    state_idle: "空闲",
    state_proceeding: "生成中",
    state_stop_requested: "停止中",
    state_interrupted: "已中断",
    state_blocked: "阻塞",
    state_needs_human_input: "等你回答",
    state_waiting_for_subdialogs: "等待子对话",
    state_needs_human_input_and_subdialogs: "等你回答与子对话",
    state_dead: "已终止",
    state_terminal: "已结束",
    state_error: "错误",
    problems: "{n} 个问题",
    stoppedCount: "已停止 {n} 个对话。",
    resumedCount: "已继续 {n} 个对话。",
    created: "已创建对话。",
    subdialogs: "{n} 个子对话",
  },
};

const STORAGE_KEY = "dominds.uiLanguage";
let current = localStorage.getItem(STORAGE_KEY) || (navigator.language?.startsWith("zh") ? "zh" : "en");
const listeners = [];

export function t(key, vars = {}) {
  let text = MESSAGES[current]?.[key] ?? MESSAGES.en[key] ?? key;
  for (const [name, value] of Object.entries(vars)) text = text.replaceAll(`{${name}}`, String(value));
  return text;
}

export const language = () => current;

export function applyStatic(root = document) {
  for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll("[data-i18n-placeholder]")) el.placeholder = t(el.dataset.i18nPlaceholder);
  document.documentElement.lang = current === "zh" ? "zh-CN" : "en";
}

export function setLanguage(lang) {
  current = lang === "zh" ? "zh" : "en";
  localStorage.setItem(STORAGE_KEY, current);
  applyStatic();
  for (const listener of listeners) listener(current);
}

export function onLanguageChange(listener) {
  listeners.push(listener);
}

/** Label of a run state ({kind, reason}) in the current language. */
export function runStateLabel(runState) {
  if (!runState) return "";
  if (runState.kind === "blocked" && runState.reason) return t(`state_${runState.reason}`);
  return t(`state_${runState.kind}`);
}
