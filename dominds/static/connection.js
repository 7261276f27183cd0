// The websocket to the daemon: auth subprotocol, request/reply matching, automatic reconnect.
//
// Token sources, in order: ?auth= in the URL (moved to sessionStorage and removed from the address
// bar), sessionStorage, localStorage (a token typed after a 4401 refusal). Browsers cannot set headers
// on a websocket, so the token travels as the subprotocol "dominds-auth.<token>".

const TOKEN_KEY = "dominds.authKey";
const MAX_BACKOFF_MS = 8000;

export function initialToken() {
  const url = new URL(location.href);
  const fromUrl = url.searchParams.get("auth");
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl);
    url.searchParams.delete("auth");
    history.replaceState(null, "", url.pathname + url.search + url.hash);
    return fromUrl;
  }
  return sessionStorage.getItem(TOKEN_KEY) || localStorage.getItem(TOKEN_KEY) || null;
}

export function rememberToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
  localStorage.setItem(TOKEN_KEY, token);
}

export class Connection extends EventTarget {
  constructor(token) {
    super();
    this.token = token;
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
    if (this.token) protocols.push(`dominds-auth.${this.token}`);
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
      waiter.reject(new Error("connection closed"));
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

  reconnectNow(token) {
    if (token !== undefined) this.token = token;
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
        reject(new Error("not connected"));
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(requestId);
        reject(new Error("no reply from the daemon"));
      }, timeoutMs);
      this.pending.set(requestId, { resolve, reject, timer });
    });
  }
}
