export { FORMAT_V1, FAULT_KINDS, FixtureError, load, parse, fromObject } from './fixture.js';
export type { Call, CallError, Fault, FaultKind, Fixture, Inference, JSONValue, RunInfo, Usage } from './fixture.js';
export { argsHash, canonicalize, isValidJSON, encodeJSON, CanonicalError } from './canonical.js';
export {
  Player, replay, NotRecordedError, ResultNotCapturedError, RecordedToolError, UnexpectedCallError,
} from './player.js';
export type { ArgDiff, PlayerOptions } from './player.js';
export { DEFAULT_INJECTION, FaultError, FaultRuleError, parseFaultRule } from './faults.js';
export type { FaultRule, FaultRuleInput } from './faults.js';
export { Report, ReplayReportError } from './report.js';
export type { InjectedFault, UnexpectedCall, UnmetCall } from './report.js';
export { pull, PullError } from './pull.js';
export type { PullOptions, PulledFixture } from './pull.js';
export { withReplay, replayHooks } from './testing.js';
export type { ReplayTestOptions, TestLike } from './testing.js';
export {
  markToolEffect, markIdempotencyKey, markStepStatus, markApproval, markDenial, markTask, markUser, markOutcome, markRun,
} from './spans.js';
export type { Decision, Effect, Outcome, SpanLike, SpanOption } from './spans.js';
