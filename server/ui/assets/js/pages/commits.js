// Commits: the commit DAG of the live branches (merges drawn as a second,
// dashed parent link), the commit list of the ref, one commit's entity
// changes with their before and after images, and the diff between any
// two refs (/diff?from=A&to=B).

import { h, fill, section, errorBox, when, ago, commitLink, shortID, field } from '../dom.js';
import { changeList } from '../table.js';
import { commitDag } from '../graphview.js';

const PER_BRANCH = 60;
const MAX_BRANCHES = 16;
const CHANGES_LIMIT = 500;

// layout places commits in lanes (one per branch that published them,
// main first) and rows (newest first).
export function layout(commits, branchOrder) {
  const lanes = new Map();
  branchOrder.forEach((b) => lanes.set(b, lanes.size));
  const sorted = commits.slice().sort((a, b) => b.created_at - a.created_at || (a.graph_commit_id < b.graph_commit_id ? 1 : -1));
  const ids = new Set(sorted.map((c) => c.graph_commit_id));
  const nodes = sorted.map((c, row) => {
    const br = c.graph_branch || '?';
    if (!lanes.has(br)) lanes.set(br, lanes.size);
    return { id: c.graph_commit_id, lane: lanes.get(br), row, label: `${shortID(c.graph_commit_id)}`, commit: c };
  });
  const links = [];
  for (const c of sorted) {
    if (c.parent_commit_id && ids.has(c.parent_commit_id)) links.push({ from: c.graph_commit_id, to: c.parent_commit_id, merge: false });
    if (c.merged_parent_commit_id && ids.has(c.merged_parent_commit_id)) links.push({ from: c.graph_commit_id, to: c.merged_parent_commit_id, merge: true });
  }
  return { nodes, links, lanes };
}

