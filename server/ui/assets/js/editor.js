// The .gq editor: CodeMirror 5 with a highlighting mode for the query
// language and the lint addon fed by the server's type check
// (POST query/check), so errors appear at their line and column as you
// type. The check answer also drives the page (parameters, plan).

import { need } from './ui.js';

let defined = false;

function defineMode(CM) {
  if (defined) return;
  defined = true;
  CM.defineSimpleMode('gq', {
    start: [
      { regex: /\/\/.*/, token: 'comment' },
      { regex: /\/\*/, token: 'comment', next: 'comment' },
      { regex: /"(?:[^\\"]|\\.)*"?/, token: 'string' },
      { regex: /\$[A-Za-z_][A-Za-z0-9_]*/, token: 'variable-2' },
      { regex: /@[A-Za-z_][A-Za-z0-9_]*/, token: 'meta' },
      { regex: /(?:query|mutation)\b/, token: 'keyword', next: 'decl' },
      { regex: /(?:match|return|order|limit|insert|update|delete|set|where|not|as|asc|desc)\b/, token: 'keyword' },
      { regex: /(?:count|sum|avg|min|max|search|fuzzy|match_text|bm25|nearest|rrf|date|datetime|now)\b(?=\s*\()/, token: 'builtin' },
      { regex: /(?:true|false|null)\b/, token: 'atom' },
      { regex: /(?:contains|starts_with)\b/, token: 'operator' },
      { regex: /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/, token: 'number' },
      { regex: /[A-Z][A-Za-z0-9_]*/, token: 'type' },
      { regex: /[a-z_][A-Za-z0-9_]*/, token: null },
      { regex: /!=|<=|>=|[=<>]/, token: 'operator' },
      { regex: /[{(\[]/, indent: true },
      { regex: /[})\]]/, dedent: true },
    ],
    decl: [
      { regex: /\s+/, token: null },
      { regex: /[A-Za-z_][A-Za-z0-9_]*/, token: 'def', next: 'start' },
      { regex: /(?=.)/, next: 'start' },
    ],
    comment: [
      { regex: /.*?\*\//, token: 'comment', next: 'start' },
      { regex: /.*/, token: 'comment' },
    ],
    meta: { lineComment: '//', blockCommentStart: '/*', blockCommentEnd: '*/' },
  });
}

// utf16Col turns a 1-based column counted in characters (as the server
// reports it) into a 0-based CodeMirror offset (UTF-16 units).
export function utf16Col(text, col) {
  return Array.from(text).slice(0, Math.max(0, col - 1)).join('').length;
}

// mark is the range an error underlines: the name or property path at
// its position ($p.nme, Person, knows), or one character, clamped to the
// document.
function mark(CM, cm, e) {
  const last = cm.lastLine();
  const line = Math.min(Math.max(e.line - 1, 0), last);
  const text = cm.getLine(line);
  let ch = e.line - 1 > last ? text.length : utf16Col(text, e.column);
  ch = Math.min(ch, text.length);
  const word = /^\$?[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*/.exec(text.slice(ch));
  let end = ch + (word ? word[0].length : 1);
  if (end > text.length) {
    if (ch > 0 && ch === text.length) ch -= 1;
    end = text.length;
  }
  return { from: CM.Pos(line, ch), to: CM.Pos(line, Math.max(end, ch + 1)) };
}

// createEditor makes the editor in el. check(src, signal) returns the
// check answer; onCheck(answer|error, err, text) runs after each check,
// onChange() on each edit (the last answer is stale until the next);
// run() is bound to Ctrl/Cmd-Enter.
export async function createEditor(el, value, { check, onCheck, onChange, run }) {
  await need('codemirror');
  const CM = window.CodeMirror;
  defineMode(CM);
  let inflight = null;
  const cm = CM(el, {
    value,
    mode: 'gq',
    lineNumbers: true,
    indentUnit: 2,
    tabSize: 2,
    // Typing never re-indents a line behind the user's back, so what is
    // typed is what is checked and run.
    electricChars: false,
    gutters: ['CodeMirror-lint-markers'],
    // Tab moves focus out of the editor (no keyboard trap); indent with
    // the editor's own auto-indent on Enter.
    extraKeys: { Tab: false, 'Shift-Tab': false, 'Ctrl-Enter': () => run(), 'Cmd-Enter': () => run() },
    lint: {
      async: true,
      delay: 350,
      getAnnotations(text, update) {
        if (inflight) inflight.abort();
        const ctl = new AbortController();
        inflight = ctl;
        check(text, ctl.signal).then((res) => {
          if (ctl.signal.aborted) return;
          const marks = (list, severity) => list.filter((e) => e.line > 0).map((e) => Object.assign(mark(CM, cm, e), {
            message: `${e.code}: ${e.message}`, severity,
          }));
          update(marks(res.errors, 'error').concat(marks(res.warnings || [], 'warning')));
          onCheck(res, null, text);
        }, (err) => {
          if (err.name === 'AbortError') return;
          update([]);
          onCheck(null, err, text);
        });
      },
    },
  });
  cm.on('change', () => onChange());
  const input = cm.getInputField();
  input.setAttribute('aria-label', 'Query source (.gq); Ctrl+Enter runs; Tab leaves the editor');
  input.id = 'gq-input';
  return cm;
}
