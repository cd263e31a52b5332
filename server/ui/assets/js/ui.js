// Shared widgets: the confirmation dialog, the status toast, tabs, and the
// vendored libraries, loaded when a page first needs them.

import { h, fill } from './dom.js';

// confirmDialog asks before a destructive action; resolves true on
// confirm. A native modal <dialog>: focus moves into it, Escape cancels.
export function confirmDialog(title, message, action) {
  return new Promise((resolve) => {
    const ok = h('button', { type: 'button', class: 'danger', id: 'confirm-ok' }, action || 'Confirm');
    const cancel = h('button', { type: 'button', id: 'confirm-cancel' }, 'Cancel');
    const dlg = h('dialog', { class: 'confirm', 'aria-labelledby': 'confirm-title', 'aria-describedby': 'confirm-text' },
      h('h2', { id: 'confirm-title' }, title),
      h('p', { id: 'confirm-text' }, message),
      h('div', { class: 'actions' }, cancel, ok));
    const done = (v) => {
      dlg.close();
      dlg.remove();
      resolve(v);
    };
    ok.addEventListener('click', () => done(true));
    cancel.addEventListener('click', () => done(false));
    dlg.addEventListener('cancel', (e) => {
      e.preventDefault();
      done(false);
    });
    document.body.appendChild(dlg);
    dlg.showModal();
    cancel.focus();
  });
}

let toastTimer = 0;

// toast shows a short status message (announced by screen readers).
export function toast(msg, kind) {
  const el = document.getElementById('toast');
  el.className = 'toast ' + (kind || 'ok');
  el.textContent = msg;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    el.textContent = '';
    el.className = 'toast';
  }, 6000);
}

// tabs builds a tab list over panels: [{id, label, panel}]. Arrow keys
// move between tabs, as the ARIA tabs pattern has it.
export function tabs(name, list, onShow) {
  const bar = h('div', { role: 'tablist', 'aria-label': name, class: 'tabs' });
  const buttons = list.map((t, i) => h('button', {
    type: 'button', role: 'tab', id: `tab-${t.id}`, 'aria-controls': `panel-${t.id}`,
    'aria-selected': i === 0 ? 'true' : 'false', tabindex: i === 0 ? '0' : '-1',
  }, t.label));
  const panels = list.map((t, i) => {
    t.panel.id = `panel-${t.id}`;
    t.panel.setAttribute('role', 'tabpanel');
    t.panel.setAttribute('aria-labelledby', `tab-${t.id}`);
    t.panel.hidden = i !== 0;
    return t.panel;
  });
  const show = (i) => {
    buttons.forEach((b, j) => {
      b.setAttribute('aria-selected', i === j ? 'true' : 'false');
      b.tabIndex = i === j ? 0 : -1;
      panels[j].hidden = i !== j;
    });
    if (onShow) onShow(list[i].id);
  };
  buttons.forEach((b, i) => {
    b.addEventListener('click', () => show(i));
    b.addEventListener('keydown', (e) => {
      if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
      const j = (i + (e.key === 'ArrowRight' ? 1 : buttons.length - 1)) % buttons.length;
      buttons[j].focus();
      show(j);
    });
    bar.appendChild(b);
  });
  return { bar, panels, show };
}

const LIBS = {
  cytoscape: ['vendor/cytoscape-3.35.0/cytoscape.min.js'],
  codemirror: ['vendor/codemirror-5.65.21/codemirror.js', 'vendor/codemirror-5.65.21/addon/mode/simple.js', 'vendor/codemirror-5.65.21/addon/lint/lint.js'],
};
const CSS = {
  codemirror: ['vendor/codemirror-5.65.21/codemirror.css', 'vendor/codemirror-5.65.21/addon/lint/lint.css'],
};
const loading = new Map();

function script(src) {
  return new Promise((resolve, reject) => {
    const s = h('script', { src });
    s.addEventListener('load', resolve);
    s.addEventListener('error', () => reject(new Error('could not load ' + src)));
    document.head.appendChild(s);
  });
}

// need loads a vendored library once (scripts in order).
export function need(name) {
  if (!loading.has(name)) {
    for (const href of CSS[name] || []) document.head.appendChild(h('link', { rel: 'stylesheet', href }));
    loading.set(name, LIBS[name].reduce((p, src) => p.then(() => script(src)), Promise.resolve()));
  }
  return loading.get(name);
}

// busy shows a loading line in el until the promise settles.
export async function busy(el, label, p) {
  fill(el, h('p', { class: 'muted', role: 'status' }, label));
  return p;
}
