// FAILS ON PURPOSE: an agent that regressed, replayed under the real jest.
// Each test body passes; replayHooks' afterEach check fails it.
// test/runners.test.js runs this file and checks both failures' text.
import { replayHooks } from '@tallyhq/replay';
import { researchStep, scriptedModel, productionRequests } from '../agent.js';

const fixture = new URL('../../../../replay/testdata/demo_fixture.json', import.meta.url);

describe('a regressed agent', () => {
  const replay = replayHooks(fixture);

  test('regression: an unexpected call', async () => {
    const requests = productionRequests();
    requests[0].args.max_results = 10; // a prompt change: the first search now asks for 10
    const log = [];
    await researchStep(scriptedModel(requests), replay.player, log); // the agent swallows the error
    expect(log).toHaveLength(5);
  });

  test('regression: unmet calls', async () => {
    const log = [];
    await researchStep(scriptedModel(productionRequests().slice(0, 3)), replay.player, log); // stops early
    expect(log).toHaveLength(3);
  });
});
