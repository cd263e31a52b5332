// Overview: the graph's types with their row counts at the ref, the
// schema drawn as a graph of types, and the server's state (version,
// storage kind, writer lock, recovery, automatic compaction). A load of
// NDJSON into the branch is offered where the policy allows it.

import { h, fill, section, errorBox, when, ago, commitLink, shortID, field } from '../dom.js';
import { schemaGraph } from '../graphview.js';

function dl(pairs) {
  return h('dl', { class: 'kv' }, pairs.filter(Boolean).map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}

function propList(t) {
  return h('ul', { class: 'props' }, t.properties.map((p) => h('li', null,
    h('code', null, p.name), ': ', h('span', { class: 'type' }, p.type + (p.nullable ? '?' : '')),
    p.key ? h('span', { class: 'badge key' }, 'key') : null,
    p.unique && !p.key ? h('span', { class: 'badge' }, 'unique') : null,
    p.index ? h('span', { class: 'badge' }, 'indexed') : null,
    p.embed ? h('span', { class: 'badge' }, `@embed(${p.embed})`) : null,
    p.description ? h('span', { class: 'muted small' }, ' — ' + p.description) : null)));
}

function statusCards(ctx) {
  const s = ctx.status;
  const lock = s.lock;
  const ao = s.auto_optimize;
  return h('div', { class: 'cards', id: 'status-cards' },
    section('Server', dl([
      ['Version', s.server_version],
      ['Mode', s.mode],
      ['Authentication', s.auth ? 'bearer tokens' : 'open mode (loopback only)'],
      ['You are', s.actor],
      ['You may', s.allowed_actions.length ? h('span', { class: 'badges' }, s.allowed_actions.map((a) => h('span', { class: 'badge' }, a))) : 'nothing on the whole graph (see branches)'],
    ])),
    section('Storage', dl([
      ['Kind', h('span', { id: 'storage-kind' }, s.storage_kind)],
      ['Branches', String(s.branches)],
      ['Main head', s.main_head ? [commitLink(ctx, s.main_head.graph_commit_id), ' ', h('span', { class: 'muted small' }, ago(s.main_head.created_at))] : '—'],
    ])),
    section('Writer lock', lock.held ? dl([
      ['Held by', h('span', { id: 'lock-holder' }, `${lock.operation} on ${lock.host} (pid ${lock.pid})`)],
      ['Since', when(lock.since)],
      ['Binary', lock.binary_version],
      ['Lease', lock.leased ? `${lock.lease_seconds} s, last heartbeat ${lock.last_heartbeat ? ago(lock.last_heartbeat) : 'none yet'}` : 'none (unleased lock)'],
    ]) : h('p', { id: 'lock-holder' }, lock.unknown_format ? 'Held by a newer binary (unknown record format).' : 'Free: no process holds the writer lock.')),
    section('Recovery', h('p', { id: 'recovery-state', class: s.recovery.pending ? 'bad' : 'good' },
      s.recovery.pending ? `${s.recovery.pending} write${s.recovery.pending === 1 ? '' : 's'} awaiting recovery` : 'Clean: no write awaits recovery.'),
    s.recovery.intents.length ? h('ul', null, s.recovery.intents.map((i) => h('li', null, `${i.kind} on ${i.branch} by ${i.actor || '?'} (${i.classification}, ${when(i.started_at)})`))) : null),
    section('Automatic compaction', h('p', { id: 'compaction-state' },
      !ao.enabled ? 'Off on this server.' :
        ao.running ? 'Running now.' : ao.runs ? `On; ${ao.runs} check${ao.runs === 1 ? '' : 's'} so far, last on ${ao.last_branch}: ${ao.last_outcome.replace(/_/g, ' ')} (${ago(ao.last_at)}).` : 'On; no write has needed a check yet.')));
}

function loadPanel(ctx) {
  if (!ctx.ref.isBranch || !ctx.may('load', ctx.ref.name)) return null;
  const file = h('input', { type: 'file', id: 'load-file', accept: '.jsonl,.ndjson,application/x-ndjson,application/json,text/plain', required: true });
  const mode = h('select', { id: 'load-mode' }, h('option', { value: 'merge' }, 'merge (upsert)'), h('option', { value: 'append' }, 'append (strict insert)'), h('option', { value: 'overwrite' }, 'overwrite (replace each type in the batch)'));
  const out = h('div', { role: 'status' });
  const form = h('form', { id: 'load-form' }, h('div', { class: 'grid-form' }, field('NDJSON file', file), field('Mode', mode)),
    h('button', { type: 'submit' }, `Load into ${ctx.ref.name}`), out);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const f = file.files[0];
    if (!f) return;
    if (mode.value === 'overwrite' && !(await ctx.confirm('Overwrite?', `Every type in ${f.name} is replaced on ${ctx.ref.name} by the file's rows.`, 'Overwrite'))) return;
    fill(out, 'Loading…');
    try {
      const res = await ctx.api.load(ctx.ref.name, mode.value, f);
      await ctx.refresh();
      fill(out, `Loaded ${res.nodes} nodes and ${res.edges} edges`, res.commit ? ['; commit ', commitLink(ctx, res.commit.graph_commit_id)] : '; nothing changed', '.');
      ctx.toast(`Loaded ${res.total_entities} entities into ${ctx.ref.name}`);
    } catch (err) {
      fill(out, errorBox(err));
    }
  });
  return section('Load data', h('p', { class: 'muted' }, 'A graph batch: one {"type": T, "data": {...}} or {"edge": E, "from": id, "to": id, "data": {...}} per line, as one commit.'), form);
}

