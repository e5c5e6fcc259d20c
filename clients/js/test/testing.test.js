// Test-runner helpers: withReplay (node:test, vitest contexts, hook
// registrars) and replayHooks (describe blocks).
import { test, describe, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

import { withReplay, replayHooks, ReplayReportError } from '../src/index.js';

const demo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../replay/testdata/demo_fixture.json');
const topic = 'cannot reset password after SSO migration';
const calls = [
  ['web_search', { query: `${topic} official documentation`, max_results: 5 }],
  ['web_search', { query: topic, max_results: 5 }],
  ['fetch_url', { url: 'https://en.wikipedia.org/cannot-reset-password-after-sso-migration-376', timeout_s: 3 }],
  ['web_search', { query: topic, max_results: 5 }],
  ['fetch_url', { url: 'https://github.com/cannot-reset-password-after-sso-migration-643', timeout_s: 3 }],
];
function playAll(player, list = calls) {
  for (const [tool, args] of list) {
    try { player.call(tool, args); } catch (err) { if (err.name !== 'RecordedToolError') throw err; }
  }
}

test('withReplay on node:test: a clean replay passes', (t) => {
  const player = withReplay(t, demo);
  assert.equal(player.strict, true);
  playAll(player);
});

test('withReplay registers a check that fails on unmet calls', () => {
  let check;
  const player = withReplay({ after: (fn) => { check = fn; } }, demo);
  playAll(player, calls.slice(0, 2));
  assert.throws(check, (err) => {
    assert.ok(err instanceof ReplayReportError);
    assert.match(err.message, /^replay: 3 recorded call\(s\) never made, 0 unexpected call\(s\)\n {2}never made: #3 fetch_url/);
    return true;
  });
  // allowUnmet: only unexpected calls fail
  let lenient;
  const p2 = withReplay((fn) => { lenient = fn; }, demo, { allowUnmet: true });
  playAll(p2, calls.slice(0, 1));
  lenient();
});

test('withReplay takes a vitest context (onTestFinished)', () => {
  let check;
  const player = withReplay({ onTestFinished: (fn) => { check = fn; } }, demo, { faults: ['seq=1:timeout'] });
  assert.throws(() => player.call(...calls[0]), { name: 'FaultError' });
  playAll(player);
  check();
  assert.throws(() => withReplay({}, demo), /pass the node:test or vitest test context/);
});

describe('replayHooks gives each test a fresh player', () => {
  const replay = replayHooks(demo, { beforeEach, afterEach });
  test('first', () => playAll(replay.player));
  test('second', () => playAll(replay.player));
});
