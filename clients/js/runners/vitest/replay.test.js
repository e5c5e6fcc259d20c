// @tallyhq/replay under the real vitest: withReplay with the test context
// (its onTestFinished checks the report when the test ends), as docs/replay.md
// ("Replay in TypeScript") shows; and replayHooks with vitest's imported
// beforeEach/afterEach. Run by test/runners.test.js.
import { test, describe, expect, beforeEach, afterEach } from 'vitest';
import { withReplay, replayHooks } from '@tallyhq/replay';
import { researchStep, scriptedModel, productionLog } from '../agent.js';

const fixture = new URL('../../../../replay/testdata/demo_fixture.json', import.meta.url);

test('the agent replays the production run', async (ctx) => {
  const player = withReplay(ctx, fixture); // strict; the report must be clean at the end
  const log = [];
  await researchStep(scriptedModel(), player, log);
  expect(log).toEqual(productionLog);
});

test('the agent retries a tool call that timed out', async (ctx) => {
  const player = withReplay(ctx, fixture, { faults: ['seq=1:timeout'] });
  const log = [];
  await researchStep(scriptedModel(), player, log);
  expect(log.slice(0, 2)).toEqual(['web_search: timed out, retrying (attempt 2)', 'web_search: 3 results']);
  expect(player.report().faults).toEqual([
    { trace_id: 'c8e736dea0307c62e3d0cce802b84730', seq: 1, tool: 'web_search', kind: 'timeout' },
  ]);
});

describe('replayHooks with the hooks imported from vitest', () => {
  const replay = replayHooks(fixture, { beforeEach, afterEach });

  test('the agent replays the production run', async () => {
    const log = [];
    await researchStep(scriptedModel(), replay.player, log);
    expect(log).toEqual(productionLog);
  });
});
