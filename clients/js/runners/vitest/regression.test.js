// FAILS ON PURPOSE: an agent that regressed, replayed under the real vitest.
// Each test body passes; withReplay's check (ctx.onTestFinished) fails it.
// test/runners.test.js runs this file and checks both failures' text.
import { test, expect } from 'vitest';
import { withReplay } from '@tallyhq/replay';
import { researchStep, scriptedModel, productionRequests } from '../agent.js';

const fixture = new URL('../../../../replay/testdata/demo_fixture.json', import.meta.url);

test('regression: an unexpected call', async (ctx) => {
  const player = withReplay(ctx, fixture);
  const requests = productionRequests();
  requests[0].args.max_results = 10; // a prompt change: the first search now asks for 10
  const log = [];
  await researchStep(scriptedModel(requests), player, log); // the agent swallows the error
  expect(log).toHaveLength(5);
});

test('regression: unmet calls', async (ctx) => {
  const player = withReplay(ctx, fixture);
  const log = [];
  await researchStep(scriptedModel(productionRequests().slice(0, 3)), player, log); // stops early
  expect(log).toHaveLength(3);
});
