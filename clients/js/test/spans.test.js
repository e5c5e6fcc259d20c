// Span helpers: a fake span given explicitly, and the current span through
// the real @opentelemetry/api (a devDependency) with a minimal context
// manager; without an API they do nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import * as spans from '../src/spans.js';

class FakeSpan {
  constructor() {
    this.attributes = {};
    this.events = [];
  }
  setAttribute(k, v) { this.attributes[k] = v; return this; }
  addEvent(name, attributes) { this.events.push({ name, attributes }); return this; }
  isRecording() { return true; }
}

test('tool effect, idempotency key, approval and denial', () => {
  const span = new FakeSpan();
  assert.equal(spans.markToolEffect(' Irreversible ', { span }), true);
  assert.equal(spans.markIdempotencyKey('refund-42', { span, stepId: true }), true);
  assert.deepEqual(span.attributes, {
    'tally.tool.effect': 'irreversible', 'tally.tool.idempotency_key': 'refund-42', 'gen_ai.step.id': 'refund-42',
  });
  assert.throws(() => spans.markToolEffect('dangerous', { span }), /want one of read, idempotent, non_idempotent, irreversible, unknown/);

  spans.markApproval('approve', { by: 'alice@example.com', tool: 'refund', waitMs: 1200, span });
  spans.markDenial({ by: 'bob', span });
  assert.deepEqual(span.events, [
    { name: 'tally.approval', attributes: { 'tally.approval.decision': 'approved', 'tally.approval.by': 'alice@example.com', 'tally.approval.tool': 'refund', 'tally.approval.wait_ms': 1200 } },
    { name: 'tally.approval', attributes: { 'tally.approval.decision': 'rejected', 'tally.approval.by': 'bob' } },
  ]);
  const approvalSpan = new FakeSpan();
  spans.markApproval('timeout', { by: 'ops', asSpan: true, span: approvalSpan });
  assert.deepEqual(approvalSpan.attributes, { 'tally.approval.decision': 'timeout', 'tally.approval.by': 'ops' });
  assert.throws(() => spans.markApproval('maybe', { span }), /approval decision "maybe"/);
});

test("a run's task, user and outcome", () => {
  const span = new FakeSpan();
  assert.equal(spans.markRun({ task: 'refund_order', user: 'user-8', incomplete: 'iteration_limit', outcome: { name: 'resolved', passed: true, score: 0.9, explanation: 'customer confirmed' }, span }), true);
  assert.deepEqual(span.attributes, { 'task.name': 'refund_order', 'user.id': 'user-8', 'tally.run.incomplete': 'iteration_limit' });
  assert.deepEqual(span.events, [{
    name: 'gen_ai.evaluation.result',
    attributes: {
      'gen_ai.evaluation.name': 'resolved', 'gen_ai.evaluation.score.value': 0.9,
      'gen_ai.evaluation.explanation': 'customer confirmed', 'gen_ai.evaluation.passed': true,
    },
  }]);
  const s2 = new FakeSpan();
  spans.markOutcome('fail', { span: s2 });
  spans.markOutcome(true, { span: s2 });
  assert.deepEqual(s2.events.map((e) => e.attributes), [
    { 'gen_ai.evaluation.name': 'evaluation', 'gen_ai.evaluation.score.label': 'fail' },
    { 'gen_ai.evaluation.name': 'evaluation', 'gen_ai.evaluation.passed': true },
  ]);
  const s3 = new FakeSpan();
  assert.equal(spans.markStepStatus('Ambiguous', { span: s3 }), true);
  assert.deepEqual(s3.attributes, { 'tally.step.status': 'ambiguous' });
  assert.throws(() => spans.markStepStatus('broken', { span: s3 }), /want one of ok, retryable/);
  assert.throws(() => spans.markOutcome({ name: 'x' }, { span: s2 }), /give passed, score or label/);
});

test('the current span through @opentelemetry/api', async (t) => {
  let api;
  try {
    api = await import('@opentelemetry/api');
  } catch {
    t.skip('@opentelemetry/api is not installed: run `npm ci --prefix clients/js --no-audit --no-fund`');
    return;
  }
  assert.equal(spans.hasOpenTelemetry(), true);
  // A synchronous context manager, enough for context.with.
  let active = api.ROOT_CONTEXT;
  const manager = {
    active: () => active,
    with(ctx, fn, thisArg, ...args) {
      const prev = active;
      active = ctx;
      try { return fn.call(thisArg, ...args); } finally { active = prev; }
    },
    bind: (ctx, target) => target,
    enable() { return this; },
    disable() { return this; },
  };
  assert.equal(api.context.setGlobalContextManager(manager), true);
  t.after(() => api.context.disable());

  const span = new FakeSpan();
  assert.equal(spans.markToolEffect('read'), false); // no current span: nothing to mark
  api.context.with(api.trace.setSpan(api.context.active(), span), () => {
    assert.equal(spans.markToolEffect('non_idempotent'), true);
    assert.equal(spans.markTask('triage'), true);
  });
  assert.deepEqual(span.attributes, { 'tally.tool.effect': 'non_idempotent', 'task.name': 'triage' });
});

test('without an OpenTelemetry API the helpers do nothing', () => {
  const previous = spans.setOpenTelemetryApi(null);
  try {
    assert.equal(spans.hasOpenTelemetry(), false);
    assert.equal(spans.markToolEffect('read'), false);
    assert.equal(spans.markApproval('approved', { by: 'x' }), false);
    assert.equal(spans.markRun({ task: 't', outcome: true }), false);
  } finally {
    spans.setOpenTelemetryApi(previous);
  }
});
