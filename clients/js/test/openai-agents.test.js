// The OpenAI Agents JS adapter, against the real `@openai/agents` package (a
// devDependency: npm ci --prefix clients/js --no-audit --no-fund). The model
// is a scripted stand-in for the LLM; the tools are answered by the player.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

import { load, Player } from '../src/index.js';
import { replayAgent, replayAgentTools } from '../src/adapters/openai-agents.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const expectedFixture = path.resolve(here, '../../../replay/testdata/expected_fixture.json');

let agents, z;
try {
  process.env.OPENAI_AGENTS_DISABLE_TRACING ??= '1';
  agents = await import('@openai/agents');
  ({ z } = await import('zod'));
  agents.setTracingDisabled?.(true);
} catch {
  agents = null;
}
const skip = agents ? false : 'the `@openai/agents` package is not installed: run `npm ci --prefix clients/js --no-audit --no-fund`';

/** A Model that asks for the given tool calls (arguments as JSON text), one turn each, then answers "done". */
class ScriptedModel {
  constructor(calls) {
    this.calls = calls;
    this.turn = 0;
    this.requests = [];
  }
  async getResponse(request) {
    this.requests.push(request);
    const usage = new agents.Usage();
    const i = this.turn++;
    if (i < this.calls.length) {
      const [name, args] = this.calls[i];
      return { usage, output: [{ type: 'function_call', callId: `call_${i + 1}`, name, arguments: args, status: 'completed' }] };
    }
    return {
      usage,
      output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] }],
    };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error('not streamed');
  }
}

function realTools() {
  const never = async () => { throw new Error('the real tool must not run in a replay'); };
  return [
    agents.tool({ name: 'search', description: 'Search hotels', parameters: z.object({ q: z.string(), limit: z.number() }), execute: never }),
    agents.tool({ name: 'get_weather', description: 'Weather', parameters: z.object({ city: z.string() }), execute: never }),
    agents.tool({ name: 'book', description: 'Book', parameters: z.object({ hotel_id: z.string(), nights: z.number() }), execute: never }),
  ];
}

/** The tool outputs the run fed back to the model, in order. */
function toolOutputs(result) {
  return result.newItems.filter((i) => i.type === 'tool_call_output_item').map((i) => i.output);
}

test('an Agent runs its function tools from the fixture', { skip }, async () => {
  const player = new Player(load(expectedFixture), { strict: true });
  const model = new ScriptedModel([
    ['search', '{"q": "hotels in Lisbon", "limit": 10}'], // key order and spaces do not matter
    ['get_weather', '{"city":"Lisbon"}'],
    ['get_weather', '{"city":"Lisbon"}'], // the retry after the recorded timeout
    ['book', '{"hotel_id":"h1","nights":3}'],
  ]);
  const agent = new agents.Agent({ name: 'trip-planner', instructions: 'Plan.', model, tools: realTools() });
  const result = await agents.run(replayAgent(agent, player), 'Plan a trip to Lisbon');
  assert.equal(result.finalOutput, 'done');
  const outputs = toolOutputs(result);
  assert.equal(outputs.length, 4);
  assert.deepEqual(outputs[0].hits.map((h) => h.id), ['h1', 'h2']); // the recorded result, as the tool returned it
  assert.match(outputs[1], /^An error occurred while running the tool\. Please try again\. Error: RecordedToolError: replay: recorded error from call #2 get_weather: timeout: upstream timed out after 5s$/);
  assert.equal(outputs[2].temp_c, 18.5);
  assert.equal(outputs[3], 'confirmed <ref ABC123> & emailed');
  const report = player.report();
  assert.deepEqual(report.unmet.map((u) => u.seq), [5]); // notify: never called by this script
  assert.equal(report.unexpected.length, 0);
});

test('a strict replay fails the run naming the differing argument', { skip }, async () => {
  const player = new Player(load(expectedFixture), { strict: true });
  const model = new ScriptedModel([['search', '{"q":"hotels in Lisbon","limit":5}']]);
  const agent = new agents.Agent({ name: 'trip-planner', model, tools: replayAgentTools(realTools(), player) });
  await assert.rejects(agents.run(agent, 'Plan'), (err) => {
    const text = `${err.message} ${err.cause?.message ?? ''}`;
    assert.match(text, /closest recorded call #1 search differs at "limit": recorded 10, got 5/);
    return true;
  });
  assert.equal(player.report().unexpected.length, 1);
});

test('an injected rate limit reaches the model as a tool failure, then the recording answers', { skip }, async () => {
  const player = new Player(load(expectedFixture), { strict: true, faults: ['tool=search:rate_limit,retry_after_seconds=2'] });
  const call = ['search', '{"q":"hotels in Lisbon","limit":10}'];
  const model = new ScriptedModel([call, call]);
  const agent = new agents.Agent({ name: 'trip-planner', model, tools: replayAgentTools(realTools(), player) });
  const result = await agents.run(agent, 'Plan');
  const outputs = toolOutputs(result);
  assert.match(outputs[0], /FaultError: replay: injected fault on call #1 search: 429 Too Many Requests, retry after 2s/);
  assert.equal(outputs[1].hits.length, 2);
  assert.deepEqual(player.report().faults, [{ trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', seq: 1, tool: 'search', kind: 'rate_limit' }]);
});

test('non-function tools pass through unchanged', { skip }, () => {
  const player = new Player(load(expectedFixture));
  const hosted = { type: 'hosted_tool', name: 'web_search_preview' };
  const [t] = replayAgentTools([hosted], player);
  assert.equal(t, hosted);
});
