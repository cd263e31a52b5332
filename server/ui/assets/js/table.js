// The results table (sortable by any column, paged, downloadable as CSV
// or JSON) and the list of entity changes with their before and after
// images, which the commit, diff and merge preview views share.

import { h, fill, valueText, cellText, download } from './dom.js';

// CAPTION_NAMES are the property names a node is best known by, in order
// of preference (Neo4j Browser picks its caption the same way).
const CAPTION_NAMES = ['name', 'title', 'label', 'caption', 'display_name', 'slug', 'handle'];

// defaultCaption is the property a node type is captioned by: the first
// of CAPTION_NAMES it has as a String, else its single @key, else its id.
export function defaultCaption(nt) {
  if (!nt) return 'id';
  const strings = new Set(nt.properties.filter((p) => p.type === 'String').map((p) => p.name));
  const name = CAPTION_NAMES.find((n) => strings.has(n));
  if (name) return name;
  return nt.key && nt.key.length === 1 ? nt.key[0] : 'id';
}

// captionOf is the text a node value (its id and properties) shows as,
// by the property prop.
export function captionOf(v, prop) {
  const c = v && v[prop];
  return c === null || c === undefined || c === '' ? String(v && v.id) : cellText(c);
}

// nodeCell renders a whole node: its type, its caption and its other
// properties as "name: value" (vectors shortened); the full JSON is the
// cell's title and stays in the downloads.
export function nodeCell(v, info) {
  const cap = info.caption || 'id';
  const props = Object.entries(v).filter(([k, x]) => k !== cap && k !== 'id' && x !== null && x !== undefined);
  return [
    h('span', { class: 'lane-key node-type', 'data-lane': String(info.lane % 8) }, info.type), ' ',
    h('strong', { class: 'node-caption' }, captionOf(v, cap)),
    cap !== 'id' ? h('span', { class: 'muted small node-id' }, ' ', String(v.id)) : null,
    props.length ? h('div', { class: 'node-props small' }, props.map(([k, x], i) => [i ? ' · ' : '', h('span', { class: 'muted' }, k + ': '), cellText(x)])) : null,
  ];
}

function compare(a, b) {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return a === b ? 0 : a ? 1 : -1;
  return valueText(a).localeCompare(valueText(b), undefined, { numeric: true });
}

// csv renders rows as RFC 4180 CSV; objects and lists as JSON text.
export function csv(columns, rows) {
  const cell = (v) => {
    const s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  };
  return [columns.map(cell).join(',')].concat(rows.map((r) => columns.map((c) => cell(r[c])).join(','))).join('\r\n') + '\r\n';
}

