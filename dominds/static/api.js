// The JSON API under /api/ (see docs/protocol.md). Errors come back as {error} and are thrown.

let authToken = null;

export function setApiToken(token) {
  authToken = token;
}

export async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (authToken) headers.Authorization = `Bearer ${authToken}`;
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || `${response.status} ${response.statusText}`);
  return data;
}

export const apiGet = (path) => api("GET", path);
export const apiPost = (path, body = {}) => api("POST", path, body);
