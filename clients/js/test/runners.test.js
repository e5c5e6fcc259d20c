// withReplay and replayHooks under the REAL vitest and jest: runs each
// runner (devDependencies, pinned in package-lock.json) on the examples in
// runners/ and checks that the clean replays pass and that a regressed agent
// (an unexpected call, unmet calls) fails its tests with the report's text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = {
  vitest: path.join(root, 'node_modules/vitest/vitest.mjs'),
  jest: path.join(root, 'node_modules/jest/bin/jest.js'),
};
const missing = Object.keys(bin).filter((name) => !existsSync(bin[name]));
const skip = missing.length === 0 ? false
  : `${missing.join(' and ')} not installed: run scripts/test-deps.sh (or: cd clients/js && npm ci --no-audit --no-fund)`;

const tmp = mkdtempSync(path.join(tmpdir(), 'tally-replay-runners-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

/** Runs a runner on one example file: exit code, its human output, and its JSON results. */
function run(runner, file) {
  const json = path.join(tmp, `${runner}-${path.basename(file, '.test.js')}.json`);
  const config = path.join(root, 'runners', runner, runner === 'vitest' ? 'vitest.config.js' : 'jest.config.js');
  const target = path.join(root, 'runners', runner, file);
  const args = runner === 'vitest'
    ? [bin.vitest, 'run', '--config', config, '--reporter=default', '--reporter=json', `--outputFile.json=${json}`, target]
    : ['--experimental-vm-modules', '--no-warnings', bin.jest, '--config', config, '--ci', '--json', `--outputFile=${json}`, target];
  const env = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', CI: '1' };
  delete env.NODE_TEST_CONTEXT; // node --test's protocol is for node:test children only
  delete env.NODE_OPTIONS;
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    let output = '';
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      let results = null;
      try { results = JSON.parse(readFileSync(json, 'utf8')); } catch { /* asserted below */ }
      resolve({ code, signal, output, results, ms: Date.now() - started });
    });
  });
}

/** Each test's [full name, status, failure text] from the jest-shaped JSON both runners write. */
function outcomes(r) {
  assert.ok(r.results, `no JSON results; output:\n${r.output}`);
  return r.results.testResults.flatMap((f) => f.assertionResults.map((a) => ({
    name: [...a.ancestorTitles, a.title].join(' > '),
    status: a.status,
    failure: a.failureMessages.join('\n'),
  })));
}

const unexpected = [
  'replay: 1 recorded call(s) never made, 1 unexpected call(s)',
  '  never made: #1 web_search(args {"max_results":5,"query":"cannot reset password after SSO migration official documentation"}) in trace c8e736dea0307c62e3d0cce802b84730',
  '  unexpected call web_search(args {"query":"cannot reset password after SSO migration official documentation","max_results":10}): closest recorded call #1 web_search differs at "max_results": recorded 5, got 10',
].join('\n');
const unmet = [
  'replay: 2 recorded call(s) never made, 0 unexpected call(s)',
  '  never made: #4 web_search(args {"max_results":5,"query":"cannot reset password after SSO migration"}) in trace c8e736dea0307c62e3d0cce802b84730',
  '  never made: #5 fetch_url(args {"timeout_s":3,"url":"https://github.com/cannot-reset-password-after-sso-migration-643"}) in trace c8e736dea0307c62e3d0cce802b84730',
].join('\n');

const expectPass = {
  vitest: [
    'the agent replays the production run',
    'the agent retries a tool call that timed out',
    'replayHooks with the hooks imported from vitest > the agent replays the production run',
  ],
  jest: [
    'the production run > the agent replays it',
    'the production run > each test gets a fresh player',
    'the production run with a timeout on the first call > the agent retries a tool call that timed out',
  ],
};
const regressionPrefix = { vitest: '', jest: 'a regressed agent > ' };

for (const runner of ['vitest', 'jest']) {
  test(`${runner}: the clean and fault-injected replays pass`, { skip }, async (t) => {
    const r = await run(runner, 'replay.test.js');
    t.diagnostic(`${runner} replay.test.js: exit ${r.code} in ${r.ms} ms`);
    assert.equal(r.code, 0, `${runner} exited ${r.code} (${r.signal ?? 'no signal'}):\n${r.output}`);
    assert.deepEqual(outcomes(r).map(({ name, status }) => [name, status]), expectPass[runner].map((n) => [n, 'passed']));
    assert.match(r.output, runner === 'vitest' ? /Tests\s+3 passed \(3\)/ : /Tests:\s+3 passed, 3 total/);
  });

  test(`${runner}: a regressed agent fails its tests with the replay report`, { skip }, async (t) => {
    const r = await run(runner, 'regression.test.js');
    t.diagnostic(`${runner} regression.test.js: exit ${r.code} in ${r.ms} ms (failures expected)`);
    assert.equal(r.code, 1, `${runner} exited ${r.code} (${r.signal ?? 'no signal'}), want 1:\n${r.output}`);
    const got = outcomes(r);
    assert.deepEqual(got.map(({ name, status }) => [name, status]), [
      [`${regressionPrefix[runner]}regression: an unexpected call`, 'failed'],
      [`${regressionPrefix[runner]}regression: unmet calls`, 'failed'],
    ]);
    assert.ok(got[0].failure.startsWith(`ReplayReportError: ${unexpected}\n`), got[0].failure);
    assert.ok(got[1].failure.startsWith(`ReplayReportError: ${unmet}\n`), got[1].failure);
    // and the runner's own report shows the same text (jest indents it)
    const flat = r.output.replace(/^[ \t]+/gm, '');
    for (const text of [unexpected, unmet]) {
      assert.ok(flat.includes(text.replace(/^[ \t]+/gm, '')), `missing from ${runner}'s output:\n${text}\n--- output:\n${r.output}`);
    }
    assert.match(r.output, runner === 'vitest' ? /Tests\s+2 failed \(2\)/ : /Tests:\s+2 failed, 2 total/);
  });
}