// resultTable shows columns/rows (rows are objects by column name).
// opts: pageSize, caption, name (download file name), raw (the whole
// answer, for JSON download), nodes (column name -> {type, caption,
// lane}: whole-node columns, shown readable by nodeCell).
export function resultTable(columns, rows, opts = {}) {
  const pageSize = opts.pageSize || 50;
  let sortCol = null;
  let desc = false;
  let page = 0;
  let order = rows.map((_, i) => i);
  const wrap = h('div', { class: 'result-table' });
  const status = h('span', { class: 'muted', 'aria-live': 'polite' });
  const prev = h('button', { type: 'button', class: 'small' }, '‹ Previous');
  const next = h('button', { type: 'button', class: 'small' }, 'Next ›');
  const table = h('table', { class: 'data' });
  const pages = () => Math.max(1, Math.ceil(rows.length / pageSize));
  prev.addEventListener('click', () => { page = Math.max(0, page - 1); draw(); });
  next.addEventListener('click', () => { page = Math.min(pages() - 1, page + 1); draw(); });

  function sortBy(c) {
    if (sortCol === c) desc = !desc;
    else { sortCol = c; desc = false; }
    order = rows.map((_, i) => i).sort((i, j) => {
      const d = compare(rows[i][c], rows[j][c]);
      return (desc ? -d : d) || i - j;
    });
    page = 0;
    draw();
  }

  function draw() {
    const head = h('tr', null, columns.map((c) => {
      const sorted = sortCol === c ? (desc ? 'descending' : 'ascending') : 'none';
      return h('th', { scope: 'col', 'aria-sort': sorted },
        h('button', { type: 'button', class: 'sort', onclick: () => sortBy(c), title: `Sort by ${c}` }, c,
          h('span', { 'aria-hidden': 'true', class: 'arrow' }, sorted === 'ascending' ? ' ▲' : sorted === 'descending' ? ' ▼' : '')));
    }));
    const body = order.slice(page * pageSize, (page + 1) * pageSize).map((i) =>
      h('tr', null, columns.map((c) => {
        const v = rows[i][c];
        const full = valueText(v);
        const node = opts.nodes && opts.nodes[c];
        if (node && v && typeof v === 'object') return h('td', { class: 'node-cell', title: full }, nodeCell(v, node));
        const shown = cellText(v);
        return h('td', { class: v === null || v === undefined ? 'null' : typeof v === 'number' ? 'num' : null, title: shown !== full ? full : null }, shown);
      })));
    fill(table, opts.caption ? h('caption', null, opts.caption) : null, h('thead', null, head), h('tbody', null, body));
    status.textContent = rows.length === 0 ? 'No rows.' : `Rows ${page * pageSize + 1}–${Math.min(rows.length, (page + 1) * pageSize)} of ${rows.length} · page ${page + 1} of ${pages()}`;
    prev.disabled = page === 0;
    next.disabled = page >= pages() - 1;
  }
  draw();

  const name = opts.name || 'result';
  const bar = h('div', { class: 'toolbar' }, status,
    h('span', { class: 'spacer' }),
    rows.length > pageSize ? [prev, next] : null,
    h('button', { type: 'button', class: 'small', onclick: () => download(name + '.csv', 'text/csv', csv(columns, order.map((i) => rows[i]))) }, 'Download CSV'),
    h('button', { type: 'button', class: 'small', onclick: () => download(name + '.json', 'application/json', JSON.stringify(opts.raw || { columns, rows }, null, 2)) }, 'Download JSON'));
  fill(wrap, bar, h('div', { class: 'scroll' }, table));
  return wrap;
}

// changeList renders entity changes (merge.Change): op, entity and, per
// property, the value before and after.
export function changeList(changes, opts = {}) {
  if (!changes || changes.length === 0) return h('p', { class: 'muted' }, opts.empty || 'No entity changes.');
  const rows = [];
  for (const c of changes) {
    const before = c.before || {};
    const after = c.after || {};
    const keys = Array.from(new Set(Object.keys(before).concat(Object.keys(after)))).filter((k) => k !== 'id' && k !== 'src' && k !== 'dst');
    const shown = c.op === 'update' ? keys.filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k])) : keys.filter((k) => (c.op === 'delete' ? before[k] : after[k]) !== null && (c.op === 'delete' ? before[k] : after[k]) !== undefined);
    const ent = h('td', { rowspan: Math.max(1, shown.length) },
      h('span', { class: 'op op-' + c.op }, c.op), ' ', h('span', { class: 'muted' }, c.entity_kind), ' ',
      h('strong', null, c.type_name), ' ', h('span', { class: 'mono' }, c.id),
      c.entity_kind === 'edge' ? h('div', { class: 'muted small' }, `${c.from} → ${c.to}`) : null);
    if (shown.length === 0) {
      rows.push(h('tr', { class: 'change' }, ent, h('td', { colspan: 3, class: 'muted' }, 'no property values')));
      continue;
    }
    shown.forEach((k, i) => {
      rows.push(h('tr', { class: i === 0 ? 'change' : null }, i === 0 ? ent : null,
        h('th', { scope: 'row' }, k),
        h('td', { class: c.op === 'insert' ? 'muted' : 'before' }, c.op === 'insert' ? '—' : valueText(before[k])),
        h('td', { class: c.op === 'delete' ? 'muted' : 'after' }, c.op === 'delete' ? '—' : valueText(after[k]))));
    });
  }
  return h('div', { class: 'scroll' }, h('table', { class: 'data changes' },
    opts.caption ? h('caption', null, opts.caption) : null,
    h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Entity'), h('th', { scope: 'col' }, 'Property'), h('th', { scope: 'col' }, 'Before'), h('th', { scope: 'col' }, 'After'))),
    h('tbody', null, rows)));
}
