// The console's shell: sign-in, the graph and ref pickers, navigation by
// URL (every page has one: /ui/GRAPH/PAGE?ref=..., so links, reloads and
// the back button work) and the page modules.

import { h, fill, shortID, ago } from './dom.js';
import { call, token, setToken, unauthorized, Graph, Ref } from './api.js';
import * as overview from './pages/overview.js';
import * as query from './pages/query.js';
import * as search from './pages/search.js';
import * as branches from './pages/branches.js';
import * as commits from './pages/commits.js';
import { confirmDialog, toast } from './ui.js';

const PREFIX = '/ui/';

const PAGES = {
  overview: { title: 'Overview', mod: overview },
  query: { title: 'Query', mod: query },
  search: { title: 'Search', mod: search },
  branches: { title: 'Branches', mod: branches },
  commits: { title: 'Commits', mod: commits },
};
// Pages reached from another one's links, shown under its tab.
const ALIASES = { diff: 'commits' };

const main = document.getElementById('main');
const header = document.getElementById('top');

// state is per graph: its status and branch heads, refreshed after writes.
const state = { graphs: null, graph: null, api: null, status: null, heads: null, recent: [], catalogs: new Map() };

// RECENT_COMMITS is how many of main's latest commits the ref picker
// offers.
const RECENT_COMMITS = 10;
let renderSeq = 0;

// route reads the location: /ui/, /ui/GRAPH/, /ui/GRAPH/PAGE[/REST].
function route() {
  const rest = location.pathname.startsWith(PREFIX) ? location.pathname.slice(PREFIX.length) : '';
  const parts = rest.split('/').filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(location.search);
  return { graph: parts[0] || '', page: parts[1] || 'overview', rest: parts.slice(2), params };
}

function href(graph, page, params) {
  const p = PREFIX + encodeURIComponent(graph) + '/' + (page === 'overview' ? '' : page);
  const q = params ? new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '')).toString() : '';
  return q ? p + '?' + q : p;
}

export function navigate(url, replace) {
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  render();
}

