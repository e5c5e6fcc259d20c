import type { Fault, FaultKind } from './fixture.js';
export { FAULT_KINDS } from './fixture.js';

export declare const DEFAULT_INJECTION: string;

export interface FaultRule {
  /** The recorded call's seq (0: select by tool). */
  seq: number;
  /** Every recorded call of this tool ("" : select by seq). */
  tool: string;
  fault: Required<Fault>;
}

/** A rule written as `tally replay serve --fault` takes it ("seq=2:timeout", "tool=search:rate_limit,retry_after_seconds=5"), or an object. */
export type FaultRuleInput = string | { seq?: number; tool?: string; fault: Fault };

export declare class FaultRuleError extends Error {}
/** Parses seq=N:kind[,key=value…] or tool=NAME:kind[,key=value…]; errors as Go's. */
export declare function parseFaultRule(spec: string): FaultRule;
export declare function toFaultRules(rules?: FaultRuleInput[]): FaultRule[];
/** Checks a fault and fills its defaults in place. */
export declare function validateFault(f: Fault): Required<Fault>;

/** An injected error fault: timeout, rate_limit, server_error or unknown_tool. */
export declare class FaultError extends Error {
  readonly seq: number;
  readonly tool: string;
  readonly kind: FaultKind;
  /** The HTTP status it stands for: 504, 429, 5xx, 404. */
  readonly status: number;
  /** rate_limit's Retry-After. */
  readonly retryAfterSeconds: number;
  /** True for a timeout (code ETIMEDOUT). */
  readonly timeout: boolean;
  readonly code?: 'ETIMEDOUT';
}
