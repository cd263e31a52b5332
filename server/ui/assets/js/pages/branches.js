// Branches: every live branch with its head and how far it is ahead of
// and behind main; create, delete, and merge with a preview of the
// changes and, on conflict, the conflicts by kind with their entities.
// Each write control appears only where the policy allows it, and every
// destructive one asks first.

import { h, fill, section, errorBox, ago, commitLink, field, shortID } from '../dom.js';
import { changeList } from '../table.js';

const BASE = 'main';
const PREVIEW_LIMIT = 200;

const KIND_TEXT = {
  divergent_insert: 'Inserted on both sides with different values',
  divergent_update: 'Changed on both sides to different values',
  delete_vs_update: 'Deleted on one side, changed on the other',
  orphan_edge: 'Edges left without an endpoint',
  unique_violation: 'Unique values that would collide',
  cardinality_violation: '@card limits the merge would break',
  value_constraint_violation: 'Values a constraint refuses',
};

// conflictList groups conflicts by kind and lists their entities.
export function conflictList(conflicts) {
  const byKind = new Map();
  for (const c of conflicts) {
    if (!byKind.has(c.kind)) byKind.set(c.kind, []);
    byKind.get(c.kind).push(c);
  }
  return h('div', { class: 'conflicts', id: 'merge-conflicts', role: 'alert' },
    h('h3', null, `${conflicts.length} conflict${conflicts.length === 1 ? '' : 's'}: the merge would write nothing`),
    Array.from(byKind.entries()).map(([kind, list]) => h('section', { class: 'conflict-kind', 'data-kind': kind },
      h('h4', null, KIND_TEXT[kind] || kind, ' ', h('code', null, kind), ` (${list.length})`),
      h('table', { class: 'data' },
        h('thead', null, h('tr', null, ['Entity', 'Type', 'Id', 'What to do'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', null, list.map((c) => h('tr', null, h('td', null, c.entity_kind || '—'), h('td', null, c.type_name || '—'),
          h('td', { class: 'mono' }, c.entity_id || '—'), h('td', null, c.message))))))));
}

