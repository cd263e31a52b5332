// DOM helpers. Every piece of data reaches the page as text (textContent,
// attribute values), never as markup: nothing here parses HTML.

// h builds an element: h('a', {href: '/x', class: 'c', onclick: fn}, 'text', child).
// Attributes starting with "on" are listeners; true/false toggle boolean
// attributes; null and undefined are skipped, as are null children.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') {
        el.addEventListener(k.slice(2), v);
      } else if (k === 'class') {
        el.className = v;
      } else if (k === 'text') {
        el.textContent = v;
      } else if (k === 'value') {
        el.value = v;
      } else if (v === true) {
        el.setAttribute(k, '');
      } else {
        el.setAttribute(k, String(v));
      }
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) {
      append(el, c);
    } else if (c instanceof Node) {
      el.appendChild(c);
    } else {
      el.appendChild(document.createTextNode(String(c)));
    }
  }
}

// clear empties an element and fills it with children.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// shortID is the tail of a commit id (its random part): enough to tell
// commits apart on a page; the full id is in the title and copy buttons.
export function shortID(id) {
  return id ? id.slice(-8) : '';
}

// when renders a time in microseconds (or an RFC 3339 string) as local
// date and time.
export function when(t) {
  if (t === undefined || t === null || t === '') return '';
  const d = typeof t === 'number' ? new Date(t / 1000) : new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

// ago renders a time as "5 min ago".
export function ago(t) {
  const d = typeof t === 'number' ? new Date(t / 1000) : new Date(t);
  const s = Math.round((Date.now() - d.getTime()) / 1000);
  if (Number.isNaN(s)) return '';
  if (s < 60) return `${Math.max(s, 0)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

// valueText renders a result value for a table cell.
export function valueText(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// cellText is valueText with long numeric lists (vectors) shortened to
// their first values and length; the whole value stays in downloads and
// in the cell's title.
export function cellText(v) {
  if (v === null || typeof v !== 'object') return valueText(v);
  const short = (x) => {
    if (Array.isArray(x) && x.length > 4 && x.every((e) => typeof e === 'number')) {
      return `[${x.slice(0, 2).map((e) => +e.toPrecision(3)).join(', ')}, … ${x.length} numbers]`;
    }
    return x;
  };
  if (Array.isArray(v)) {
    const s = short(v);
    return typeof s === 'string' ? s : JSON.stringify(v);
  }
  let changed = false;
  const o = {};
  for (const [k, x] of Object.entries(v)) {
    o[k] = short(x);
    if (o[k] !== x) changed = true;
  }
  return changed ? JSON.stringify(o) : JSON.stringify(v);
}

// commitLink is a link to a commit's page.
export function commitLink(ctx, id, label) {
  if (!id) return h('span', { class: 'muted' }, '—');
  return h('a', { href: ctx.href('commits/' + encodeURIComponent(id)), class: 'mono', title: id }, label || shortID(id));
}

// download offers text as a file.
export function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: name, class: 'hidden' });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// section is a titled region of a page.
export function section(title, ...children) {
  const id = 'sec-' + title.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  return h('section', { class: 'panel', 'aria-labelledby': id }, h('h2', { id }, title), ...children);
}

// field is a labelled form control.
export function field(label, control, hint) {
  const id = control.id || ('f-' + Math.random().toString(36).slice(2, 9));
  control.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hint ? h('div', { class: 'hint' }, hint) : null);
}

// errorBox shows a failed request: the server's message (and detail).
export function errorBox(err) {
  const msg = err && err.message ? err.message : String(err);
  return h('div', { class: 'error', role: 'alert' }, msg);
}
