// Query: a .gq editor checked as you type, a form for the selected
// query's parameters, and its results as a table (sortable, paged,
// downloadable) and as a node-link graph whose nodes expand to their
// neighbours; the plan (explain) and the recent queries.

import { h, fill, section, errorBox, ago, shortID, cellText, valueText } from '../dom.js';
import { jsonBody } from '../api.js';
import { tabs } from '../ui.js';
import { createEditor } from '../editor.js';
import { resultTable, defaultCaption, captionOf } from '../table.js';
import { resultGraph } from '../graphview.js';

const RECENT_MAX = 12;

const plural = (n, w) => `${n} ${w}${n === 1 ? '' : 's'}`;
const NUMERIC = /^(I32|I64|U32|U64|F32|F64)$/;

// Recent queries are kept in this browser per graph and actor, so two
// people who share a browser profile do not see each other's.
function recentKey(ctx) {
  return 'omnigraph.console.recent.' + ctx.graph + '.' + ctx.status.actor;
}

export function recent(ctx) {
  try {
    return JSON.parse(localStorage.getItem(recentKey(ctx)) || '[]');
  } catch {
    return [];
  }
}

function remember(ctx, src, name) {
  const list = recent(ctx).filter((r) => r.src !== src || r.name !== name);
  list.unshift({ src, name, at: Date.now() * 1000 });
  localStorage.setItem(recentKey(ctx), JSON.stringify(list.slice(0, RECENT_MAX)));
}

function sample(cat) {
  const n = cat.nodes.find((x) => x.rows > 0) || cat.nodes[0];
  if (!n) return 'query q() {\n  match { $n: Type }\n  return { $n }\n}\n';
  return `query ${n.name.toLowerCase()}_sample() {\n  match { $n: ${n.name} }\n  return { $n }\n  limit 25\n}\n`;
}

// paramInput is the control of one declared parameter.
function paramInput(p, value) {
  if (p.type === 'Bool') {
    return h('select', null,
      p.nullable ? h('option', { value: '' }, '(null)') : null,
      h('option', { value: 'true', selected: value === 'true' }, 'true'),
      h('option', { value: 'false', selected: value === 'false' }, 'false'));
  }
  const attrs = { type: 'text', value: value || '', spellcheck: 'false', autocomplete: 'off' };
  if (p.type === 'Date') attrs.placeholder = 'YYYY-MM-DD';
  else if (p.type === 'DateTime') attrs.placeholder = '2024-01-31T12:00:00Z';
  else if (p.type.startsWith('[') || p.type.startsWith('Vector')) attrs.placeholder = 'a JSON list, e.g. ["a", "b"]';
  else if (NUMERIC.test(p.type)) attrs.inputmode = 'decimal';
  return h('input', attrs);
}

// rawParam is the JSON text of a parameter value, or throws what to fix.
function rawParam(p, text) {
  if (NUMERIC.test(p.type)) {
    if (!/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(text)) throw new Error(`$${p.name} is ${p.type}: write a number`);
    return text;
  }
  if (p.type === 'Bool') return text;
  if (p.type.startsWith('[') || p.type.startsWith('Vector')) {
    try {
      if (!Array.isArray(JSON.parse(text))) throw new Error('not a list');
    } catch {
      throw new Error(`$${p.name} is ${p.type}: write a JSON list such as ["a", "b"] or [0.1, 0.2]`);
    }
    return text;
  }
  return JSON.stringify(text);
}

