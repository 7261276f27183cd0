// The websocket to the daemon: request/reply matching and automatic reconnect.
//
// Authentication is the daemon's session cookie (HttpOnly, set when the page was opened with a valid
// ?auth=<token>, or by POST /api/session from the token dialog): no script ever holds the token, and
// the cookie survives daemon restarts because the token does (see dominds/server/auth.py).

const MAX_BACKOFF_MS = 4000;

/** True once if the page was opened with a ?auth= token the daemon refused (the flag leaves the URL). */
export function takeAuthFailure() {
  const url = new URL(location.href);
  if (!url.searchParams.has("authFailed")) return false;
  url.searchParams.delete("authFailed");
  history.replaceState(history.state, "", url.pathname + url.search + url.hash);
  return true;
}

/** Exchange a token (or a pasted panel URL holding one) for the session cookie. */
export async function signIn(text) {
  let token = String(text || "").trim();
  const match = token.match(/[?&]auth=([^&#\s]+)/);
  if (match) token = decodeURIComponent(match[1]);
  if (!token) return false;
  const response = await fetch("/api/session", { method: "POST", headers: { Authorization: `Bearer ${token}` } });
  return response.ok;
}

/** A request that did not reach the daemon, or whose reply was lost: `offline` (drafts.js keeps it). */
function offline(message) {
  return Object.assign(new Error(message), { offline: true });
}

export class Connection extends EventTarget {
  constructor() {
    super();
    this.ws = null;
    this.state = "connecting";
    this.attempt = 0;
    this.pending = new Map(); // requestId -> {resolve, reject, timer}
    this.nextRequest = 1;
    this.retryTimer = null;
  }

  connect() {
    clearTimeout(this.retryTimer);
    const protocols = ["dominds"];
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    this.setState(this.attempt ? "reconnecting" : "connecting");
    const ws = new WebSocket(`${scheme}//${location.host}/ws`, protocols);
    this.ws = ws;
    ws.onopen = () => {
      this.attempt = 0;
      this.setState("connected");
    };
    ws.onmessage = (event) => this.receive(event.data);
    ws.onclose = (event) => this.closed(ws, event);
  }

  receive(data) {
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    const waiter = message.requestId !== undefined ? this.pending.get(message.requestId) : undefined;
    this.dispatchEvent(new CustomEvent("message", { detail: message }));
    if (waiter) {
      this.pending.delete(message.requestId);
      clearTimeout(waiter.timer);
      if (message.type === "error") waiter.reject(new Error(message.message));
      else waiter.resolve(message);
    }
  }

  closed(ws, event) {
    if (ws !== this.ws) return;
    for (const waiter of this.pending.values()) {
      clearTimeout(waiter.timer);
      waiter.reject(offline("connection closed"));
    }
    this.pending.clear();
    if (event.code === 4401) {
      this.setState("unauthorized");
      return;
    }
    this.attempt += 1;
    this.setState("reconnecting");
    const delay = Math.min(250 * 2 ** (this.attempt - 1), MAX_BACKOFF_MS);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  reconnectNow() {
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) this.ws.close();
    this.attempt = Math.max(this.attempt, 1);
    this.connect();
  }

  setState(state) {
    this.state = state;
    this.dispatchEvent(new CustomEvent("state", { detail: { state, attempt: this.attempt } }));
  }

  get open() {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  send(message) {
    if (!this.open) return false;
    this.ws.send(JSON.stringify(message));
    return true;
  }

  /** Send with a requestId; resolves with the reply, rejects with the daemon's error message. */
  request(message, timeoutMs = 15000) {
    const requestId = `c${this.nextRequest++}`;
    return new Promise((resolve, reject) => {
      if (!this.send({ ...message, requestId })) {
        reject(offline("not connected"));
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(requestId);
        reject(offline("no reply from the daemon"));
      }, timeoutMs);
      this.pending.set(requestId, { resolve, reject, timer });
    });
  }
}
