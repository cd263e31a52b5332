// The server's HTTP API, as the console calls it. The bearer token lives
// in this tab's sessionStorage (gone when the tab closes) and travels in
// the Authorization header only: the console never sets or sends a
// cookie, so a request another site forges carries no credential.

const TOKEN_KEY = 'omnigraph.console.token';

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

// ApiError is a non-2xx answer: status, the error envelope (body) and its
// message.
export class ApiError extends Error {
  constructor(status, body, text) {
    super((body && body.error) || text || `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

let onUnauthorized = () => {};

// unauthorized sets what happens on a 401 (the login form).
export function unauthorized(fn) {
  onUnauthorized = fn;
}

// MAX_RETRIES bounds the retries of a request the server asked to retry
// later (429 or 503 with Retry-After: admission is full).
const MAX_RETRIES = 3;

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// call sends one request. body is sent as JSON unless raw is given (a
// string or Blob with its content type). A 429 or 503 with Retry-After is
// retried after the wait it names (at most 5 s, three times): the server
// refused it before any work, so sending it again is safe.
export async function call(method, path, opts = {}) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await callOnce(method, path, opts);
    } catch (err) {
      const wait = err instanceof ApiError && err.retryAfter ? Number(err.retryAfter) : NaN;
      if (attempt >= MAX_RETRIES || !(err.status === 429 || err.status === 503) || !(wait >= 0)) throw err;
      await sleep(Math.min(wait, 5) * 1000);
    }
  }
}

async function callOnce(method, path, opts) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(opts.query || {})) {
    if (v === undefined || v === null || v === '') continue;
    url.searchParams.set(k, String(v));
  }
  const headers = { Accept: 'application/json' };
  const t = token();
  if (t) headers.Authorization = 'Bearer ' + t;
  let body;
  if (opts.raw !== undefined) {
    body = opts.raw;
    headers['Content-Type'] = opts.type;
  } else if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['Content-Type'] = 'application/json';
  }
  const res = await fetch(url, { method, headers, body, credentials: 'omit', cache: 'no-store', signal: opts.signal });
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const err = new ApiError(res.status, data, text);
    err.retryAfter = res.headers.get('Retry-After');
    if (res.status === 401) onUnauthorized(err);
    throw err;
  }
  return data;
}

// Graph is the API of one served graph.
export class Graph {
  constructor(id) {
    this.id = id;
    this.base = '/graphs/' + encodeURIComponent(id);
  }
  status() { return call('GET', this.base + '/status'); }
  catalog(ref) { return call('GET', this.base + '/catalog', { query: ref.query() }); }
  heads(base) { return call('GET', this.base + '/branches/heads', { query: { base } }); }
  check(src, ref, signal) { return call('POST', this.base + '/query/check', { body: Object.assign({ query: src }, ref.query()), signal }); }
  // query and mutate take a prepared JSON body (parameters keep the
  // exact digits the user typed).
  query(body) { return call('POST', this.base + '/query', { body }); }
  mutate(body) { return call('POST', this.base + '/mutate', { body }); }
  load(branch, mode, file) {
    return call('POST', this.base + '/load/ndjson', { query: { branch, mode }, raw: file, type: 'application/x-ndjson' });
  }
  commits(branch, limit) { return call('GET', this.base + '/commits', { query: { branch, limit } }); }
  commit(id) { return call('GET', this.base + '/commits/' + encodeURIComponent(id)); }
  changes(id, limit) { return call('GET', this.base + '/commits/' + encodeURIComponent(id) + '/changes', { query: { limit } }); }
  diff(from, to, filter) {
    const body = { from, to };
    for (const [k, v] of Object.entries(filter || {})) if (v !== undefined && v !== '' && v !== 0) body[k] = v;
    return call('POST', this.base + '/diff', { body });
  }
  createBranch(name, from) { return call('POST', this.base + '/branches', { body: { name, from } }); }
  deleteBranch(name) {
    return call('DELETE', this.base + '/branches/' + name.split('/').map(encodeURIComponent).join('/'));
  }
  previewMerge(source, target, limit) { return call('POST', this.base + '/branches/merge/preview', { body: { source, target, limit } }); }
  merge(source, target, deleteBranch) {
    return call('POST', this.base + '/branches/merge', { body: { source, target, delete_branch: deleteBranch || undefined } });
  }
}

// Ref is what a page reads: a branch head or a commit.
export class Ref {
  constructor(name, isBranch) {
    this.name = name;
    this.isBranch = isBranch;
  }
  // query is the read target as the routes take it.
  query() { return this.isBranch ? { branch: this.name } : { snapshot: this.name }; }
}

// jsonBody renders a request body whose params are raw JSON texts, so a
// 64-bit integer keeps every digit the user typed.
export function jsonBody(fields, rawParams) {
  const parts = [];
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || v === null || v === '') continue;
    parts.push(JSON.stringify(k) + ':' + JSON.stringify(v));
  }
  const ps = Object.entries(rawParams || {});
  if (ps.length > 0) {
    parts.push('"params":{' + ps.map(([k, raw]) => JSON.stringify(k) + ':' + raw).join(',') + '}');
  }
  return '{' + parts.join(',') + '}';
}
