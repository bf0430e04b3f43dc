// Requests to /v1 with the inbox session: the cookie goes by itself (same
// origin), and every request carries the session's CSRF token, which /v1
// requires of a cookie-authenticated request that changes state
// (web.SessionLookup).

export class ProblemError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

export function createApi(csrf) {
  const headers = { 'X-CSRF-Token': csrf };
  async function call(method, path, body) {
    const init = { method, headers: { ...headers }, credentials: 'same-origin' };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const r = await fetch(path, init);
    const text = r.status === 204 ? '' : await r.text();
    let json = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    if (!r.ok) throw new ProblemError(r.status, json);
    return { status: r.status, body: json };
  }
  return {
    headers,
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body),
  };
}
