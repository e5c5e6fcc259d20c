export declare const FORMAT_V1: 'tally.replay/v1';
export type FaultKind = 'timeout' | 'rate_limit' | 'server_error' | 'truncated' | 'unknown_tool' | 'injection';
export declare const FAULT_KINDS: FaultKind[];

export type JSONValue = null | boolean | number | string | JSONValue[] | { [key: string]: JSONValue };

export interface RunInfo {
  trace_id: string;
  conversation_id: string;
  agent: string;
  task: string;
  service: string;
  started_at: string;
  source_version: string;
}

export interface CallError {
  type: string;
  message: string;
}

export interface Fault {
  kind: FaultKind;
  /** How many matching calls get the fault before the recording answers (default 1). */
  attempts?: number;
  /** rate_limit's Retry-After (default 1). */
  retry_after_seconds?: number;
  /** server_error's status, 500–599 (default 503). */
  status?: number;
  /** How many bytes of the result truncated keeps (default half). */
  bytes?: number;
  /** What injection appends (default DEFAULT_INJECTION). */
  text?: string;
}

export interface Call {
  seq: number;
  span_id: string;
  parent_span_id?: string;
  started_at: string;
  tool: string;
  tool_call_id?: string;
  arguments?: JSONValue;
  arguments_text?: string;
  args_hash: string;
  result?: JSONValue;
  result_text?: string;
  error?: CallError;
  status: 'ok' | 'error' | 'unset';
  attempt: number;
  duration_ms: number;
  missing?: Array<'arguments' | 'result'>;
  truncated?: Array<'arguments' | 'result'>;
  fault?: Fault;
  /** The arguments' JSON text as in the file (not enumerable). */
  readonly rawArguments?: string;
  /** The result's JSON text as in the file (not enumerable). */
  readonly rawResult?: string;
}

export interface Usage {
  input_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
}

export interface Inference {
  seq: number;
  span_id: string;
  parent_span_id?: string;
  started_at: string;
  operation: string;
  provider: string;
  model: string;
  finish_reasons?: string[];
  usage: Usage;
  output?: JSONValue;
  output_text?: string;
  error?: CallError;
  status: 'ok' | 'error' | 'unset';
  duration_ms: number;
  missing?: Array<'output'>;
  truncated?: Array<'output'>;
  /** The output's JSON text as in the file (not enumerable). */
  readonly rawOutput?: string;
}

export interface Fixture {
  format: 'tally.replay/v1';
  run: RunInfo;
  calls: Call[];
  inferences?: Inference[];
  missing: { arguments: number[]; results: number[] };
}

/** A fixture that does not parse or breaks the format's rules. */
export declare class FixtureError extends Error {
  /** The field the problem is about, e.g. "calls[2].tool" ("" for the document). */
  readonly field: string;
  /** The problem, without the field. */
  readonly problem: string;
  /** The file, for load(). */
  path?: string;
}

/** Parses and validates fixture text; arguments and results keep their literal text. */
export declare function parse(text: string | Uint8Array): Fixture;
/** Validates a fixture given as an object and returns a checked copy. */
export declare function fromObject(value: object): Fixture;
/** Reads, parses and validates the fixture file at path. */
export declare function load(path: string | URL): Fixture;
