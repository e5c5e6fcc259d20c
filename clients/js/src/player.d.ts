import type { Call, Fixture, JSONValue } from './fixture.js';
import type { FaultRule, FaultRuleInput } from './faults.js';
import type { Report } from './report.js';

export interface PlayerOptions {
  /** Fail an unrecorded call with UnexpectedCallError (the closest recorded call and the differing argument). */
  strict?: boolean;
  /** Fault rules, e.g. "seq=1:timeout"; a rule wins over the fixture's own faults, a later rule over an earlier. */
  faults?: FaultRuleInput[];
}

export interface ArgDiff {
  /** The top-level key; "" when the arguments are compared whole. */
  key: string;
  /** Canonical JSON, or "(absent)". */
  recorded: string;
  got: string;
}

export declare class NotRecordedError extends Error {
  readonly code: 'ERR_REPLAY_NOT_RECORDED';
  readonly tool: string;
  readonly arguments: string;
}
export declare class ResultNotCapturedError extends Error {
  readonly code: 'ERR_REPLAY_RESULT_NOT_CAPTURED';
  readonly seq: number;
  readonly tool: string;
}
/** The error a recorded call ended with in production. */
export declare class RecordedToolError extends Error {
  readonly seq: number;
  readonly tool: string;
  /** error.type as recorded. */
  readonly type: string;
  readonly errorType: string;
  /** The recorded status message. */
  readonly errorMessage: string;
  /** JSON text of a result recorded beside the error, if any. */
  readonly result?: string;
}
export declare class UnexpectedCallError extends Error {
  readonly code: 'ERR_REPLAY_UNEXPECTED_CALL';
  readonly tool: string;
  readonly arguments: string;
  readonly argsHash: string;
  /** The closest recorded call; null when the fixture records none. */
  readonly closest: Call | null;
  /** True when no recorded call has this tool. */
  readonly otherTool: boolean;
  readonly diffs: ArgDiff[];
  /** How many times the closest call was recorded, when its arguments are the same. */
  readonly used: number;
}

export declare class Player {
  constructor(fixture: Fixture | object | string | URL, options?: PlayerOptions);
  static load(path: string | URL, options?: PlayerOptions): Player;
  readonly fixture: Fixture;
  readonly traceId: string;
  readonly strict: boolean;
  readonly faultRules: FaultRule[];
  /**
   * The recorded answer as JSON text, byte for byte the Go player's. args is the
   * arguments' JSON text (string or bytes) or any value (encoded as JSON).
   * @throws RecordedToolError | FaultError | ResultNotCapturedError | NotRecordedError | UnexpectedCallError
   */
  callRaw(tool: string, args?: unknown): string;
  /** The recorded answer parsed: a JSON value, or the text of a result recorded as text. */
  call<T = any>(tool: string, args?: unknown): T;
  /** An async tool function answered by the player. */
  tool<T = any>(name: string): (args?: unknown) => Promise<T>;
  /** Recorded calls never made, calls nothing answered, faults injected. */
  report(): Report;
}

/** new Player(fixture, options). */
export declare function replay(fixture: Fixture | object | string | URL, options?: PlayerOptions): Player;
