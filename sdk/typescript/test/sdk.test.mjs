// The SDK against a real `omnigraph serve` (started by scripts/sdk.sh test
// on a graph of examples/social.pg holding examples/social.jsonl, with
// one token for actor alice). Every operation of the document is called
// at least once: the last test fails when a route has no call here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, writeFileSync, readdirSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as og from '../dist/index.js';

const baseUrl = process.env.OMNIGRAPH_URL;
const token = process.env.OMNIGRAPH_TOKEN;
if (!baseUrl || !token) {
  throw new Error('run these tests with scripts/sdk.sh test (it starts the server and sets OMNIGRAPH_URL and OMNIGRAPH_TOKEN)');
}
const client = og.connect({ baseUrl, token });
const path = { graph_id: 'default' };
const called = new Set();
const call = (name, opts) => {
  called.add(name);
  return og[name]({ client, ...opts });
};
const ok = (name, opts) => og.unwrap(call(name, opts));

async function head(branch = 'main') {
  const snap = await ok('getSnapshot', { path, query: { branch } });
  return snap.graph_commit_id;
}

test('a traceparent from the headers hook reaches the error envelope', async () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const traced = og.connect({ baseUrl, token, headers: () => ({ traceparent: `00-${traceId}-00f067aa0ba902b7-01` }) });
  await assert.rejects(og.unwrap(og.getSnapshot({ client: traced, path, query: { branch: 'no-such-branch' } })), (err) => {
    assert.equal(err.status, 404);
    assert.equal(err.body.trace_id, traceId);
    return true;
  });
});

test('open routes answer without a token', async () => {
  const anon = og.connect({ baseUrl });
  called.add('health');
  const h = await og.unwrap(og.health({ client: anon }));
  assert.equal(h.status, 'ok');
  assert.equal(h.graphs, 1);
  called.add('openapi');
  const doc = await og.unwrap(og.openapi({ client: anon }));
  assert.equal(doc.openapi, '3.1.0');
  assert.ok(doc.paths['/graphs/{graph_id}/query']);
});

test('a missing token is a typed 401', async () => {
  const anon = og.connect({ baseUrl });
  await assert.rejects(og.unwrap(og.listGraphs({ client: anon })), (err) => {
    assert.ok(err instanceof og.OmnigraphError);
    assert.equal(err.status, 401);
    assert.equal(err.code, 'unauthorized');
    return true;
  });
  const gs = await ok('listGraphs', {});
  assert.deepEqual(gs.graphs.map((g) => g.graph_id), ['default']);
});

