// The Vercel AI SDK adapter, against the real `ai` package (a
// devDependency: npm install --prefix clients/js --no-audit --no-fund).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

import { load, Player } from '../src/index.js';
import { replayTools } from '../src/adapters/ai-sdk.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const demo = path.resolve(here, '../../../replay/testdata/demo_fixture.json');

let ai, aiTest, z;
try {
  ai = await import('ai');
  aiTest = await import('ai/test');
  ({ z } = await import('zod'));
} catch {
  ai = null;
}
const skip = ai ? false : 'the `ai` package is not installed: run `npm ci --prefix clients/js --no-audit --no-fund`';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};
const topic = 'cannot reset password after SSO migration';
// What the production model asked for, one tool call per step.
const script = [
  ['web_search', { query: `${topic} official documentation`, max_results: 5 }],
  ['web_search', { query: topic, max_results: 5 }],
  ['fetch_url', { url: 'https://en.wikipedia.org/cannot-reset-password-after-sso-migration-376', timeout_s: 3 }],
  ['web_search', { query: topic, max_results: 5 }],
  ['fetch_url', { url: 'https://github.com/cannot-reset-password-after-sso-migration-643', timeout_s: 3 }],
];

function scriptedModel(calls) {
  const steps = calls.map(([toolName, input], i) => ({
    content: [{ type: 'tool-call', toolCallId: `call_${i + 1}`, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  }));
  steps.push({ content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] });
  return new aiTest.MockLanguageModelV3({ doGenerate: steps });
}

function realTools() {
  const never = async () => { throw new Error('the real tool must not run in a replay'); };
  return {
    web_search: ai.tool({
      description: 'Search the web',
      inputSchema: z.object({ query: z.string(), max_results: z.number() }),
      execute: never,
    }),
    fetch_url: ai.tool({
      description: 'Fetch a URL',
      inputSchema: z.object({ url: z.string(), timeout_s: z.number() }),
      execute: never,
    }),
  };
}

test('generateText runs the AI SDK tools from the fixture', { skip }, async () => {
  const player = new Player(load(demo), { strict: true });
  const result = await ai.generateText({
    model: scriptedModel(script),
    tools: replayTools(realTools(), player),
    stopWhen: ai.stepCountIs(10),
    prompt: 'Why can I not reset my password?',
  });
  assert.equal(result.text, 'done');
  const parts = result.steps.flatMap((s) => s.content).filter((p) => p.type === 'tool-result' || p.type === 'tool-error');
  assert.deepEqual(parts.map((p) => `${p.toolName}:${p.type}`), [
    'web_search:tool-result', 'web_search:tool-error', 'fetch_url:tool-result', 'web_search:tool-result', 'fetch_url:tool-error',
  ]);
  assert.equal(parts[0].output.results.length, 3);
  assert.equal(parts[2].output.status, 200);
  assert.match(String(parts[1].error.message), /recorded error from call #2 web_search: rate_limited/);
  assert.equal(parts[1].error.name, 'RecordedToolError');
  player.report().assertClean();
});

test('an unrecorded AI SDK call is reported with the closest recorded call', { skip }, async () => {
  const player = new Player(load(demo), { strict: true });
  const changed = [['web_search', { query: `${topic} official documentation`, max_results: 10 }]];
  const result = await ai.generateText({
    model: scriptedModel(changed),
    tools: replayTools(realTools(), player),
    stopWhen: ai.stepCountIs(5),
    prompt: 'x',
  });
  const err = result.steps[0].content.find((p) => p.type === 'tool-error');
  assert.equal(err.error.name, 'UnexpectedCallError');
  assert.match(err.error.message, /closest recorded call #1 web_search differs at "max_results": recorded 5, got 10/);
  const report = player.report();
  assert.equal(report.unexpected.length, 1);
  assert.throws(() => report.assertClean(), /1 unexpected call/);
});

test('a timeout fault reaches the AI SDK as a tool error, then the recording answers', { skip }, async () => {
  const player = new Player(load(demo), { strict: true, faults: ['seq=1:timeout'] });
  const first = script[0];
  const result = await ai.generateText({
    model: scriptedModel([first, first]),
    tools: replayTools(realTools(), player),
    stopWhen: ai.stepCountIs(5),
    prompt: 'x',
  });
  const parts = result.steps.flatMap((s) => s.content).filter((p) => p.type === 'tool-result' || p.type === 'tool-error');
  assert.equal(parts[0].type, 'tool-error');
  assert.equal(parts[0].error.kind, 'timeout');
  assert.equal(parts[1].type, 'tool-result');
  assert.deepEqual(player.report().faults.map((f) => f.kind), ['timeout']);
});

test('fallback runs the real tool for a call the fixture does not hold', { skip }, async () => {
  const player = new Player(load(demo));
  const tools = replayTools({
    web_search: ai.tool({ inputSchema: z.object({ query: z.string() }), execute: async ({ query }) => ({ live: query }) }),
  }, player, { fallback: true });
  assert.deepEqual(await tools.web_search.execute({ query: 'new' }, { toolCallId: 'x', messages: [] }), { live: 'new' });
});
