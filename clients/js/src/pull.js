// Fetching fixtures from a running tally (GET /api/v1/runs/{id}/fixture,
// GET /api/v1/runs?conversation=…|task=…&since=…; docs/api.md), as
// `tally replay export` does, into a test data directory.

import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from './fixture.js';

const TRACE_ID = /^[0-9a-fA-F]{32}$/;
const TRACE_PREFIX = /^[0-9a-fA-F]{8,31}$/;
const MAX_RUNS = 10000;

/** A failed pull: a bad argument, an unreachable tally, or an API error. */
export class PullError extends Error {
  constructor(message, status) {
    super(message);
    this.name = 'PullError';
    /** the HTTP status, when the API answered with an error */
    this.status = status;
  }
}

/** Checks a run id (32 hex characters, or a prefix of 8 or more) and lowercases it. */
export function traceIdOrPrefix(v) {
  if (TRACE_ID.test(v) || TRACE_PREFIX.test(v)) return v.toLowerCase();
  throw new PullError(`trace id ${JSON.stringify(v)}: want 32 hex characters, or the first 8 or more of them`);
}

async function get(opts, route, query) {
  const base = (opts.server ?? process.env.TALLY_SERVER ?? 'http://127.0.0.1:4318').replace(/\/+$/, '');
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== '' && v !== null) q.set(k, String(v));
  const qs = q.toString();
  const url = base + route + (qs ? '?' + qs : '');
  const headers = { Accept: 'application/json' };
  const key = opts.key ?? process.env.TALLY_KEY;
  if (key) headers.Authorization = `Bearer ${key}`;
  const doFetch = opts.fetch ?? globalThis.fetch;
  let resp;
  try {
    resp = await doFetch(url, { headers, signal: opts.signal });
  } catch (err) {
    const refused = err?.cause?.code === 'ECONNREFUSED' || err?.code === 'ECONNREFUSED';
    throw new PullError(`GET ${url}: ${err.cause?.message ?? err.message}${refused ? ' (is tally running there? start it with \'tally serve\', or pass server or set TALLY_SERVER)' : ''}`);
  }
  const body = new Uint8Array(await resp.arrayBuffer());
  if (resp.status !== 200) {
    let msg = '';
    try { msg = JSON.parse(new TextDecoder().decode(body)).error ?? ''; } catch { /* not JSON */ }
    const status = `${resp.status} ${resp.statusText}`.trim();
    throw new PullError(msg ? `GET ${url}: ${status}: ${msg}` : `GET ${url}: ${status}`, resp.status);
  }
  return body;
}

/**
 * Lists the runs a filter selects, oldest first (the API lists newest first).
 */
async function selectRuns(opts) {
  const limit = opts.limit ?? 1000;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_RUNS) throw new PullError(`limit ${limit}: want 1 to ${MAX_RUNS}`);
  const query = { conversation: opts.conversation, task: opts.task, agent: opts.agent, since: opts.since, until: opts.until };
  const matched = [];
  let cursor;
  while (matched.length < limit) {
    const body = await get(opts, '/api/v1/runs', { ...query, limit: Math.min(limit - matched.length, 1000), cursor });
    const page = JSON.parse(new TextDecoder().decode(body));
    for (const r of page.runs ?? []) {
      // The id names a file: trust the server no more than the caller.
      if (typeof r.trace_id !== 'string' || !TRACE_ID.test(r.trace_id)) {
        throw new PullError(`select runs: the server answered trace id ${JSON.stringify(r.trace_id)}`);
      }
      matched.push(r.trace_id.toLowerCase());
      if (matched.length === limit) break;
    }
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
  }
  return matched.reverse();
}

/**
 * Fetches fixtures from a running tally and writes each, as served (the
 * deterministic bytes), to `<out>/<trace_id>.fixture.json`.
 *
 * Runs are the ids given (full trace ids, or a prefix of 8 or more), then
 * the runs matching conversation, task, agent, since and until (oldest
 * first), each once. The key needs the read scope.
 *
 * @param {import('./pull.d.ts').PullOptions} opts
 * @returns {Promise<import('./pull.d.ts').PulledFixture[]>}
 */
export async function pull(opts = {}) {
  const ids = [];
  const seen = new Set();
  const add = (id) => { if (!seen.has(id)) { seen.add(id); ids.push(id); } };
  const given = opts.runs ?? (opts.run ? [opts.run] : []);
  for (const id of given) add(traceIdOrPrefix(id));
  const filtered = [opts.conversation, opts.task, opts.agent, opts.since, opts.until].some((v) => v);
  if (filtered) {
    const matched = await selectRuns(opts);
    if (matched.length === 0 && ids.length === 0) throw new PullError('no runs match the filters');
    matched.forEach(add);
  } else if (ids.length === 0) {
    throw new PullError('nothing to pull: give run ids, or select runs with conversation, task, agent or since');
  }
  const out = opts.out ?? 'testdata';
  const pulled = [];
  const fetched = new Set();
  for (const id of ids) {
    const body = await get(opts, `/api/v1/runs/${id}/fixture`, opts.inferences ? { inferences: 'true' } : undefined);
    let fixture;
    try {
      fixture = parse(body);
    } catch (err) {
      throw new PullError(`run ${id}: ${err.message}`);
    }
    const traceId = fixture.run.trace_id;
    if (!TRACE_ID.test(traceId)) throw new PullError(`run ${id}: the fixture's trace id ${JSON.stringify(traceId)} is not a trace id`);
    if (fetched.has(traceId)) continue; // a prefix and a full id of the same run
    fetched.add(traceId);
    mkdirSync(out, { recursive: true });
    const file = path.join(out, `${traceId.toLowerCase()}.fixture.json`);
    writeFileSync(file, body);
    pulled.push({ traceId, path: file, fixture });
  }
  return pulled;
}
