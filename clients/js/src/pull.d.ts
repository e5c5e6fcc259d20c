import type { Fixture } from './fixture.js';

export interface PullOptions {
  /** tally's URL (default TALLY_SERVER, else http://127.0.0.1:4318). */
  server?: string;
  /** An API key with the read scope (default TALLY_KEY). */
  key?: string;
  /** Run ids: 32 hex characters, or a prefix of 8 or more. */
  runs?: string[];
  run?: string;
  /** Also the runs of this conversation. */
  conversation?: string;
  /** Also the runs of this task. */
  task?: string;
  agent?: string;
  /** RFC 3339 or a duration before now (24h, 7d). */
  since?: string;
  until?: string;
  /** At most this many runs from the filters (the newest; default 1000). */
  limit?: number;
  /** Include the runs' model calls. */
  inferences?: boolean;
  /** The directory to write <trace_id>.fixture.json files to (default "testdata"). */
  out?: string;
  /** A fetch implementation (default globalThis.fetch). */
  fetch?: typeof fetch;
  signal?: AbortSignal;
}

export interface PulledFixture {
  traceId: string;
  path: string;
  fixture: Fixture;
}

export declare class PullError extends Error {
  /** The HTTP status, when the API answered with an error. */
  readonly status?: number;
}
export declare function traceIdOrPrefix(v: string): string;
/** Fetches fixtures from a running tally into out/<trace_id>.fixture.json (the bytes as served). */
export declare function pull(opts?: PullOptions): Promise<PulledFixture[]>;
