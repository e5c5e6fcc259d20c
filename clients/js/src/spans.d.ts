/** A span as the OpenTelemetry API has it (only what these helpers use). */
export interface SpanLike {
  setAttribute(key: string, value: string | number | boolean): unknown;
  addEvent(name: string, attributes?: Record<string, string | number | boolean>): unknown;
  isRecording?(): boolean;
}
export interface SpanOption {
  /** The span to mark (default: the current span, when @opentelemetry/api is installed). */
  span?: SpanLike;
}
export type Effect = 'read' | 'idempotent' | 'non_idempotent' | 'irreversible' | 'unknown';
export type StepStatus = 'ok' | 'retryable' | 'ambiguous' | 'denied' | 'escalated' | 'error';
export declare const STEP_STATUSES: readonly StepStatus[];
/** tally.step.status: how a step ended when its error does not say. */
export declare function markStepStatus(status: StepStatus | string, opts?: SpanOption): boolean;
export type Decision = 'approved' | 'rejected' | 'timeout' | 'pending';

export declare const ATTR: Readonly<Record<string, string>>;
export declare const EFFECTS: readonly Effect[];
/** Replaces the OpenTelemetry API used (null: none); returns the previous one. */
export declare function setOpenTelemetryApi(api: unknown): unknown;
export declare function hasOpenTelemetry(): boolean;
/** tally.tool.effect. Returns whether a span was marked. */
export declare function markToolEffect(effect: Effect | string, opts?: SpanOption): boolean;
/** tally.tool.idempotency_key (and gen_ai.step.id with stepId: true). */
export declare function markIdempotencyKey(key: string, opts?: SpanOption & { stepId?: boolean }): boolean;
export declare function parseDecision(decision: string): Decision;
/** A tally.approval event (or, asSpan, tally.approval.* attributes on the span). */
export declare function markApproval(
  decision: Decision | string,
  opts?: SpanOption & { by?: string; tool?: string; waitMs?: number; asSpan?: boolean },
): boolean;
export declare function markDenial(opts?: SpanOption & { by?: string; tool?: string; waitMs?: number; asSpan?: boolean }): boolean;
/** task.name */
export declare function markTask(task: string, opts?: SpanOption): boolean;
/** user.id */
export declare function markUser(user: string, opts?: SpanOption): boolean;
export interface Outcome {
  name?: string;
  passed?: boolean;
  score?: number;
  label?: string;
  explanation?: string;
}
/** A gen_ai.evaluation.result event; true/false is passed, a string its label. */
export declare function markOutcome(outcome: Outcome | boolean | string, opts?: SpanOption): boolean;
/** task.name, user.id, tally.run.incomplete and an outcome, each optional. */
export declare function markRun(run: SpanOption & { task?: string; user?: string; outcome?: Outcome | boolean | string; incomplete?: string }): boolean;