async function renderList(ctx, root) {
  const hs = ctx.heads.branches;
  const order = ['main'].concat(ctx.ref.isBranch && ctx.ref.name !== 'main' ? [ctx.ref.name] : [], hs.map((b) => b.name).filter((n) => n !== 'main' && n !== ctx.ref.name)).slice(0, MAX_BRANCHES);
  const dagBox = h('div', { class: 'dag-wrap' });
  const listBox = h('div', { id: 'commit-list' }, h('p', { class: 'muted', role: 'status' }, 'Reading the history…'));
  const diffFrom = h('input', { id: 'diff-from', list: 'ref-names', value: ctx.ref.isBranch ? 'main' : ctx.ref.name, spellcheck: 'false', required: true });
  const diffTo = h('input', { id: 'diff-to', list: 'ref-names', value: ctx.ref.isBranch && ctx.ref.name !== 'main' ? ctx.ref.name : (hs.find((b) => b.name !== 'main') || { name: 'main' }).name, spellcheck: 'false', required: true });
  const diffForm = h('form', { id: 'diff-form', class: 'grid-form' },
    field('From (branch or commit id)', diffFrom), field('To (branch or commit id)', diffTo),
    h('div', { class: 'field' }, h('span', { class: 'label-gap', 'aria-hidden': 'true' }, '\u00a0'), h('button', { type: 'submit', class: 'primary' }, 'Compare')),
    h('datalist', { id: 'ref-names' }, hs.map((b) => h('option', { value: b.name }))));
  diffForm.addEventListener('submit', (e) => {
    e.preventDefault();
    ctx.navigate(ctx.href('diff', { from: diffFrom.value.trim(), to: diffTo.value.trim() }));
  });
  fill(root, h('h1', null, 'Commits ', h('span', { class: 'muted' }, ctx.ref.isBranch ? `of ${ctx.ref.name}` : `up to ${shortID(ctx.ref.name)}`)),
    section('Compare two refs', diffForm),
    h('div', { class: 'commits-layout' },
      section('History of the live branches', h('p', { class: 'muted small' }, 'Newest on top; one lane per branch that made the commits; a dashed line joins a merge to the branch head it merged. Click a commit to open it.'), dagBox),
      section('Commits', listBox)));

  // Four branches at a time: the server admits a bounded number of
  // requests per caller.
  const lists = new Array(order.length);
  try {
    for (let i = 0; i < order.length; i += 4) {
      const part = await Promise.all(order.slice(i, i + 4).map((b) => ctx.api.commits(b, PER_BRANCH).then((r) => r.commits)));
      part.forEach((l, j) => { lists[i + j] = l; });
    }
  } catch (err) {
    fill(listBox, errorBox(err));
    return;
  }
  const byID = new Map();
  lists.flat().forEach((c) => byID.set(c.graph_commit_id, c));
  const { nodes, links, lanes } = layout(Array.from(byID.values()), order);
  const tips = new Map(hs.map((b) => [b.head.graph_commit_id, b.name]));
  for (const n of nodes) {
    const names = hs.filter((b) => b.head.graph_commit_id === n.id).map((b) => b.name);
    if (names.length) {
      n.branchTip = true;
      n.label += '  ' + names.join(', ');
    }
  }
  const mine = ctx.ref.isBranch ? lists[order.indexOf(ctx.ref.name)] || [] : null;
  const shown = mine || Array.from(byID.values()).sort((a, b) => b.created_at - a.created_at);
  fill(listBox, h('div', { class: 'scroll' }, h('table', { class: 'data', id: 'commit-table' },
    h('caption', null, `${shown.length} commits${mine ? ` reachable from ${ctx.ref.name}` : ''} (newest first, at most ${PER_BRANCH})`),
    h('thead', null, h('tr', null, ['Commit', 'Branch', 'By', 'When', 'Parents'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, shown.map((c) => h('tr', { 'data-commit': c.graph_commit_id },
      h('th', { scope: 'row' }, commitLink(ctx, c.graph_commit_id), tips.has(c.graph_commit_id) ? h('span', { class: 'badge' }, tips.get(c.graph_commit_id)) : null),
      h('td', null, c.graph_branch || '—'), h('td', null, c.actor_id || '—'), h('td', { title: when(c.created_at) }, ago(c.created_at)),
      h('td', null, commitLink(ctx, c.parent_commit_id), c.merged_parent_commit_id ? [' + ', commitLink(ctx, c.merged_parent_commit_id), h('span', { class: 'muted small' }, ' (merge)')] : null)))))));
  const canvas = h('div', { class: 'graph-canvas dag', id: 'commit-dag', role: 'img', 'aria-label': `Commit graph of ${nodes.length} commits in ${lanes.size} lanes; the table lists the same commits` });
  canvas.style.height = Math.max(160, 60 + nodes.length * 44) + 'px';
  canvas.style.width = Math.max(320, 240 + lanes.size * 56) + 'px';
  fill(dagBox, h('div', { class: 'lanes' }, Array.from(lanes.keys()).map((b, i) => h('span', { class: 'lane-key', 'data-lane': i }, b))), canvas);
  try {
    const cy = await commitDag(canvas, nodes, links, (id) => ctx.navigate(ctx.href('commits/' + encodeURIComponent(id))));
    cy.userPanningEnabled(false);
  } catch (err) {
    fill(dagBox, errorBox(err));
  }
}

async function renderCommit(ctx, root, id) {
  fill(root, h('h1', null, 'Commit ', h('span', { class: 'mono' }, shortID(id))), h('p', { class: 'muted', role: 'status' }, 'Reading the commit…'));
  let c;
  try {
    c = await ctx.api.commit(id);
  } catch (err) {
    fill(root, h('h1', null, 'Commit'), errorBox(err));
    return;
  }
  const changesBox = h('div', { id: 'commit-changes' }, h('p', { class: 'muted', role: 'status' }, 'Reading its changes…'));
  fill(root, h('h1', null, 'Commit ', h('span', { class: 'mono' }, shortID(c.graph_commit_id))),
    section('Commit', h('dl', { class: 'kv', id: 'commit-detail' },
      h('dt', null, 'Id'), h('dd', { class: 'mono' }, c.graph_commit_id),
      h('dt', null, 'Branch'), h('dd', null, c.graph_branch || '—'),
      h('dt', null, 'By'), h('dd', null, c.actor_id || '—'),
      h('dt', null, 'When'), h('dd', null, `${when(c.created_at)} (${ago(c.created_at)})`),
      h('dt', null, 'Parent'), h('dd', null, commitLink(ctx, c.parent_commit_id, c.parent_commit_id)),
      c.merged_parent_commit_id ? [h('dt', null, 'Merged'), h('dd', null, commitLink(ctx, c.merged_parent_commit_id, c.merged_parent_commit_id))] : null),
    h('div', { class: 'toolbar' },
      h('a', { href: ctx.hrefRef('overview', c.graph_commit_id) }, 'Browse the graph at this commit'),
      h('a', { href: ctx.hrefRef('query', c.graph_commit_id) }, 'Query this commit'),
      c.parent_commit_id ? h('a', { href: ctx.href('diff', { from: c.parent_commit_id, to: c.graph_commit_id }) }, 'Compare with its parent') : null)),
    section('Entity changes', h('p', { class: 'muted small' }, 'Against its first parent; a merge shows what it brought to its branch.'), changesBox));
  try {
    const res = await ctx.api.changes(c.graph_commit_id, CHANGES_LIMIT);
    fill(changesBox, changeList(res.changes, { caption: res.changes.length >= CHANGES_LIMIT ? `The first ${CHANGES_LIMIT} changes` : `${res.changes.length} changes` }));
  } catch (err) {
    if (err.body && err.body.change_diff_refusal && err.body.change_diff_refusal.reason === 'parentless_commit') {
      fill(changesBox, h('p', { class: 'muted' }, 'The graph\'s first commit: it has no parent to compare with.'));
    } else {
      fill(changesBox, errorBox(err));
    }
  }
}

// DIFF_PAGE is how many changes a page of the diff shows.
const DIFF_PAGE = 50;

// renderDiff lists the changes from one ref to another, filtered by type
// and by kind of change (the diff route's own type and op), a page at a
// time. The route has a limit and no cursor, so page n asks for the
// first (n+1)·DIFF_PAGE+1 changes and shows its last page: the extra one
// says whether there is a next page.
async function renderDiff(ctx, root) {
  const from = ctx.route.params.get('from') || 'main';
  const to = ctx.route.params.get('to') || (ctx.ref.name);
  const type = ctx.route.params.get('type') || '';
  const op = ctx.route.params.get('op') || '';
  const page = Math.max(0, parseInt(ctx.route.params.get('page') || '0', 10) || 0);
  const cat = await ctx.catalog();
  const box = h('div', { id: 'diff-changes' }, h('p', { class: 'muted', role: 'status' }, 'Comparing…'));
  const fromIn = h('input', { id: 'diff-from', value: from, list: 'ref-names', spellcheck: 'false', required: true });
  const toIn = h('input', { id: 'diff-to', value: to, list: 'ref-names', spellcheck: 'false', required: true });
  const opSel = h('select', { id: 'diff-op' }, ['', 'insert', 'update', 'delete'].map((o) => h('option', { value: o, selected: o === op }, o || 'any change')));
  const typeSel = h('select', { id: 'diff-type' }, h('option', { value: '' }, 'any type'),
    h('optgroup', { label: 'Node types' }, cat.nodes.map((n) => h('option', { value: n.name, selected: n.name === type }, n.name))),
    h('optgroup', { label: 'Edge types' }, cat.edges.map((e) => h('option', { value: e.name, selected: e.name === type }, e.name))));
  const go = (p) => ctx.navigate(ctx.href('diff', { from: fromIn.value.trim(), to: toIn.value.trim(), op: opSel.value, type: typeSel.value, page: p ? String(p) : '' }));
  // A filter applies as soon as it is picked (from page 1).
  opSel.addEventListener('change', () => go(0));
  typeSel.addEventListener('change', () => go(0));
  const form = h('form', { id: 'diff-form', class: 'grid-form' }, field('From', fromIn), field('To', toIn), field('Type', typeSel), field('Change', opSel),
    h('div', { class: 'field' }, h('span', { class: 'label-gap', 'aria-hidden': 'true' }, '\u00a0'), h('button', { type: 'submit', class: 'primary' }, 'Compare')),
    h('datalist', { id: 'ref-names' }, ctx.heads.branches.map((b) => h('option', { value: b.name }))));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    go(0);
  });
  fill(root, h('h1', null, 'Diff'), section('Compare two refs', form), section('Changes', box));
  try {
    const res = await ctx.api.diff(from, to, { type, op, limit: (page + 1) * DIFF_PAGE + 1 });
    const shown = res.changes.slice(page * DIFF_PAGE, (page + 1) * DIFF_PAGE);
    const more = res.changes.length > (page + 1) * DIFF_PAGE;
    const first = page * DIFF_PAGE + 1;
    const what = [type || null, op ? op + 's' : null].filter(Boolean).join(' ');
    const nav = h('div', { class: 'toolbar', id: 'diff-pages' },
      h('span', { class: 'muted', id: 'diff-range' }, shown.length ? `Changes ${first}–${first + shown.length - 1}${more ? '' : ` of ${page * DIFF_PAGE + shown.length}`} · page ${page + 1}` : ''),
      h('span', { class: 'spacer' }),
      h('button', { type: 'button', class: 'small', id: 'diff-prev', disabled: page === 0, onclick: () => go(page - 1) }, '‹ Previous'),
      h('button', { type: 'button', class: 'small', id: 'diff-next', disabled: !more, onclick: () => go(page + 1) }, 'Next ›'));
    const total = more ? `more than ${(page + 1) * DIFF_PAGE}` : String(page * DIFF_PAGE + shown.length);
    fill(box, h('p', { id: 'diff-summary' }, `From ${from} (${shortID(res.from_commit)}) to ${to} (${shortID(res.to_commit)}): ${total} changes${what ? ` (${what})` : ''}.`),
      page > 0 || more ? nav : null,
      changeList(shown, { empty: type || op ? 'No change of this type and kind.' : 'The two refs hold the same entities.' }));
  } catch (err) {
    fill(box, errorBox(err));
  }
}

export async function render(ctx, root) {
  if (ctx.route.page === 'diff') return renderDiff(ctx, root);
  if (ctx.route.rest.length > 0) return renderCommit(ctx, root, ctx.route.rest.join('/'));
  return renderList(ctx, root);
}
