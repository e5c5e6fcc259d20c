// Span helpers for what tally's safety review and outcome views read
// (docs/api.md "The safety review and its signals", "Outcomes";
// safety/effects.go, safety/approvals.go, query/outcomes.go): a tool
// span's effect class and idempotency key, an approval or denial, and a
// run's task, user and outcome.
//
// They mark the current OpenTelemetry span when @opentelemetry/api is
// installed (imported dynamically: it is not a dependency), or the span
// given as `{ span }`. Without either they do nothing and return false.

let otel = null;
try {
  otel = await import('@opentelemetry/api');
} catch {
  otel = null; // not installed: every helper is a no-op
}

/** The attribute and event names tally reads. */
export const ATTR = Object.freeze({
  toolEffect: 'tally.tool.effect',
  // tally's name for a tool call's idempotency key; the safety review's
  // duplicate check reads step ids (gen_ai.step.id), not this key.
  idempotencyKey: 'tally.tool.idempotency_key',
  stepId: 'gen_ai.step.id',
  stepStatus: 'tally.step.status',
  approvalDecision: 'tally.approval.decision',
  approvalBy: 'tally.approval.by',
  approvalTool: 'tally.approval.tool',
  approvalWaitMs: 'tally.approval.wait_ms',
  approvalEvent: 'tally.approval',
  runIncomplete: 'tally.run.incomplete',
  task: 'task.name',
  user: 'user.id',
  evaluationEvent: 'gen_ai.evaluation.result',
  evaluationName: 'gen_ai.evaluation.name',
  evaluationScore: 'gen_ai.evaluation.score.value',
  evaluationLabel: 'gen_ai.evaluation.score.label',
  evaluationExplanation: 'gen_ai.evaluation.explanation',
  evaluationPassed: 'gen_ai.evaluation.passed',
});

/** How a step ended, when its error does not say (tally.step.status). */
export const STEP_STATUSES = Object.freeze(['ok', 'retryable', 'ambiguous', 'denied', 'escalated', 'error']);

/** The effect classes, harmless to irreversible, then unknown (safety.Effects). */
export const EFFECTS = Object.freeze(['read', 'idempotent', 'non_idempotent', 'irreversible', 'unknown']);

/**
 * Uses api as the OpenTelemetry API (or null for none) instead of the
 * dynamically imported @opentelemetry/api; returns the previous one. For
 * tests and bundlers.
 */
export function setOpenTelemetryApi(api) {
  const previous = otel;
  otel = api ?? null;
  return previous;
}

/** Whether @opentelemetry/api (or an API given to setOpenTelemetryApi) is available. */
export function hasOpenTelemetry() {
  return otel !== null && otel !== undefined;
}

function target(opts) {
  if (opts && opts.span) return opts.span;
  const span = otel?.trace?.getActiveSpan?.();
  if (!span) return null;
  if (typeof span.isRecording === 'function' && !span.isRecording()) return null;
  return span;
}

function setAttrs(span, attrs) {
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null && v !== '') span.setAttribute(k, v);
}

/**
 * Declares a tool span's effect class: read, idempotent, non_idempotent,
 * irreversible or unknown (case and surrounding space aside). It wins over
 * tally's --tool-effects patterns.
 * @returns {boolean} whether a span was marked
 */
export function markToolEffect(effect, opts) {
  const e = String(effect).trim().toLowerCase();
  if (!EFFECTS.includes(e)) throw new TypeError(`tool effect ${JSON.stringify(effect)}: want one of ${EFFECTS.join(', ')}`);
  const span = target(opts);
  if (!span) return false;
  span.setAttribute(ATTR.toolEffect, e);
  return true;
}

/**
 * Records a tool call's idempotency key (tally.tool.idempotency_key), and,
 * with { stepId: true }, also as its step id (gen_ai.step.id), which the
 * safety review's duplicate_side_effect check compares.
 * @returns {boolean}
 */
export function markIdempotencyKey(key, opts = {}) {
  if (typeof key !== 'string' || key === '') throw new TypeError('idempotency key: want a non-empty string');
  const span = target(opts);
  if (!span) return false;
  span.setAttribute(ATTR.idempotencyKey, key);
  if (opts.stepId) span.setAttribute(ATTR.stepId, key);
  return true;
}

/**
 * Says how a tool step ended when its error does not (tally.step.status):
 * ok, retryable, ambiguous, denied, escalated or error.
 * @returns {boolean}
 */
export function markStepStatus(status, opts) {
  const s = String(status).trim().toLowerCase();
  if (!STEP_STATUSES.includes(s)) throw new TypeError(`step status ${JSON.stringify(status)}: want one of ${STEP_STATUSES.join(', ')}`);
  const span = target(opts);
  if (!span) return false;
  span.setAttribute(ATTR.stepStatus, s);
  return true;
}