export async function render(ctx, root) {
  const title = h('h1', null, 'Overview ', h('span', { class: 'muted' }, ctx.ref.isBranch ? `of ${ctx.ref.name}` : `at commit ${shortID(ctx.ref.name)}`));
  const typesBox = h('div', { id: 'types' }, h('p', { class: 'muted', role: 'status' }, 'Reading the schema…'));
  const detail = h('div', { class: 'type-detail', id: 'type-detail', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Point at a type or an edge to see its properties, keys and indexes.'));
  const canvas = h('div', { class: 'graph-canvas schema', id: 'schema-graph', role: 'img', 'aria-label': 'The schema: node types as boxes, edge types as arrows between them' });
  fill(root, title, statusCards(ctx),
    h('div', { class: 'schema-layout' },
      section('Schema', h('div', { class: 'schema-wrap' }, canvas, detail)),
      section('Types', typesBox)),
    loadPanel(ctx));
  let cat;
  try {
    cat = await ctx.catalog();
  } catch (err) {
    fill(typesBox, errorBox(err));
    return;
  }
  const rows = [];
  for (const n of cat.nodes) {
    rows.push(h('tr', { 'data-type': n.name },
      h('th', { scope: 'row' }, h('details', null, h('summary', null, n.name), n.description ? h('p', { class: 'muted small' }, n.description) : null, propList(n))),
      h('td', null, 'node'), h('td', { class: 'num rows' }, String(n.rows)),
      h('td', null, n.key ? n.key.join(', ') : h('span', { class: 'muted' }, 'none (ULID ids)')),
      h('td', null, (n.index || []).map((g) => g.join('+')).join(', ') || '—')));
  }
  for (const e of cat.edges) {
    rows.push(h('tr', { 'data-type': e.name },
      h('th', { scope: 'row' }, h('details', null, h('summary', null, e.name), e.description ? h('p', { class: 'muted small' }, e.description) : null, propList(e))),
      h('td', null, `edge ${e.from} → ${e.to}`, h('div', { class: 'muted small' }, `@card ${e.cardinality}`)), h('td', { class: 'num rows' }, String(e.rows)),
      h('td', null, '—'), h('td', null, (e.index || []).map((g) => g.join('+')).join(', ') || '—')));
  }
  fill(typesBox, h('div', { class: 'scroll' }, h('table', { class: 'data', id: 'types-table' },
    h('caption', null, `${cat.nodes.length} node types and ${cat.edges.length} edge types at commit ${shortID(cat.graph_commit_id)}`),
    h('thead', null, h('tr', null, ['Type', 'Kind', 'Rows', 'Key', 'Indexes'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, rows))));
  const show = (kind, name) => {
    const t = (kind === 'node' ? cat.nodes : cat.edges).find((x) => x.name === name);
    if (!t) return;
    fill(detail, h('h3', null, name, ' ', h('span', { class: 'muted small' }, kind === 'node' ? `node · ${t.rows} rows` : `edge ${t.from} → ${t.to} · ${t.rows} rows · @card ${t.cardinality}`)),
      t.description ? h('p', { class: 'muted' }, t.description) : null,
      t.key ? h('p', null, 'Key: ', h('code', null, t.key.join(', '))) : null,
      (t.unique || []).length ? h('p', null, 'Unique: ', t.unique.map((g) => g.join('+')).join('; ')) : null,
      (t.index || []).length ? h('p', null, 'Indexes: ', t.index.map((g) => g.join('+')).join('; ')) : null,
      propList(t));
  };
  // The drawing loads Cytoscape.js first: the page does not wait for it.
  schemaGraph(canvas, cat, show).then(() => performance.mark('og-schema-drawn'), (err) => fill(canvas, errorBox(err)));
}
