// @tallyhq/replay: replay tally (tally.replay/v1) fixtures in JavaScript and
// TypeScript tests. See docs/replay.md ("Replay in TypeScript").
export { FORMAT_V1, FAULT_KINDS, FixtureError, load, parse, fromObject } from './fixture.js';
export { argsHash, canonicalize, isValidJSON, encodeJSON, CanonicalError } from './canonical.js';
export {
  Player, replay, NotRecordedError, ResultNotCapturedError, RecordedToolError, UnexpectedCallError,
} from './player.js';
export { DEFAULT_INJECTION, FaultError, FaultRuleError, parseFaultRule } from './faults.js';
export { Report, ReplayReportError } from './report.js';
export { pull, PullError } from './pull.js';
export { withReplay, replayHooks } from './testing.js';
export {
  markToolEffect, markIdempotencyKey, markStepStatus, markApproval, markDenial, markTask, markUser, markOutcome, markRun,
} from './spans.js';
