// Branches: every live branch with its head and how far it is ahead of
// and behind main; create, delete, and merge into any branch with a
// preview of the changes and, on conflict, the conflicts by kind with
// their entities and, where one side's row can be written over the
// other's, the actions that resolve them (then the preview runs again).
// Each write control appears only where the policy allows it, and every
// destructive one asks first.

import { h, fill, section, errorBox, ago, commitLink, field, shortID } from '../dom.js';
import { jsonBody } from '../api.js';
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

// RESOLVABLE are the conflict kinds one side's row settles: written over
// the other side's row (or its delete repeated there), both sides agree
// and the merge has nothing left to choose.
const RESOLVABLE = new Set(['divergent_insert', 'divergent_update', 'delete_vs_update']);

// conflictList groups conflicts by kind and lists their entities.
// actions(c), when given, is the cell of what the user can do about c.
export function conflictList(conflicts, actions) {
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
          h('td', { class: 'mono' }, c.entity_id || '—'), h('td', null, c.message, actions ? actions(c) : null))))))));
}

const NUMERIC = /^(I32|I64|U32|U64|F32|F64)$/;

// takeSide makes branch `onto` agree with branch `from` on one node: its
// row on `from` is written over the one on `onto` (an update, or an
// insert where `onto` deleted it), or, where `from` deleted it, it is
// deleted on `onto`. One commit on `onto`.
async function takeSide(ctx, cat, c, from, onto) {
  const nt = cat.nodes.find((n) => n.name === c.type_name);
  const kp = nt.properties.find((p) => p.name === nt.key[0]);
  const idRaw = NUMERIC.test(kp.type) ? String(c.entity_id) : JSON.stringify(String(c.entity_id));
  const read = (branch) => ctx.api.query(jsonBody({ query: `query row($id: ${kp.type}) {\n  match { $n: ${nt.name} { ${kp.name}: $id } }\n  return { $n }\n}`, branch }, { id: idRaw }));
  const [win, lose] = await Promise.all([read(from), read(onto)]);
  const row = win.rows[0] && win.rows[0].n;
  let src;
  const params = { id: idRaw };
  if (!row) {
    src = `mutation take_${from.replace(/\W/g, '_')}($id: ${kp.type}) {\n  delete ${nt.name} where ${kp.name} = $id\n}`;
  } else {
    // Blob bytes are not read by queries: a Blob property keeps its value.
    const props = nt.properties.filter((p) => p.type !== 'Blob' && p.name !== kp.name);
    const decl = [`$id: ${kp.type}`].concat(props.map((p, i) => `$v${i}: ${p.type}${p.nullable ? '?' : ''}`)).join(', ');
    props.forEach((p, i) => { params['v' + i] = JSON.stringify(row[p.name] === undefined ? null : row[p.name]); });
    const sets = props.map((p, i) => `${p.name}: $v${i}`).join(', ');
    src = lose.rows.length > 0
      ? `mutation take_side(${decl}) {\n  update ${nt.name} set { ${sets} } where ${kp.name} = $id\n}`
      : `mutation take_side(${decl}) {\n  insert ${nt.name} { ${kp.name}: $id${sets ? ', ' + sets : ''} }\n}`;
  }
  return ctx.api.mutate(jsonBody({ query: src, branch: onto }, params));
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

  // targets are the branches a merge of name may write: any other live
  // branch the policy lets this actor change.
  const targets = (name) => ctx.heads.branches.filter((b) => b.name !== name && b.allowed_actions.includes('change'));

  async function preview(name, into) {
    const list = targets(name);
    const target = into || (list.find((b) => b.name === BASE) ? BASE : (list[0] || { name: BASE }).name);
    fill(previewBox, h('p', { class: 'muted', role: 'status' }, `Previewing the merge of ${name} into ${target}…`));
    let pv, th, cat;
    try {
      // The heads against the target say whether this actor may merge
      // name into it (branch_merge is asked of the pair).
      [pv, th, cat] = await Promise.all([ctx.api.previewMerge(name, target, PREVIEW_LIMIT), ctx.api.heads(target), ctx.catalog()]);
    } catch (err) {
      fill(previewBox, section(`Merge ${name} into ${target}`, errorBox(err)));
      return;
    }
    const head = th.branches.find((b) => b.name === name);
    const canMerge = head && head.allowed_actions.includes('branch_merge') && ctx.status.mode !== 'read-only';
    const canDelete = head && head.allowed_actions.includes('branch_delete');
    const targetSel = h('select', { id: 'merge-target', 'aria-label': `Branch to merge ${name} into` },
      (list.some((b) => b.name === target) ? list : [{ name: target }].concat(list)).map((b) => h('option', { value: b.name, selected: b.name === target }, b.name)));
    targetSel.addEventListener('change', () => preview(name, targetSel.value));
    const outcomeText = { already_up_to_date: `${target} already has every commit of ${name}: nothing to merge.`, fast_forward: `Fast-forward: ${target} has no commit of its own since ${name} forked, so it takes ${name}'s rows.`, merged: `Three-way merge against the merge base ${shortID(pv.base_commit)}.` };
    const delBox = h('input', { type: 'checkbox', id: 'merge-delete' });
    const result = h('div', { id: 'merge-result', 'aria-live': 'polite' });
    const merged = ctx.route.params.get('merged');
    if (merged && ctx.route.params.get('into') === target) {
      fill(result, h('p', { class: 'good' }, `Merged ${name} into ${target} (${(ctx.route.params.get('outcome') || '').replace(/_/g, ' ')})`,
        merged !== '-' ? ['; commit ', commitLink(ctx, merged)] : '', '. The preview below is against the new head.'));
    }
    // resolve offers, for a conflict one side's row settles, to take
    // either side; after the write the preview runs again.
    const resolve = (c) => {
      const nt = c.entity_kind === 'node' && c.entity_id ? cat.nodes.find((n) => n.name === c.type_name) : null;
      if (!RESOLVABLE.has(c.kind) || !nt || !nt.key || nt.key.length !== 1 || ctx.status.mode === 'read-only') return null;
      const take = (from, onto) => h('button', { type: 'button', class: 'small', 'data-take': from, 'data-entity': c.entity_id,
        title: `Write ${from}'s ${c.type_name} ${c.entity_id} on ${onto} (one commit on ${onto}), then preview the merge again`,
        onclick: async () => {
          const ok = await ctx.confirm(`Keep ${from}'s ${c.type_name} ${c.entity_id}?`,
            `This writes one commit on ${onto}: ${c.type_name} ${c.entity_id} as it is on ${from}. Then the merge is previewed again.`, `Write on ${onto}`);
          if (!ok) return;
          try {
            await takeSide(ctx, cat, c, from, onto);
            ctx.toast(`${onto} now has ${from}'s ${c.type_name} ${c.entity_id}`);
            await ctx.refresh();
            await preview(name, target);
          } catch (err) {
            fill(result, errorBox(err));
          }
        } }, `Keep ${from}'s`);
      const btns = [];
      if (ctx.may('change', name)) btns.push(take(target, name));
      if (ctx.may('change', target)) btns.push(take(name, target));
      return btns.length ? h('div', { class: 'toolbar resolve' }, btns) : null;
    };
    const mergeBtn = h('button', { type: 'button', class: 'primary', id: 'merge-run', disabled: pv.conflicts.length > 0 || pv.outcome === 'already_up_to_date' }, `Merge ${name} into ${target}`);
    mergeBtn.addEventListener('click', async () => {
      const ok = await ctx.confirm(`Merge ${name} into ${target}?`,
        `This writes one commit on ${target}: ${pv.inserted} inserted, ${pv.updated} updated, ${pv.deleted} deleted${delBox.checked ? `, then deletes ${name}` : ''}.`, 'Merge');
      if (!ok) return;
      mergeBtn.disabled = true;
      try {
        const out = await ctx.api.merge(name, target, delBox.checked);
        ctx.toast(`Merged ${name} into ${target}: ${out.outcome.replace(/_/g, ' ')}`);
        if (out.branch_delete_error) ctx.toast(`${name} was not deleted: ${out.branch_delete_error}`);
        // Everything after a merge reads the new state: the heads, the
        // ref picker (now on the target) and the preview against it.
        await ctx.refresh();
        const params = { into: target, merged: out.commit ? out.commit.graph_commit_id : '-', outcome: out.outcome };
        if (!delBox.checked || out.branch_delete_error) params.preview = name;
        ctx.navigate(ctx.hrefRef('branches', target, params), true);
      } catch (err) {
        mergeBtn.disabled = false;
        if (err.status === 409 && err.body.merge_conflicts) fill(result, errorBox(err), conflictList(err.body.merge_conflicts, resolve));
        else fill(result, errorBox(err));
      }
    });
    fill(previewBox, section(`Merge ${name}`,
      h('div', { class: 'toolbar' }, h('label', { class: 'inline', for: 'merge-target' }, `Merge ${name} into`), targetSel),
      result,
      h('p', { id: 'merge-outcome', 'data-outcome': pv.outcome }, outcomeText[pv.outcome] || pv.outcome),
      h('p', { id: 'merge-counts' }, `${pv.inserted} to insert, ${pv.updated} to update, ${pv.deleted} to delete on ${target}.`),
      pv.conflicts.length > 0 ? conflictList(pv.conflicts, resolve) : null,
      changeList(pv.changes, { caption: pv.truncated ? `The first ${pv.changes.length} changes` : 'The changes the merge applies', empty: 'The merge changes no entity.' }),
      canMerge ? h('div', { class: 'toolbar' }, mergeBtn,
        canDelete ? h('label', { class: 'inline' }, delBox, ` Delete ${name} after the merge`) : null) :
        h('p', { class: 'muted' }, `Your token may not merge ${name} into ${target}.`)));
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
          hs.length > 1 ? h('button', { type: 'button', class: 'small', 'data-action': 'preview', onclick: () => preview(b.name) }, 'Preview merge') : null,
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
  if (want) await preview(want, ctx.route.params.get('into') || '');
}
