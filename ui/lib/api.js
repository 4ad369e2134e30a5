// api.js - every call the dashboard makes: the same HTTP API curl uses,
// authenticated by the session cookie (same origin, so the browser sends
// Origin and Sec-Fetch-Site and the server's check passes).
//
// A failure throws ApiError whose message is the API's own: the /v1
// envelope's message, or the Problem body's detail (or title), followed by
// the field messages of a 422.

export class ApiError extends Error {
  constructor(status, body) {
    super(messageOf(status, body));
    this.status = status;
    this.body = body;
  }
}

function messageOf(status, body) {
  if (!body || typeof body !== 'object') return `HTTP ${status}`;
  let text = body.message || body.detail || body.title || body.errorDetails || `HTTP ${status}`;
  if (body.errors && typeof body.errors === 'object') {
    const parts = [];
    for (const [name, list] of Object.entries(body.errors)) {
      parts.push(`${name}: ${Array.isArray(list) ? list.join(', ') : String(list)}`);
    }
    if (parts.length) text += ` (${parts.join('; ')})`;
  }
  return text;
}

// Called with every 401 (the session ended): the shell shows sign-in.
let onSignedOut = () => {};
export function whenSignedOut(fn) { onSignedOut = fn; }

// The next page's URL of a list answer's Link header, or null.
function nextOf(response) {
  const link = response.headers.get('Link') || '';
  const match = /<([^>]+)>;\s*rel="next"/.exec(link);
  return match ? match[1] : null;
}

export async function call(method, path, body, withNext = false) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, { message: `network error: ${err.message}` });
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = { message: text.slice(0, 200) }; }
  }
  if (!response.ok) {
    if (response.status === 401 && path !== '/v1/session') onSignedOut();
    throw new ApiError(response.status, data);
  }
  return withNext ? { data, next: nextOf(response) } : data;
}

export const get = (path) => call('GET', path);
// A list page: { data, next } where next is the Link rel="next" URL (null on the last page).
export const getPage = (path) => call('GET', path, undefined, true);
export const post = (path, body) => call('POST', path, body === undefined ? {} : body);
export const patch = (path, body) => call('PATCH', path, body);
export const put = (path, body) => call('PUT', path, body);
export const del = (path) => call('DELETE', path);

// Path pieces are always encoded.
export function path(strings, ...values) {
  let out = strings[0];
  values.forEach((v, i) => { out += encodeURIComponent(String(v)) + strings[i + 1]; });
  return out;
}
