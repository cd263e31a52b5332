// Search: a playground for the search functions on a node type's
// properties. It writes the .gq query the form describes (shown, and
// openable in the editor) and runs it through the query route.

import { h, fill, field, errorBox, shortID } from '../dom.js';
import { jsonBody } from '../api.js';
import { resultTable, defaultCaption } from '../table.js';

const MODES = [
  { id: 'search', label: 'search (holds a term)', text: true },
  { id: 'fuzzy', label: 'fuzzy (near a term)', text: true },
  { id: 'bm25', label: 'bm25 (ranked text)', text: true },
  { id: 'nearest', label: 'nearest (vectors)', vector: true },
  { id: 'rrf', label: 'rrf (bm25 + nearest)', text: true, vector: true },
];

// build writes the query for the form's choices: [source, raw params].
export function build(f) {
  const raw = { q: JSON.stringify(f.text) };
  let vecArg = '$q';
  let vparam = '';
  const t = f.text.trim();
  if (f.mode === 'nearest' || f.mode === 'rrf') {
    if (t.startsWith('[')) {
      // A vector typed as JSON; otherwise the text is embedded through the
      // property's @embed.
      raw.v = t;
      vecArg = '$v';
      vparam = `, $v: ${f.vectorType}`;
    }
  }
  const n = '$n';
  const tp = `${n}.${f.textProp}`;
  const vp = `${n}.${f.vectorProp}`;
  let body;
  switch (f.mode) {
    case 'search':
      body = `  match {\n    ${n}: ${f.type}\n    search(${tp}, $q)\n  }\n  return { ${n} }\n  limit ${f.limit}`;
      break;
    case 'fuzzy':
      body = `  match {\n    ${n}: ${f.type}\n    fuzzy(${tp}, $q, ${f.edits})\n  }\n  return { ${n} }\n  limit ${f.limit}`;
      break;
    case 'bm25':
      body = `  match { ${n}: ${f.type} }\n  return { ${n}, bm25(${tp}, $q) as score }\n  order { bm25(${tp}, $q) }\n  limit ${f.limit}`;
      break;
    case 'nearest':
      body = `  match { ${n}: ${f.type} }\n  return { ${n}, nearest(${vp}, ${vecArg}) as distance }\n  order { nearest(${vp}, ${vecArg}) }\n  limit ${f.limit}`;
      break;
    default:
      body = `  match { ${n}: ${f.type} }\n  return { ${n}, rrf(nearest(${vp}, ${vecArg}), bm25(${tp}, $q)) as score }\n  order { rrf(nearest(${vp}, ${vecArg}), bm25(${tp}, $q), ${f.k}) }\n  limit ${f.limit}`;
  }
  if (vecArg === '$v' && f.mode === 'nearest') delete raw.q;
  const qparam = raw.q !== undefined ? '$q: String' : '';
  const params = [qparam, vparam.replace(/^, /, '')].filter(Boolean).join(', ');
  return [`query ${f.mode}_playground(${params}) {\n${body}\n}\n`, raw];
}