test("an error carries the envelope's reason, its code and the status", async () => {
  const body = { query: 'query q() { match { $p: Person } return { $p.name } }', branch: 'no-such-branch' };
  // What the server answers, read without the SDK.
  const raw = await fetch(`${baseUrl}/graphs/default/query`, {
    method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  const envelope = await raw.json();
  assert.equal(raw.status, 404);
  assert.ok(envelope.reason && envelope.reason !== envelope.code, JSON.stringify(envelope));
  await assert.rejects(og.unwrap(call('query', { path, body })), (err) => {
    assert.ok(err instanceof og.OmnigraphError);
    assert.equal(err.status, 404);
    assert.equal(err.code, envelope.code);
    assert.equal(err.reason, envelope.reason);
    assert.equal(err.message, envelope.error);
    return true;
  });
});

test('a refused connection is status 0 with its cause, not "HTTP 0"', async () => {
  // A loopback port just freed: nothing listens there, the connection is refused.
  const srv = createServer();
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = srv.address().port;
  await new Promise((resolve) => srv.close(resolve));
  const nowhere = og.connect({ baseUrl: `http://127.0.0.1:${port}`, token });
  await assert.rejects(og.unwrap(og.listGraphs({ client: nowhere })), (err) => {
    assert.ok(err instanceof og.OmnigraphError);
    assert.equal(err.status, 0);
    assert.equal(err.code, 'unreachable');
    assert.equal(err.reason, 'ECONNREFUSED');
    assert.ok(err.cause instanceof Error, 'the fetch error is the cause');
    assert.match(err.message, new RegExp(`cannot reach http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
    assert.doesNotMatch(err.message, /HTTP 0/);
    return true;
  });
});

test('npm pack makes a package another project installs and calls', () => {
  const sdk = fileURLToPath(new URL('..', import.meta.url));
  const scratch = mkdtempSync(join(tmpdir(), 'omnigraph-sdk-pack-'));
  try {
    execFileSync('npm', ['pack', '--silent', '--pack-destination', scratch], { cwd: sdk, stdio: ['ignore', 'pipe', 'inherit'] });
    const tarballs = readdirSync(scratch).filter((f) => f.endsWith('.tgz'));
    assert.deepEqual(tarballs, ['omnigraph-client-1.0.0.tgz']);
    const app = join(scratch, 'app');
    execFileSync('mkdir', [app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    // The package has no runtime dependencies: the install needs no registry.
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', join(scratch, tarballs[0])], { cwd: app, stdio: ['ignore', 'pipe', 'inherit'] });
    writeFileSync(join(app, 'main.mjs'), `import { connect, listGraphs, unwrap } from '@omnigraph/client';
const client = connect({ baseUrl: process.env.OMNIGRAPH_URL, token: process.env.OMNIGRAPH_TOKEN });
const gs = await unwrap(listGraphs({ client }));
console.log(gs.graphs.map((g) => g.graph_id).join(','));`);
    const out = execFileSync('node', ['main.mjs'], { cwd: app, env: process.env }).toString().trim();
    assert.equal(out, 'default');
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});

test('query with parameters reads rows', async () => {
  const out = await ok('query', {
    path,
    body: {
      query: 'query q($city: String, $min: I32) { match { $p: Person { city: $city } $p.age >= $min } return { $p.handle, $p.age } order { $p.age desc } }',
      params: { city: 'Berlin', min: 30 },
    },
  });
  assert.deepEqual(out.columns, ['p.handle', 'p.age']);
  assert.ok(out.row_count >= 1);
  assert.equal(out.rows.length, out.row_count);
  for (const row of out.rows) {
    assert.ok(row['p.age'] >= 30, JSON.stringify(row));
  }
  assert.equal(out.graph_commit_id, await head());
});

test('mutate with a precondition: the head wins, a stale head is a typed 412', async () => {
  const before = await head();
  const out = await ok('mutateIfGraphCommit', {
    path,
    headers: { 'Omnigraph-If-Graph-Commit': before },
    body: { query: 'mutation m($h: String) { insert Person { handle: $h, name: "TS One", age: 40 } }', params: { h: 'ts-one' } },
  });
  assert.equal(out.affected_nodes, 1);
  assert.equal(out.commit.parent_commit_id, before);
  await assert.rejects(
    og.unwrap(call('mutateIfGraphCommit', {
      path,
      headers: { 'Omnigraph-If-Graph-Commit': before },
      body: { query: 'mutation m() { insert Person { handle: "ts-two", name: "TS Two" } }' },
    })),
    (err) => {
      assert.equal(err.status, 412);
      assert.equal(err.body.precondition_failure.expected, before);
      assert.equal(err.body.precondition_failure.actual, out.commit.graph_commit_id);
      return true;
    },
  );
  const plain = await ok('mutate', { path, body: { query: 'mutation m() { update Person set { age: 41 } where handle = "ts-one" }' } });
  assert.equal(plain.affected_nodes, 1);
});

test('load a file (NDJSON) and inline records; a duplicate is a typed key conflict', async () => {
  const lines = ['{"type":"Person","data":{"handle":"ts-load-a","name":"Load A","age":30}}', '{"type":"Person","data":{"handle":"ts-load-b","name":"Load B","age":31}}'];
  // An NDJSON body goes as it is: bodySerializer null (the default
  // serializer would send it as one JSON string).
  const out = await ok('loadNdjson', { path, query: { mode: 'append' }, body: lines.join('\n') + '\n', bodySerializer: null });
  assert.equal(out.nodes, 2);
  assert.deepEqual(out.types, { Person: 2 });
  await assert.rejects(og.unwrap(call('loadNdjson', { path, query: { mode: 'append' }, body: lines[0] + '\n', bodySerializer: null })), (err) => {
    assert.equal(err.status, 409);
    assert.equal(err.body.key_conflict.type_name, 'Person');
    return true;
  });
  const inline = await ok('load', { path, body: { mode: 'merge', records: [{ type: 'Person', data: { handle: 'ts-load-c', name: 'Load C' } }] } });
  assert.equal(inline.nodes, 1);
});

test('branch, write on it, merge it back, then its commits and changes', async () => {
  const created = await ok('createBranch', { path, body: { name: 'ts/feature' } });
  assert.equal(created.from, 'main');
  const br = await ok('listBranches', { path });
  assert.ok(br.branches.includes('ts/feature'));
  await ok('mutate', { path, body: { branch: 'ts/feature', query: 'mutation m() { insert Person { handle: "ts-branch", name: "On Branch" } }' } });
  const merged = await ok('mergeBranch', { path, body: { source: 'ts/feature' } });
  assert.equal(merged.outcome, 'fast_forward');
  assert.equal(merged.inserted, 1);
  const commits = await ok('listCommits', { path, query: { branch: 'main', limit: 2 } });
  assert.equal(commits.commits.length, 2);
  const top = await ok('getCommit', { path: { ...path, commit_id: commits.commits[0].graph_commit_id } });
  assert.equal(top.graph_commit_id, commits.commits[0].graph_commit_id);
  const changes = await ok('getCommitChanges', { path: { ...path, commit_id: top.graph_commit_id } });
  assert.deepEqual(changes.changes.map((c) => [c.op, c.id]), [['insert', 'ts-branch']]);
  const deleted = await ok('deleteBranch', { path: { ...path, branch: 'ts/feature' } });
  assert.equal(deleted.name, 'ts/feature');
  await assert.rejects(og.unwrap(call('deleteBranch', { path: { ...path, branch: 'ts/feature' } })), (err) => err.status === 404);
});

test('schema, export and MCP', async () => {
  const schema = await ok('getSchema', { path });
  assert.match(schema.schema_source, /node Person/);
  const res = await call('export_', { path, query: { type: ['Company'] }, parseAs: 'text' });
  assert.equal(res.response.status, 200);
  const lines = res.data.trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(lines.length > 0);
  assert.ok(lines.every((l) => l.type === 'Company'));
  const rpc = await ok('mcp', {
    path,
    headers: { Accept: 'application/json, text/event-stream' },
    body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'branch_list', arguments: {} } },
  });
  assert.deepEqual(rpc.result.structuredContent.branches, ['main']);
});

test("the console's routes: status, catalog, check, heads, merge preview, diff", async () => {
  const st = await ok('getStatus', { path });
  assert.equal(st.graph_id, 'default');
  assert.equal(st.actor, 'alice');
  assert.equal(st.recovery.state, 'clean');
  const cat = await ok('getCatalog', { path, query: { branch: 'main' } });
  assert.ok(cat.nodes.some((n) => n.name === 'Person' && n.rows > 0));
  const chk = await ok('checkQuery', { path, body: { query: 'query q() {\n  match { $p: Person }\n  return { $p.nme }\n}' } });
  assert.equal(chk.ok, false);
  assert.deepEqual(chk.errors.map((e) => [e.code, e.line]), [['GQ011', 3]]);
  await ok('createBranch', { path, body: { name: 'ts/console' } });
  await ok('mutate', { path, body: { branch: 'ts/console', query: 'mutation m() { insert Person { handle: "ts-console", name: "Console" } }' } });
  const heads = await ok('listBranchHeads', { path, query: { base: 'main' } });
  const b = heads.branches.find((x) => x.name === 'ts/console');
  assert.equal(b.ahead, 1);
  const pv = await ok('previewMerge', { path, body: { source: 'ts/console' } });
  assert.equal(pv.outcome, 'fast_forward');
  assert.deepEqual(pv.changes.map((c) => [c.op, c.id]), [['insert', 'ts-console']]);
  const d = await ok('diffRefs', { path, body: { from: 'main', to: 'ts/console' } });
  assert.deepEqual(d.changes.map((c) => [c.op, c.id]), [['insert', 'ts-console']]);
  await ok('deleteBranch', { path: { ...path, branch: 'ts/console' } });
});

test('blob routes refuse a property that is not a Blob', async () => {
  // The example graph has no Blob property; the Go tests read real values.
  const query = { entity: 'node', type: 'Person', id: 'alice', property: 'name' };
  await assert.rejects(og.unwrap(call('getBlob', { path, query })), (err) => {
    assert.equal(err.status, 400);
    assert.match(err.message, /not a Blob/);
    return true;
  });
  const res = await call('headBlob', { path, query });
  assert.equal(res.response.status, 400);
});

test('the change feed: poll from a cursor, a baseline and its cursor', async () => {
  const now = await ok('pollChanges', { path, query: { start: 'now' } });
  assert.ok(now.cursor);
  assert.equal(now.caught_up, true);
  await ok('mutate', { path, body: { query: 'mutation m() { insert Person { handle: "ts-fed", name: "Fed" } }' } });
  const next = await ok('pollChanges', { path, query: { cursor: now.cursor } });
  assert.deepEqual(next.blocks.flatMap((b) => b.changes.map((c) => [c.op, c.id])), [['insert', 'ts-fed']]);
  await assert.rejects(og.unwrap(call('pollChanges', { path, query: { cursor: 'ogc1.AAAA' } })), (err) => {
    assert.equal(err.status, 400);
    assert.match(err.body.error, /^change cursor rejected: /);
    return true;
  });
  const res = await call('captureChangeBaseline', { path, body: { types: ['Company'] }, parseAs: 'text' });
  assert.equal(res.response.status, 200);
  const lines = res.data.trim().split('\n').map((l) => JSON.parse(l));
  const last = lines.pop();
  assert.ok(lines.length > 0 && lines.every((l) => l.type === 'Company'));
  assert.equal(last.baseline.snapshot_commit_id, await head());
  const after = await ok('pollChanges', { path, query: { cursor: last.baseline.resume_cursor } });
  assert.equal(after.blocks.length, 0);
  assert.equal(after.caught_up, true);
});

test('stored queries: the catalog, a read by name, a conditional mutation by name', async () => {
  const cat = await ok('listQueries', { path });
  const adults = cat.queries.find((q) => q.name === 'city_adults');
  assert.deepEqual(adults.params.map((p) => [p.name, p.kind]), [['city', 'string'], ['min', 'int']]);
  const rows = await ok('invokeQuery', { path: { ...path, name: 'city_adults' }, body: { params: { city: 'Berlin', min: 30 } } });
  assert.equal(rows.query_name, 'city_adults');
  assert.ok(rows.row_count >= 1);
  await assert.rejects(og.unwrap(call('invokeQuery', { path: { ...path, name: 'nope' }, body: {} })), (err) => err.status === 404);
  const before = await head();
  const hired = await ok('invokeQueryIfGraphCommit', {
    path: { ...path, name: 'hire' },
    headers: { 'Omnigraph-If-Graph-Commit': before },
    body: { params: { h: 'ts-hired', name: 'Hired', age: 30, city: 'Lisbon', company: 'acme', title: 'dev', since: '2026-01-05' } },
  });
  assert.equal(hired.commit.parent_commit_id, before);
  assert.equal(hired.affected_edges, 1);
});

test('every operation of the document was called', () => {
  const doc = JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url)));
  const ops = [];
  for (const item of Object.values(doc.paths)) {
    for (const op of Object.values(item)) ops.push(op.operationId === 'export' ? 'export_' : op.operationId);
  }
  const missing = ops.filter((o) => !called.has(o));
  assert.deepEqual(missing, [], 'operations without a call in test/sdk.test.mjs');
});
