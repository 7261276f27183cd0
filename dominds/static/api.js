// The JSON API under /api/ (see docs/protocol.md). Errors come back as {error} and are thrown.
// Requests carry the daemon's session cookie (same-origin), never a token held by script.

export async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const init = { method, headers, credentials: "same-origin" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({}));
  // the status and the whole answer go with the error: a 409 on a Taskdoc section carries its current text
  if (!response.ok) throw Object.assign(new Error(data.error || `${response.status} ${response.statusText}`), { status: response.status, data });
  return data;
}

export const apiGet = (path) => api("GET", path);
export const apiPost = (path, body = {}) => api("POST", path, body);
