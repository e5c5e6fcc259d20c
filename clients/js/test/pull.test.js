// pull() against a tiny in-process HTTP server standing in for tally.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

import { pull, PullError, Player } from '../src/index.js';

const testdata = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../replay/testdata');
const fixtures = {
  '4bf92f3577b34da6a3ce929d0e0e4736': readFileSync(path.join(testdata, 'expected_fixture.json')),
  c8e736dea0307c62e3d0cce802b84730: readFileSync(path.join(testdata, 'demo_fixture.json')),
};
const KEY = 'tly_read_test';

/** Starts a fake tally; returns {url, requests, close}. */
async function fakeTally() {
  const requests = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    requests.push({ path: url.pathname, query: Object.fromEntries(url.searchParams), auth: req.headers.authorization });
    const json = (status, body) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(typeof body === 'string' || body instanceof Buffer ? body : JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${KEY}`) return json(401, { error: 'missing or invalid API key' });
    let m = /^\/api\/v1\/runs\/([0-9a-f]+)\/fixture$/.exec(url.pathname);
    if (m) {
      const ids = Object.keys(fixtures).filter((id) => id.startsWith(m[1]));
      if (ids.length !== 1) return json(404, { error: `run ${m[1]} not found` });
      return json(200, fixtures[ids[0]]);
    }
    if (url.pathname === '/api/v1/runs') {
      // newest first, one run per page to exercise the cursor
      const all = url.searchParams.get('conversation') === 'conv-42' || url.searchParams.get('task')
        ? ['c8e736dea0307c62e3d0cce802b84730', '4bf92f3577b34da6a3ce929d0e0e4736'] : [];
      const start = Number(url.searchParams.get('cursor') ?? 0);
      const runs = all.slice(start, start + 1).map((trace_id) => ({ trace_id }));
      return json(200, { runs, next_cursor: start + 1 < all.length ? String(start + 1) : '' });
    }
    json(404, { error: 'not found' });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((r) => server.close(r)) };
}

test('pull fetches a run by id and by 8-character prefix into testdata', async (t) => {
  const tally = await fakeTally();
  const out = mkdtempSync(path.join(tmpdir(), 'tally-pull-'));
  t.after(async () => { await tally.close(); rmSync(out, { recursive: true, force: true }); });

  const pulled = await pull({ server: tally.url, key: KEY, runs: ['4BF92F3577B34DA6A3CE929D0E0E4736', 'c8e736de'], out });
  assert.deepEqual(pulled.map((p) => p.traceId), ['4bf92f3577b34da6a3ce929d0e0e4736', 'c8e736dea0307c62e3d0cce802b84730']);
  // the bytes as served
  assert.deepEqual(readFileSync(pulled[0].path), fixtures['4bf92f3577b34da6a3ce929d0e0e4736']);
  assert.equal(path.basename(pulled[1].path), 'c8e736dea0307c62e3d0cce802b84730.fixture.json');
  assert.deepEqual(tally.requests.map((r) => r.path), [
    '/api/v1/runs/4bf92f3577b34da6a3ce929d0e0e4736/fixture', '/api/v1/runs/c8e736de/fixture',
  ]);
  assert.ok(tally.requests.every((r) => r.auth === `Bearer ${KEY}`));
  // and the pulled file replays
  const player = new Player(pulled[1].path, { strict: true });
  assert.equal(player.call('web_search', {
    query: 'cannot reset password after SSO migration official documentation', max_results: 5,
  }).results.length, 3);
});

test('pull selects runs by conversation, and by task and since, oldest first', async (t) => {
  const tally = await fakeTally();
  const out = mkdtempSync(path.join(tmpdir(), 'tally-pull-'));
  t.after(async () => { await tally.close(); rmSync(out, { recursive: true, force: true }); });

  const byConv = await pull({ server: tally.url, key: KEY, conversation: 'conv-42', out });
  assert.deepEqual(byConv.map((p) => p.traceId), ['4bf92f3577b34da6a3ce929d0e0e4736', 'c8e736dea0307c62e3d0cce802b84730']);
  const list = tally.requests.filter((r) => r.path === '/api/v1/runs');
  assert.deepEqual(list[0].query, { conversation: 'conv-42', limit: '1000' });
  assert.deepEqual(list[1].query, { conversation: 'conv-42', limit: '999', cursor: '1' });

  tally.requests.length = 0;
  const byTask = await pull({ server: tally.url, key: KEY, task: 'plan_trip', since: '7d', limit: 1, inferences: true, out });
  assert.equal(byTask.length, 1);
  assert.deepEqual(tally.requests[0].query, { task: 'plan_trip', since: '7d', limit: '1' });
  assert.deepEqual(tally.requests[1].query, { inferences: 'true' });
});

test('pull errors name the problem', async (t) => {
  const tally = await fakeTally();
  t.after(() => tally.close());
  await assert.rejects(pull({ server: tally.url, key: KEY, runs: ['abc'] }), /trace id "abc": want 32 hex characters, or the first 8 or more/);
  await assert.rejects(pull({ server: tally.url, key: KEY }), /nothing to pull/);
  await assert.rejects(pull({ server: tally.url, key: 'wrong', runs: ['4bf92f35'], out: tmpdir() }), (err) => {
    assert.ok(err instanceof PullError);
    assert.equal(err.status, 401);
    assert.match(err.message, /401 Unauthorized: missing or invalid API key/);
    return true;
  });
  await assert.rejects(pull({ server: tally.url, key: KEY, runs: ['ffffffff'], out: tmpdir() }), /404 Not Found: run ffffffff not found/);
  await assert.rejects(pull({ server: tally.url, key: KEY, conversation: 'none', out: tmpdir() }), /no runs match the filters/);
  const closed = await fakeTally();
  await closed.close();
  await assert.rejects(pull({ server: closed.url, key: KEY, runs: ['4bf92f35'], out: tmpdir() }), /ECONNREFUSED|is tally running there\?/);
});