export async function render(ctx, root) {
  const cat = await ctx.catalog();
  const src = ctx.route.params.get('q') || sample(cat);
  let check = null;
  // checkedText is the source the last check answer is about: Run checks
  // again when the editor holds anything else, so the query it runs is
  // the one on screen.
  let checkedText = null;
  let selected = ctx.route.params.get('name') || '';
  const values = {};

  const editorBox = h('div', { class: 'editor', id: 'editor' });
  const checkStatus = h('div', { class: 'check-status', id: 'check-status', role: 'status' }, 'Checking…');
  const errorList = h('ol', { class: 'check-errors', id: 'check-errors', 'aria-label': 'Type-check errors and warnings' });
  const querySel = h('select', { id: 'query-name' });
  const paramsBox = h('div', { class: 'params', id: 'params' });
  const runBtn = h('button', { type: 'button', class: 'primary', id: 'run' }, 'Run');
  const explainBtn = h('button', { type: 'button', id: 'explain', title: 'Show the plan of the selected query without running it' }, 'Explain');
  const runNote = h('span', { class: 'muted', id: 'run-note' });
  const results = h('div', { id: 'results' });
  const recentBox = h('div', { id: 'recent' });
  let cm;

  const current = () => (check ? check.queries.find((q) => q.name === selected) || check.queries[0] : null);

  function drawParams() {
    const q = current();
    if (!q || q.params.length === 0) {
      fill(paramsBox, q ? h('p', { class: 'muted' }, 'No parameters.') : null);
      return;
    }
    fill(paramsBox, h('fieldset', null, h('legend', null, 'Parameters'), q.params.map((p) => {
      const input = paramInput(p, values[p.name]);
      input.id = 'param-' + p.name;
      input.dataset.param = p.name;
      // A required Bool's select shows a value before any choice.
      if (p.type === 'Bool' && values[p.name] === undefined) values[p.name] = input.value;
      input.addEventListener('input', () => { values[p.name] = input.value; drawRunControls(); });
      input.addEventListener('change', () => { values[p.name] = input.value; drawRunControls(); });
      return h('div', { class: 'field' }, h('label', { for: input.id }, h('code', null, '$' + p.name), ': ' + p.type + (p.nullable ? '?' : '')), input);
    })));
  }

  // blocked is why the selected query cannot run yet (its type errors, or
  // a required parameter left empty), or '' when it can.
  function blocked() {
    const q = current();
    if (!q) return check && check.errors.length ? plural(check.errors.length, 'type error') + ': fix them to run' : 'No query to run.';
    const own = check.errors.filter((e) => e.query === q.name || (e.queries && e.queries.includes(q.name)) || (!e.query && !e.queries));
    if (!q.ok || own.length) return `${q.name} has ${plural(Math.max(own.length, 1), 'type error')}: fix ${own.length === 1 ? 'it' : 'them'} to run (see the list below the editor).`;
    const missing = q.params.filter((p) => !p.nullable && (values[p.name] || '').trim() === '');
    if (missing.length) return `Give ${missing.map((p) => '$' + p.name).join(', ')} a value to run (required: ${missing.length === 1 ? 'it is' : 'they are'} not optional).`;
    return '';
  }

  function drawRunControls() {
    const q = current();
    runBtn.hidden = false;
    runNote.textContent = '';
    runNote.className = 'muted';
    const why = check ? blocked() : '';
    runBtn.disabled = why !== '';
    runBtn.title = why;
    if (why) {
      runNote.textContent = why;
      runNote.className = 'run-blocked';
    }
    if (!q) return;
    if (q.kind === 'mutation') {
      if (!ctx.ref.isBranch) {
        runBtn.hidden = true;
        runNote.textContent = 'A mutation writes a branch: pick a branch, not a commit, to run it.';
      } else if (!ctx.may('change', ctx.ref.name)) {
        runBtn.hidden = true;
        runNote.textContent = `Your token may not change branch ${ctx.ref.name}: mutations are not offered.`;
      } else {
        runBtn.textContent = `Run mutation on ${ctx.ref.name}`;
      }
    } else {
      runBtn.textContent = 'Run';
    }
  }

  function onChange() {
    fill(checkStatus, 'Checking…');
  }

  function onCheck(res, err, text) {
    if (err) {
      fill(checkStatus, h('span', { class: 'bad' }, 'Check failed: ' + err.message));
      return;
    }
    check = res;
    checkedText = text;
    const names = res.queries.map((q) => q.name);
    if (!names.includes(selected)) selected = names[0] || '';
    fill(querySel, res.queries.map((q) => h('option', { value: q.name, selected: q.name === selected }, `${q.name} (${q.kind})`)));
    querySel.disabled = res.queries.length < 2;
    // The verdict and findings are omnigraph lint's for the same source:
    // errors fail, warnings (L201, L202) do not.
    const warnings = res.warnings || [];
    const warned = warnings.length ? h('span', { class: 'warn' }, ' · ' + plural(warnings.length, 'warning')) : null;
    if (res.ok) {
      fill(checkStatus, h('span', { class: 'good' }, '✓ No type errors'), warned);
    } else {
      fill(checkStatus, h('span', { class: 'bad' }, plural(res.errors.length, 'error')), warned);
    }
    const item = (e, cls) => h('li', { class: cls, 'data-line': e.line, 'data-column': e.column, 'data-code': e.code },
      e.line > 0
        ? h('button', { type: 'button', class: 'link', onclick: () => { cm.focus(); cm.setCursor({ line: e.line - 1, ch: e.column - 1 }); } },
          h('span', { class: 'mono' }, `${e.code} at ${e.line}:${e.column}`))
        : h('span', { class: 'mono' }, e.code),
      cls === 'check-warning' ? ' warning: ' : ' ', e.message);
    fill(errorList, res.errors.map((e) => item(e, 'check-error')).concat(warnings.map((e) => item(e, 'check-warning'))));
    drawParams();
    drawRunControls();
  }

  querySel.addEventListener('change', () => {
    selected = querySel.value;
    drawParams();
    drawRunControls();
  });

  async function run() {
    const text = cm.getValue();
    if (text !== checkedText) {
      try {
        onCheck(await ctx.api.check(text, ctx.ref), null, text);
      } catch (e) {
        fill(results, errorBox(e));
        return;
      }
    }
    const q = current();
    if (!q) return;
    const why = blocked();
    if (why) {
      // Ctrl+Enter reaches here with Run disabled: say why, send nothing.
      drawRunControls();
      fill(results, errorBox(why));
      return;
    }
    let raw = {};
    try {
      for (const p of q.params) {
        const v = (values[p.name] || '').trim();
        if (v === '') {
          if (!p.nullable) throw new Error(`$${p.name} needs a value (${p.type})`);
          continue;
        }
        raw[p.name] = rawParam(p, v);
      }
    } catch (e) {
      fill(results, errorBox(e));
      return;
    }
    const multi = check.queries.length > 1 ? q.name : '';
    fill(results, h('p', { class: 'muted', role: 'status' }, 'Running…'));
    try {
      if (q.kind === 'mutation') {
        if (!ctx.ref.isBranch || !ctx.may('change', ctx.ref.name)) return;
        const ok = await ctx.confirm('Run this mutation?', `Mutation ${q.name} writes one commit on branch ${ctx.ref.name}.`, 'Run mutation');
        if (!ok) {
          fill(results);
          return;
        }
        const out = await ctx.api.mutate(jsonBody({ query: text, name: multi, branch: ctx.ref.name }, raw));
        remember(ctx, text, q.name);
        await ctx.refresh();
        fill(results, section('Mutation result', h('p', { id: 'mutation-result' },
          `${out.affected_nodes} nodes and ${out.affected_edges} edges changed; `,
          out.commit ? ['commit ', h('a', { href: ctx.href('commits/' + out.commit.graph_commit_id), class: 'mono' }, shortID(out.commit.graph_commit_id))] : 'nothing changed, no commit.')));
        ctx.toast(out.commit ? `Committed ${shortID(out.commit.graph_commit_id)} on ${ctx.ref.name}` : 'Nothing changed');
      } else {
        const out = await ctx.api.query(jsonBody(Object.assign({ query: text, name: multi }, ctx.ref.query()), raw));
        remember(ctx, text, q.name);
        showResults(q, out);
      }
      drawRecent();
      const params = Object.fromEntries(ctx.route.params);
      if (text.length < 4000) {
        params.q = text;
        params.name = q.name;
        history.replaceState(null, '', ctx.hrefRef('query', ctx.ref.name, params));
      }
    } catch (e) {
      fill(results, errorBox(e));
    }
  }
  runBtn.addEventListener('click', run);

  // explain shows the selected query's plan (from the check) without
  // running it.
  async function explain() {
    const text = cm.getValue();
    if (text !== checkedText) {
      try {
        onCheck(await ctx.api.check(text, ctx.ref), null, text);
      } catch (e) {
        fill(results, errorBox(e));
        return;
      }
    }
    const q = current();
    fill(results, h('section', { class: 'panel', 'aria-labelledby': 'plan-title' }, h('h2', { id: 'plan-title' }, q ? `Plan of ${q.name}` : 'Plan'),
      h('pre', { class: 'plan', id: 'plan' }, q && q.plan ? q.plan : 'No plan: the query has errors (see the list under the editor).')));
  }
  explainBtn.addEventListener('click', explain);

  // captions is the property each node type is captioned by in this
  // page's tables and graphs (the graph view's pickers change it).
  const captions = {};
  const captionFor = (type) => {
    if (!captions[type]) captions[type] = defaultCaption(cat.nodes.find((n) => n.name === type));
    return captions[type];
  };
  const typeIndex = (t) => cat.nodes.findIndex((n) => n.name === t);

  function showResults(q, out) {
    const nodes = {};
    for (const c of q.columns || []) {
      if (c.node_type) nodes[c.name] = { type: c.node_type, caption: captionFor(c.node_type), lane: typeIndex(c.node_type) };
    }
    const tablePanel = h('div', null, resultTable(out.columns, out.rows, { name: q.name, raw: out, nodes, caption: `${out.row_count} rows of ${q.name}, read at commit ${shortID(out.graph_commit_id)}` }));
    const graphPanel = h('div', { class: 'graph-panel' });
    const planPanel = h('div', null, h('pre', { class: 'plan', id: 'plan' }, q.plan || '(no plan: the query has errors)'));
    const jsonPanel = h('div', null, h('pre', { class: 'json' }, JSON.stringify(out, null, 2)));
    let drawn = false;
    const t = tabs('Result views', [
      { id: 'table', label: 'Table', panel: tablePanel },
      { id: 'graph', label: 'Graph', panel: graphPanel },
      { id: 'plan', label: 'Plan', panel: planPanel },
      { id: 'json', label: 'JSON', panel: jsonPanel },
    ], (id) => {
      if (id === 'graph' && !drawn) {
        drawn = true;
        drawGraph(graphPanel, q, out);
      }
    });
    fill(results, h('section', { class: 'panel', 'aria-labelledby': 'results-title' },
      h('h2', { id: 'results-title' }, 'Results'), t.bar, t.panels));
  }

  async function drawGraph(panel, q, out) {
    const nodeCols = (q.columns || []).filter((c) => c.node_type);
    const status = h('p', { class: 'muted', 'aria-live': 'polite' });
    const canvas = h('div', { class: 'graph-canvas', role: 'img', 'aria-label': 'Result nodes and the links between them; click a node to see its properties' });
    const nodePanel = h('aside', { class: 'node-panel', id: 'node-panel', 'aria-label': 'The selected node', 'aria-live': 'polite' },
      h('p', { class: 'muted' }, 'Click a node to see its properties.'));
    // One caption picker per node type: the property its nodes show.
    const captionBox = h('div', { class: 'captions', id: 'captions' });
    const drawCaptions = () => {
      const shown = Array.from(new Set(g ? g.cy.nodes().map((n) => n.data('type')) : nodeCols.map((c) => c.node_type)));
      fill(captionBox, h('span', { class: 'muted' }, 'Caption:'), shown.map((t) => {
        const nt = cat.nodes.find((n) => n.name === t);
        const sel = h('select', { 'data-type': t, 'aria-label': `Caption of ${t} nodes` },
          ['id'].concat(nt ? nt.properties.filter((p) => !p.type.startsWith('Vector') && p.type !== 'Blob').map((p) => p.name) : []).map((p) => h('option', { value: p, selected: p === captionFor(t) }, p)));
        sel.addEventListener('change', () => {
          captions[t] = sel.value;
          g.cy.nodes().filter((n) => n.data('type') === t).forEach((n) => n.data('label', captionOf(n.data('props'), sel.value)));
        });
        return h('label', { class: 'inline' }, h('span', { class: 'lane-key', 'data-lane': String(typeIndex(t) % 8) }, t), sel);
      }));
    };
    fill(panel, status, captionBox, h('div', { class: 'graph-with-panel' }, canvas, nodePanel));
    if (nodeCols.length === 0) {
      fill(panel, h('p', { class: 'muted' }, 'This query returns no whole nodes: return a node variable (return { $p }) to see its rows as a graph.'));
      return;
    }
    const key = (type, id) => type + ':' + id;
    const nodes = [];
    const links = [];
    for (const row of out.rows) {
      for (const c of nodeCols) {
        const v = row[c.name];
        if (v && v.id !== undefined) nodes.push({ key: key(c.node_type, v.id), id: v.id, type: c.node_type, props: v, label: captionOf(v, captionFor(c.node_type)), typeIndex: typeIndex(c.node_type) });
      }
      for (const l of q.links || []) {
        const a = row[l.from];
        const b = row[l.to];
        const ta = nodeCols.find((c) => c.name === l.from);
        const tb = nodeCols.find((c) => c.name === l.to);
        if (a && b && ta && tb) links.push({ from: key(ta.node_type, a.id), to: key(tb.node_type, b.id), label: l.max_hops > 1 ? `${l.edge}{${l.min_hops},${l.max_hops}}` : l.edge });
      }
    }
    let g;
    const expand = async (n) => {
      const nt = cat.nodes.find((x) => x.name === n.type);
      if (!nt || !nt.key || nt.key.length !== 1) {
        status.textContent = `${n.type} has no single @key, so its neighbours cannot be looked up by id.`;
        return;
      }
      const kp = nt.properties.find((p) => p.name === nt.key[0]);
      const raw = NUMERIC.test(kp.type) ? String(n.nodeId) : JSON.stringify(String(n.nodeId));
      const jobs = [];
      for (const e of cat.edges) {
        if (e.from === n.type) jobs.push({ e, out: true, src: `query out_${e.name}($id: ${kp.type}) {\n  match {\n    $a: ${n.type} { ${kp.name}: $id }\n    $b: ${e.to}\n    $a ${e.name} $b\n  }\n  return { $b }\n  limit 25\n}` });
        if (e.to === n.type) jobs.push({ e, out: false, src: `query in_${e.name}($id: ${kp.type}) {\n  match {\n    $a: ${n.type} { ${kp.name}: $id }\n    $b: ${e.from}\n    $b ${e.name} $a\n  }\n  return { $b }\n  limit 25\n}` });
      }
      status.textContent = `Expanding ${n.type} ${n.nodeId}…`;
      try {
        const answers = await Promise.all(jobs.map((j) => ctx.api.query(jsonBody(Object.assign({ query: j.src }, ctx.ref.query()), { id: raw }))));
        const more = [];
        const moreLinks = [];
        answers.forEach((a, i) => {
          const j = jobs[i];
          const bt = j.out ? j.e.to : j.e.from;
          for (const row of a.rows) {
            const b = row.b;
            more.push({ key: key(bt, b.id), id: b.id, type: bt, props: b, label: captionOf(b, captionFor(bt)), typeIndex: typeIndex(bt) });
            moreLinks.push(j.out ? { from: n.id, to: key(bt, b.id), label: j.e.name } : { from: key(bt, b.id), to: n.id, label: j.e.name });
          }
        });
        const added = g.add(more, moreLinks);
        drawCaptions();
        status.textContent = `${n.type} ${n.nodeId}: ${added} new neighbour${added === 1 ? '' : 's'} (${g.count()} nodes shown).`;
      } catch (e) {
        status.textContent = 'Expanding failed: ' + e.message;
      }
    };
    // show fills the property panel with the tapped node (as Neo4j
    // Browser's): its type, id and every property, and the way to its
    // neighbours.
    const show = (n) => {
      const props = Object.entries(n.props || {}).filter(([k]) => k !== 'id');
      const nt = cat.nodes.find((x) => x.name === n.type);
      const typeOf = (k) => { const p = nt && nt.properties.find((x) => x.name === k); return p ? p.type + (p.nullable ? '?' : '') : ''; };
      fill(nodePanel,
        h('h3', null, h('span', { class: 'lane-key', 'data-lane': String(typeIndex(n.type) % 8) }, n.type), ' ', captionOf(n.props, captionFor(n.type))),
        h('dl', { class: 'kv', id: 'node-props' },
          h('dt', null, 'id'), h('dd', { class: 'mono', 'data-prop': 'id' }, String(n.nodeId)),
          props.map(([k, v]) => [h('dt', { title: typeOf(k) }, k), h('dd', { 'data-prop': k, class: v === null ? 'muted' : null, title: valueText(v) }, cellText(v))])),
        h('div', { class: 'toolbar' },
          h('button', { type: 'button', class: 'small', id: 'node-expand', onclick: () => expand(n) }, 'Expand neighbours'),
          h('button', { type: 'button', class: 'small', onclick: () => g.cy.center(g.cy.$id(n.id)) }, 'Center')));
    };
    g = await resultGraph(canvas, show);
    g.add(nodes, links);
    drawCaptions();
    status.textContent = `${g.count()} nodes. Click a node to see its properties; expand it from there.`;
  }

  function drawRecent() {
    const list = recent(ctx);
    fill(recentBox, list.length === 0 ? h('p', { class: 'muted' }, 'Queries you run appear here (kept in this browser).') :
      h('ul', { class: 'recent' }, list.map((r) => h('li', null,
        h('button', { type: 'button', class: 'link', onclick: () => { cm.setValue(r.src); selected = r.name; cm.focus(); } }, r.name),
        ' ', h('span', { class: 'muted small' }, ago(r.at))))));
  }

  fill(root,
    h('h1', null, 'Query ', h('span', { class: 'muted' }, ctx.ref.isBranch ? `on ${ctx.ref.name}` : `at commit ${shortID(ctx.ref.name)}`)),
    h('div', { class: 'query-layout' },
      h('div', { class: 'query-main' },
        h('section', { class: 'panel', 'aria-labelledby': 'editor-title' },
          h('h2', { id: 'editor-title' }, 'Editor'),
          editorBox,
          h('div', { class: 'toolbar' }, checkStatus, h('span', { class: 'spacer' }),
            h('label', { for: 'query-name', class: 'inline' }, 'Query'), querySel, explainBtn, runBtn),
          runNote, errorList, paramsBox),
        results),
      h('aside', { class: 'panel', 'aria-labelledby': 'recent-title' }, h('h2', { id: 'recent-title' }, 'Recent queries'), recentBox,
        h('h2', null, 'Types'), h('ul', { class: 'types-mini' }, cat.nodes.map((n) => h('li', null, h('code', null, n.name), ' ', h('span', { class: 'muted small' }, `${n.rows} rows`))),
          cat.edges.map((e) => h('li', null, h('code', null, e.name), ' ', h('span', { class: 'muted small' }, `${e.from} → ${e.to}`)))))));
  drawRecent();
  cm = await createEditor(editorBox, src, { check: (text, signal) => ctx.api.check(text, ctx.ref, signal), onCheck, onChange, run });
}