export async function render(ctx, root) {
  const cat = await ctx.catalog();
  // The result's n column is a whole node of the searched type.
  const searchNodes = (type) => ({ n: { type, caption: defaultCaption(cat.nodes.find((x) => x.name === type)), lane: cat.nodes.findIndex((x) => x.name === type) } });
  const types = cat.nodes.filter((n) => n.properties.some((p) => p.type === 'String' || p.type.startsWith('Vector')));
  const modeSel = h('select', { id: 'search-mode' }, MODES.map((m) => h('option', { value: m.id }, m.label)));
  const typeSel = h('select', { id: 'search-type' }, types.map((n) => h('option', { value: n.name }, n.name)));
  const textSel = h('select', { id: 'search-prop' });
  const vecSel = h('select', { id: 'search-vector' });
  const text = h('input', { id: 'search-text', type: 'search', required: true, spellcheck: 'false', autocomplete: 'off' });
  const limit = h('input', { id: 'search-limit', type: 'number', min: '1', max: '1000', value: '10' });
  const edits = h('input', { id: 'search-edits', type: 'number', min: '0', max: '4', value: '2' });
  const k = h('input', { id: 'search-k', type: 'number', min: '1', value: '60' });
  const textField = field('Text property', textSel, 'an indexed property (@index) is searched through its index; another one is scanned');
  const vecField = field('Vector property', vecSel, 'a text query is embedded through the property\'s @embed; or type a vector as a JSON list');
  const editsField = field('Edits', edits);
  const kField = field('rrf k', k);
  const out = h('div', { id: 'search-results' });
  const srcBox = h('pre', { class: 'plan', id: 'search-source' });
  const openLink = h('a', { id: 'search-open' }, 'Open in the query editor');

  const nodeType = () => cat.nodes.find((n) => n.name === typeSel.value);
  function syncProps() {
    const n = nodeType();
    if (!n) return;
    fill(textSel, n.properties.filter((p) => p.type === 'String').map((p) => h('option', { value: p.name }, p.name + (p.index ? ' (indexed)' : ''))));
    fill(vecSel, n.properties.filter((p) => p.type.startsWith('Vector')).map((p) => h('option', { value: p.name, 'data-type': p.type }, p.name + (p.embed ? ` (@embed from ${p.embed})` : ''))));
    const idx = n.properties.find((p) => p.type === 'String' && p.index);
    if (idx) textSel.value = idx.name;
    syncMode();
  }
  function syncMode() {
    const m = MODES.find((x) => x.id === modeSel.value);
    textField.hidden = !m.text;
    vecField.hidden = !m.vector;
    editsField.hidden = m.id !== 'fuzzy';
    kField.hidden = m.id !== 'rrf';
    preview();
  }
  function form() {
    const vo = vecSel.selectedOptions[0];
    return { mode: modeSel.value, type: typeSel.value, textProp: textSel.value, vectorProp: vecSel.value, vectorType: vo ? vo.dataset.type : 'Vector(1)',
      text: text.value, limit: Math.max(1, parseInt(limit.value, 10) || 10), edits: Math.max(0, parseInt(edits.value, 10) || 0), k: Math.max(1, parseInt(k.value, 10) || 60) };
  }
  function preview() {
    const [src] = build(form());
    srcBox.textContent = src;
    openLink.href = ctx.href('query', { q: src });
    return src;
  }
  typeSel.addEventListener('change', syncProps);
  modeSel.addEventListener('change', syncMode);
  for (const el of [textSel, vecSel, text, limit, edits, k]) el.addEventListener('input', preview);

  const formEl = h('form', { class: 'panel search-form', id: 'search-form', 'aria-labelledby': 'search-title' },
    h('h2', { id: 'search-title' }, 'Search'),
    h('div', { class: 'grid-form' },
      field('Function', modeSel), field('Node type', typeSel), textField, vecField,
      field('Query text', text, 'words for search, fuzzy and bm25; text or a JSON vector for nearest'),
      field('Limit', limit), editsField, kField),
    h('div', { class: 'toolbar' }, h('button', { type: 'submit', class: 'primary' }, 'Search'), h('span', { class: 'spacer' }), openLink));
  formEl.addEventListener('submit', async (e) => {
    e.preventDefault();
    const f = form();
    if ((f.mode === 'nearest' || f.mode === 'rrf') && !f.vectorProp) {
      fill(out, errorBox(new Error(`${f.type} has no Vector property to rank by.`)));
      return;
    }
    const [src, raw] = build(f);
    fill(out, h('p', { class: 'muted', role: 'status' }, 'Searching…'));
    try {
      const res = await ctx.api.query(jsonBody(Object.assign({ query: src }, ctx.ref.query()), raw));
      fill(out, h('section', { class: 'panel', 'aria-labelledby': 'sr-title' }, h('h2', { id: 'sr-title' }, 'Results'),
        resultTable(res.columns, res.rows, { name: f.mode, raw: res, nodes: searchNodes(f.type), caption: `${res.row_count} ${f.type} rows by ${f.mode}, read at commit ${shortID(res.graph_commit_id)}` })));
    } catch (err) {
      fill(out, errorBox(err));
    }
  });

  fill(root, h('h1', null, 'Search ', h('span', { class: 'muted' }, ctx.ref.isBranch ? `on ${ctx.ref.name}` : `at commit ${shortID(ctx.ref.name)}`)),
    types.length === 0 ? h('p', { class: 'muted' }, 'No node type has a String or Vector property to search.') :
      h('div', { class: 'search-layout' }, formEl, h('section', { class: 'panel', 'aria-labelledby': 'gen-title' }, h('h2', { id: 'gen-title' }, 'The query'), srcBox)),
    out);
  syncProps();
}
