// The Plan & Solve page's websocket (/plan-solve/ws): one connection at a time, a session asked for on
// each open, and, when the daemon goes away (a restart, a crash), a new connection by itself, less and
// less often up to every 5 s. A close with 4401 (no access) is left to the page: it asks for the token.

export class PlanSolveSocket {
  /** handlers: { state(name: "connecting" | "open" | "closed"), event(message), closed(closeEvent) } */
  constructor(handlers) {
    this.handlers = handlers;
    this.ws = null;
    this.delay = 500;
    this.timer = null;
  }

  connect(token) {
    clearTimeout(this.timer);
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${scheme}://${location.host}/plan-solve/ws`, token ? [`dominds-auth.${token}`] : []);
    this.ws = ws;
    this.handlers.state("connecting");
    ws.onopen = () => {
      this.delay = 500;
      this.handlers.state("open");
      this.send({ event: "user.create_session" });
    };
    ws.onmessage = (message) => this.handlers.event(JSON.parse(message.data));
    ws.onclose = (closed) => {
      this.handlers.state("closed");
      this.handlers.closed(closed);
      if (closed.code === 4401) return;
      this.timer = setTimeout(() => this.connect(token), this.delay);
      this.delay = Math.min(this.delay * 2, 5000);
    };
  }

  send(message) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }
}
