// @tallyhq/replay under the real jest (ESM): replayHooks at describe level
// gives replay.player, fresh for each test and its report checked after it
// (jest's global beforeEach/afterEach), as docs/replay.md ("Replay in
// TypeScript") shows. Run by test/runners.test.js.
import { replayHooks } from '@tallyhq/replay';
import { researchStep, scriptedModel, productionLog } from '../agent.js';

const fixture = new URL('../../../../replay/testdata/demo_fixture.json', import.meta.url);

describe('the production run', () => {
  const replay = replayHooks(fixture); // strict; each test's report must be clean at its end

  test('the agent replays it', async () => {
    const log = [];
    await researchStep(scriptedModel(), replay.player, log);
    expect(log).toEqual(productionLog);
  });

  test('each test gets a fresh player', async () => {
    const log = [];
    await researchStep(scriptedModel(), replay.player, log);
    expect(log).toEqual(productionLog);
  });
});

describe('the production run with a timeout on the first call', () => {
  const replay = replayHooks(fixture, { faults: ['seq=1:timeout'] });

  test('the agent retries a tool call that timed out', async () => {
    const log = [];
    await researchStep(scriptedModel(), replay.player, log);
    expect(log.slice(0, 2)).toEqual(['web_search: timed out, retrying (attempt 2)', 'web_search: 3 results']);
    expect(replay.player.report().faults).toEqual([
      { trace_id: 'c8e736dea0307c62e3d0cce802b84730', seq: 1, tool: 'web_search', kind: 'timeout' },
    ]);
  });
});