// Links inside the app change the page without reloading it.
document.addEventListener('click', (e) => {
  const a = e.target.closest('a[href]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || a.hasAttribute('download') || a.target) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(PREFIX)) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
});
window.addEventListener('popstate', () => render());

unauthorized(() => {
  if (!document.getElementById('login-form')) renderLogin(token() ? 'The server refused this token. Paste a valid one.' : '');
});

function renderLogin(message) {
  state.graphs = null;
  fill(header, h('div', { class: 'brand' }, 'OmniGraph'));
  const input = h('input', { id: 'login-token', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const form = h('form', { id: 'login-form', class: 'login panel' },
    h('h1', null, 'Sign in'),
    h('p', null, 'This server checks bearer tokens. Paste the secret that ', h('code', null, 'omnigraph token add'),
      ' printed for you. It is kept in this tab only (sessionStorage) and sent as a header with each request.'),
    message ? h('div', { class: 'error', role: 'alert' }, message) : null,
    h('div', { class: 'field' }, h('label', { for: 'login-token' }, 'Token'), input),
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    render();
  });
  fill(main, form);
  input.focus();
}

function signOut() {
  setToken('');
  state.graph = null;
  renderLogin('Signed out.');
}

// ctx is what a page gets: the graph's API and state, the ref it reads,
// and helpers.
function makeCtx(r, ref) {
  const g = state.graph;
  const ctx = {
    graph: g,
    api: state.api,
    status: state.status,
    heads: state.heads,
    ref,
    route: r,
    href: (page, params) => href(g, page, Object.assign(ref.name !== 'main' ? { ref: ref.name } : {}, params || {})),
    hrefRef: (page, refName, params) => href(g, page, Object.assign(refName !== 'main' ? { ref: refName } : {}, params || {})),
    navigate,
    toast,
    confirm: confirmDialog,
    // head is the branch's entry of branches/heads.
    head: (b) => (state.heads ? state.heads.branches.find((x) => x.name === b) : null),
    // may: the policy allows action on branch (or on the graph).
    may(action, branch) {
      if (state.status.mode === 'read-only' && action !== 'read' && action !== 'export') return false;
      if (!branch) return state.status.allowed_actions.includes(action);
      const hd = ctx.head(branch);
      return !!hd && hd.allowed_actions.includes(action);
    },
    // refresh reloads the graph's state after a write.
    async refresh() {
      await loadGraph(g, true);
      ctx.status = state.status;
      ctx.heads = state.heads;
      state.catalogs.clear();
    },
    async catalog(rf) {
      const key = (rf || ref).isBranch ? 'b:' + (rf || ref).name : 'c:' + (rf || ref).name;
      if (!state.catalogs.has(key)) state.catalogs.set(key, state.api.catalog(rf || ref));
      try {
        return await state.catalogs.get(key);
      } catch (e) {
        state.catalogs.delete(key);
        throw e;
      }
    },
  };
  return ctx;
}

async function loadGraph(id, force) {
  if (!force && state.graph === id && state.status) return;
  const api = new Graph(id);
  const [status, heads, recent] = await Promise.all([api.status(), api.heads('main'), api.commits('main', RECENT_COMMITS)]);
  state.graph = id;
  state.api = api;
  state.status = status;
  state.heads = heads;
  state.recent = recent.commits;
  state.catalogs.clear();
}

function renderHeader(r, ref) {
  const g = state.graph;
  const current = ALIASES[r.page] || r.page;
  const graphSel = h('select', { id: 'graph-select', 'aria-label': 'Graph' },
    state.graphs.map((x) => h('option', { value: x.graph_id, selected: x.graph_id === g }, x.graph_id)));
  graphSel.addEventListener('change', () => navigate(href(graphSel.value, current)));
  const listed = !ref.isBranch && state.recent.some((c) => c.graph_commit_id === ref.name);
  const refSel = h('select', { id: 'ref-select', 'aria-label': 'Branch or commit to read' },
    h('optgroup', { label: 'Branches' }, state.heads.branches.map((b) => h('option', { value: b.name, selected: ref.isBranch && b.name === ref.name }, b.name))),
    h('optgroup', { label: 'Recent commits on main' }, state.recent.map((c) => h('option', { value: c.graph_commit_id, selected: !ref.isBranch && c.graph_commit_id === ref.name },
      `${shortID(c.graph_commit_id)} · ${c.actor_id || '?'} · ${ago(c.created_at)}`))),
    ref.isBranch || listed ? null : h('optgroup', { label: 'Commit' }, h('option', { value: ref.name, selected: true }, 'commit ' + shortID(ref.name))));
  refSel.addEventListener('change', () => {
    const params = Object.fromEntries(r.params);
    params.ref = refSel.value === 'main' ? undefined : refSel.value;
    navigate(href(g, r.page, params) + '');
  });
  const nav = h('nav', { 'aria-label': 'Pages' }, h('ul', null, Object.entries(PAGES).map(([page, p]) =>
    h('li', null, h('a', { href: href(g, page, ref.name !== 'main' ? { ref: ref.name } : null), 'aria-current': page === current ? 'page' : null }, p.title)))));
  const who = h('div', { class: 'who' },
    h('span', { class: 'muted', title: 'the actor of your token' }, state.status.actor),
    state.status.mode === 'read-only' ? h('span', { class: 'badge' }, 'read-only replica') : null,
    state.status.auth ? h('button', { type: 'button', class: 'link', onclick: signOut }, 'Sign out') : null);
  fill(header,
    h('a', { class: 'brand', href: PREFIX }, 'OmniGraph'),
    h('div', { class: 'pickers' }, graphSel, refSel),
    nav, who);
}

async function render() {
  const seq = ++renderSeq;
  const r = route();
  try {
    if (!state.graphs) {
      state.graphs = (await call('GET', '/graphs')).graphs;
    }
    if (seq !== renderSeq) return;
    if (!r.graph) {
      if (state.graphs.length === 1) {
        navigate(href(state.graphs[0].graph_id, 'overview'), true);
        return;
      }
      fill(header, h('a', { class: 'brand', href: PREFIX }, 'OmniGraph'));
      fill(main, h('section', { class: 'panel' }, h('h1', null, 'Graphs'),
        state.graphs.length === 0 ? h('p', null, 'Your token may read no graph on this server.') : null,
        h('ul', { class: 'graph-list' }, state.graphs.map((x) => h('li', null, h('a', { href: href(x.graph_id, 'overview') }, x.graph_id))))));
      document.title = 'Graphs · OmniGraph';
      return;
    }
    await loadGraph(r.graph, false);
    if (seq !== renderSeq) return;
    const refName = r.params.get('ref') || 'main';
    const ref = new Ref(refName, state.heads.branches.some((b) => b.name === refName));
    const page = PAGES[ALIASES[r.page] || r.page];
    renderHeader(r, ref);
    const root = h('div', { class: 'page', 'data-page': r.page });
    fill(main, root);
    if (!page) {
      fill(root, h('div', { class: 'error', role: 'alert' }, `No page "${r.page}" in the console.`));
      return;
    }
    document.title = `${page.title} · ${state.graph} · OmniGraph`;
    const ctx = makeCtx(r, ref);
    await page.mod.render(ctx, root);
    if (seq === renderSeq) {
      main.setAttribute('data-ready', String(seq));
      performance.mark('og-rendered');
    }
  } catch (err) {
    if (err && err.status === 401) return; // the login form is up
    fill(main, h('div', { class: 'error', role: 'alert' }, err.message || String(err)));
  }
}

render();
