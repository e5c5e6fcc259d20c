// An agent loop replayed from a production run (the `tally demo` run in
// replay/testdata/demo_fixture.json), then red-teamed with a timeout on its
// first tool call. Run: node --test clients/js/examples/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';

import { withReplay, RecordedToolError, FaultError } from '../src/index.js';

const fixture = fileURLToPath(new URL('../../../replay/testdata/demo_fixture.json', import.meta.url));
const topic = 'cannot reset password after SSO migration';

/** Stands in for the LLM: the tool calls the production model asked for, one per turn. */
function scriptedModel() {
  const requests = [
    { tool: 'web_search', args: { query: `${topic} official documentation`, max_results: 5 } },
    { tool: 'web_search', args: { query: topic, max_results: 5 } },
    { tool: 'fetch_url', args: { url: 'https://en.wikipedia.org/cannot-reset-password-after-sso-migration-376', timeout_s: 3 } },
    { tool: 'web_search', args: { query: topic, max_results: 5 } }, // the model retries the rate-limited search
    { tool: 'fetch_url', args: { url: 'https://github.com/cannot-reset-password-after-sso-migration-643', timeout_s: 3 } },
  ];
  return { next: () => requests.shift() };
}

/**
 * The agent code under test: runs the tool calls the model asks for, hands
 * each result or the tool's error back, and retries a call that timed out
 * (a read: safe to retry) up to twice.
 */
async function researchStep(model, tools, log) {
  for (let req = model.next(); req; req = model.next()) {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await tools.call(req.tool, req.args);
        log.push(`${req.tool}: ${req.tool === 'web_search' ? `${result.results.length} results` : `HTTP ${result.status}`}`);
        break;
      } catch (err) {
        if (err instanceof FaultError && err.timeout && attempt < 3) {
          log.push(`${req.tool}: timed out, retrying (attempt ${attempt + 1})`);
          continue;
        }
        if (err instanceof RecordedToolError) {
          log.push(`${req.tool} failed: ${err.errorMessage}`);
          break;
        }
        throw err; // not in the fixture: the agent changed behaviour
      }
    }
  }
}

test('the agent replays the production run', async (t) => {
  const player = withReplay(t, fixture); // strict; the report must be clean at the end
  const log = [];
  await researchStep(scriptedModel(), player, log);
  assert.deepEqual(log, [
    'web_search: 3 results',
    'web_search failed: web_search: rate_limited after 86 ms',
    'fetch_url: HTTP 200',
    'web_search: 3 results',
    'fetch_url failed: fetch_url: timeout after 3065 ms',
  ]);
});

test('the agent retries a tool call that timed out', async (t) => {
  const player = withReplay(t, fixture, { faults: ['seq=1:timeout'] });
  const log = [];
  await researchStep(scriptedModel(), player, log);
  assert.deepEqual(log.slice(0, 2), ['web_search: timed out, retrying (attempt 2)', 'web_search: 3 results']);
  assert.deepEqual(player.report().faults, [
    { trace_id: 'c8e736dea0307c62e3d0cce802b84730', seq: 1, tool: 'web_search', kind: 'timeout' },
  ]);
});