const DECISIONS = new Map([
  ...['approved', 'approve', 'yes', 'granted', 'allow', 'allowed'].map((d) => [d, 'approved']),
  ...['rejected', 'reject', 'denied', 'deny', 'no'].map((d) => [d, 'rejected']),
  ...['timeout', 'timed_out', 'expired'].map((d) => [d, 'timeout']),
  ...['pending', 'waiting'].map((d) => [d, 'pending']),
]);

/** Reads an approval decision as tally does (safety.ParseDecision); throws for anything else. */
export function parseDecision(decision) {
  const d = DECISIONS.get(String(decision).trim().toLowerCase());
  if (!d) throw new TypeError(`approval decision ${JSON.stringify(decision)}: want approved, rejected, timeout or pending`);
  return d;
}

/**
 * Records a human approval decision: by default an event named
 * tally.approval on the current span (its time is the decision; waitMs is
 * how long it waited), or with { asSpan: true } as attributes of the span
 * (a span of its own, started when approval was asked, ended when decided).
 * `tool` names the tool it approves (any irreversible tool when absent).
 * @param {'approved'|'rejected'|'timeout'|'pending'|string} decision
 * @param {{by?: string, tool?: string, waitMs?: number, asSpan?: boolean, span?: any}} [opts]
 * @returns {boolean}
 */
export function markApproval(decision, opts = {}) {
  const d = parseDecision(decision);
  const span = target(opts);
  if (!span) return false;
  const attrs = { [ATTR.approvalDecision]: d, [ATTR.approvalBy]: opts.by, [ATTR.approvalTool]: opts.tool };
  if (opts.asSpan) {
    setAttrs(span, attrs);
  } else {
    if (opts.waitMs !== undefined) attrs[ATTR.approvalWaitMs] = opts.waitMs;
    const clean = Object.fromEntries(Object.entries(attrs).filter(([, v]) => v !== undefined && v !== ''));
    span.addEvent(ATTR.approvalEvent, clean);
  }
  return true;
}

/** markApproval('rejected', opts): a human denied the action. */
export function markDenial(opts) {
  return markApproval('rejected', opts);
}

/** Sets the run's task (task.name) on the current span. */
export function markTask(task, opts) {
  const span = target(opts);
  if (!span) return false;
  span.setAttribute(ATTR.task, String(task));
  return true;
}

/** Sets the run's user (user.id) on the current span. */
export function markUser(user, opts) {
  const span = target(opts);
  if (!span) return false;
  span.setAttribute(ATTR.user, String(user));
  return true;
}

/**
 * Records an outcome of the run (or of the span) as the GenAI evaluation
 * result event tally reads: gen_ai.evaluation.result with name, score,
 * label, explanation and tally's gen_ai.evaluation.passed.
 * @param {{name?: string, passed?: boolean, score?: number, label?: string, explanation?: string}|boolean|string} outcome
 *   true/false: passed; a string: its label ("pass", "fail", …)
 */
export function markOutcome(outcome, opts) {
  let o = outcome;
  if (typeof o === 'boolean') o = { passed: o };
  else if (typeof o === 'string') o = { label: o };
  if (!o || typeof o !== 'object') throw new TypeError('outcome: want {name?, passed?, score?, label?, explanation?}, a boolean or a label');
  if (o.passed === undefined && o.score === undefined && (o.label === undefined || o.label === '')) {
    throw new TypeError('outcome: give passed, score or label');
  }
  const span = target(opts);
  if (!span) return false;
  const attrs = { [ATTR.evaluationName]: o.name || 'evaluation' }; // tally's name for an unnamed one
  if (o.score !== undefined) attrs[ATTR.evaluationScore] = o.score;
  if (o.label) attrs[ATTR.evaluationLabel] = o.label;
  if (o.explanation) attrs[ATTR.evaluationExplanation] = o.explanation;
  if (o.passed !== undefined) attrs[ATTR.evaluationPassed] = !!o.passed;
  span.addEvent(ATTR.evaluationEvent, attrs);
  return true;
}

/**
 * Marks a run's task, user and outcome in one call (each optional), and
 * a partial result (tally.run.incomplete: iteration_limit, token_limit, …).
 * @param {{task?: string, user?: string, outcome?: any, incomplete?: string, span?: any}} run
 * @returns {boolean}
 */
export function markRun(run = {}) {
  const span = target(run);
  if (!span) return false;
  const opts = { span };
  if (run.task !== undefined) markTask(run.task, opts);
  if (run.user !== undefined) markUser(run.user, opts);
  if (run.incomplete) span.setAttribute(ATTR.runIncomplete, String(run.incomplete));
  if (run.outcome !== undefined) markOutcome(run.outcome, opts);
  return true;
}