export async function render(ctx, root) {
  const heads = ctx.heads;
  const previewBox = h('div', { id: 'merge-preview' });
  const creatable = heads.branches.filter((b) => b.allowed_actions.includes('branch_create'));

  async function reload() {
    await ctx.refresh();
    const params = Object.fromEntries(ctx.route.params);
    ctx.navigate(ctx.hrefRef('branches', params.ref || 'main', params), true);
  }

  async function preview(name) {
    fill(previewBox, h('p', { class: 'muted', role: 'status' }, `Previewing the merge of ${name} into ${BASE}…`));
    let pv;
    try {
      pv = await ctx.api.previewMerge(name, BASE, PREVIEW_LIMIT);
    } catch (err) {
      fill(previewBox, section(`Merge ${name} into ${BASE}`, errorBox(err)));
      return;
    }
    const head = ctx.head(name);
    const canMerge = head && head.allowed_actions.includes('branch_merge') && ctx.status.mode !== 'read-only';
    const canDelete = head && head.allowed_actions.includes('branch_delete');
    const outcomeText = { already_up_to_date: `${BASE} already has every commit of ${name}: nothing to merge.`, fast_forward: `Fast-forward: ${BASE} has no commit of its own since ${name} forked, so it takes ${name}'s rows.`, merged: `Three-way merge against the merge base ${shortID(pv.base_commit)}.` };
    const delBox = h('input', { type: 'checkbox', id: 'merge-delete' });
    const result = h('div', { id: 'merge-result', 'aria-live': 'polite' });
    const mergeBtn = h('button', { type: 'button', class: 'primary', id: 'merge-run', disabled: pv.conflicts.length > 0 || pv.outcome === 'already_up_to_date' }, `Merge ${name} into ${BASE}`);
    mergeBtn.addEventListener('click', async () => {
      const ok = await ctx.confirm(`Merge ${name} into ${BASE}?`,
        `This writes one commit on ${BASE}: ${pv.inserted} inserted, ${pv.updated} updated, ${pv.deleted} deleted${delBox.checked ? `, then deletes ${name}` : ''}.`, 'Merge');
      if (!ok) return;
      mergeBtn.disabled = true;
      try {
        const out = await ctx.api.merge(name, BASE, delBox.checked);
        ctx.toast(`Merged ${name} into ${BASE}: ${out.outcome.replace(/_/g, ' ')}`);
        fill(result, h('p', { class: 'good' }, `Merged (${out.outcome.replace(/_/g, ' ')}): ${out.inserted} inserted, ${out.updated} updated, ${out.deleted} deleted`,
          out.commit ? ['; commit ', commitLink(ctx, out.commit.graph_commit_id)] : '', out.branch_delete_error ? ` (the branch was not deleted: ${out.branch_delete_error})` : '', '.'));
        await ctx.refresh();
        drawTable();
      } catch (err) {
        mergeBtn.disabled = false;
        if (err.status === 409 && err.body.merge_conflicts) fill(result, errorBox(err), conflictList(err.body.merge_conflicts));
        else fill(result, errorBox(err));
      }
    });
    fill(previewBox, section(`Merge ${name} into ${BASE}`,
      h('p', { id: 'merge-outcome', 'data-outcome': pv.outcome }, outcomeText[pv.outcome] || pv.outcome),
      h('p', { id: 'merge-counts' }, `${pv.inserted} to insert, ${pv.updated} to update, ${pv.deleted} to delete on ${BASE}.`),
      pv.conflicts.length > 0 ? conflictList(pv.conflicts) : null,
      changeList(pv.changes, { caption: pv.truncated ? `The first ${pv.changes.length} changes` : 'The changes the merge applies', empty: 'The merge changes no entity.' }),
      canMerge ? h('div', { class: 'toolbar' }, mergeBtn,
        canDelete ? h('label', { class: 'inline' }, delBox, ` Delete ${name} after the merge`) : null) :
        h('p', { class: 'muted' }, `Your token may not merge into ${BASE}.`),
      result));
    previewBox.scrollIntoView({ block: 'nearest' });
  }

  async function remove(name) {
    const ok = await ctx.confirm(`Delete branch ${name}?`, `The branch and its commits that no other branch holds are removed. This cannot be undone.`, 'Delete branch');
    if (!ok) return;
    try {
      await ctx.api.deleteBranch(name);
      ctx.toast(`Deleted branch ${name}`);
      await reload();
    } catch (err) {
      fill(previewBox, errorBox(err));
    }
  }

  const tableBox = h('div');
  function drawTable() {
    const hs = ctx.heads.branches;
    fill(tableBox, h('div', { class: 'scroll' }, h('table', { class: 'data', id: 'branch-table' },
      h('caption', null, `${hs.length} live branch${hs.length === 1 ? '' : 'es'}; ahead and behind count commits against ${BASE}`),
      h('thead', null, h('tr', null, ['Branch', 'Head', 'By', 'When', `Ahead of ${BASE}`, `Behind ${BASE}`, 'Actions'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, hs.map((b) => h('tr', { 'data-branch': b.name },
        h('th', { scope: 'row' }, h('a', { href: ctx.hrefRef('overview', b.name) }, b.name)),
        h('td', null, commitLink(ctx, b.head.graph_commit_id)),
        h('td', null, b.head.actor_id || '—'),
        h('td', null, ago(b.head.created_at)),
        h('td', { class: 'num ahead' }, b.name === BASE ? '—' : String(b.ahead) + (b.counts_capped ? '+' : '')),
        h('td', { class: 'num behind' }, b.name === BASE ? '—' : String(b.behind) + (b.counts_capped ? '+' : '')),
        h('td', { class: 'actions' },
          h('a', { href: ctx.hrefRef('commits', b.name) }, 'Commits'),
          b.name !== BASE ? h('button', { type: 'button', class: 'small', 'data-action': 'preview', onclick: () => preview(b.name) }, 'Preview merge') : null,
          b.allowed_actions.includes('branch_delete') && ctx.status.mode !== 'read-only' ? h('button', { type: 'button', class: 'small danger', 'data-action': 'delete', onclick: () => remove(b.name) }, 'Delete') : null)))))));
  }
  drawTable();

  let createPanel = null;
  if (creatable.length > 0 && ctx.status.mode !== 'read-only') {
    const name = h('input', { id: 'branch-name', required: true, spellcheck: 'false', autocomplete: 'off', pattern: '[^\\s]+' });
    const from = h('select', { id: 'branch-from' }, creatable.map((b) => h('option', { value: b.name, selected: b.name === (ctx.ref.isBranch ? ctx.ref.name : BASE) }, b.name)));
    const out = h('div', { 'aria-live': 'polite' });
    const form = h('form', { id: 'branch-create' }, h('div', { class: 'grid-form' }, field('New branch', name, 'letters, digits, - _ . / (no spaces)'), field('From the head of', from)),
      h('button', { type: 'submit', class: 'primary' }, 'Create branch'), out);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      try {
        const res = await ctx.api.createBranch(name.value.trim(), from.value);
        ctx.toast(`Created branch ${res.name} from ${res.from}`);
        await reload();
      } catch (err) {
        fill(out, errorBox(err));
      }
    });
    createPanel = section('Create a branch', form);
  }

  fill(root, h('h1', null, 'Branches'), section('Live branches', tableBox), createPanel, previewBox);
  const want = ctx.route.params.get('preview');
  if (want) await preview(want);
}
