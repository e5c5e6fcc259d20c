export interface UnmetCall {
  trace_id: string;
  seq: number;
  tool: string;
  args_hash: string;
  /** Canonical JSON, or the text as recorded; "" when not captured. */
  arguments: string;
}
export interface UnexpectedCall {
  trace_id: string;
  tool: string;
  /** As sent, compacted when JSON. */
  arguments: string;
  args_hash: string;
  /** The UnexpectedCallError text. */
  message: string;
}
export interface InjectedFault {
  trace_id: string;
  seq: number;
  tool: string;
  kind: string;
}

export declare class ReplayReportError extends Error {
  readonly report: Report;
}

export declare class Report {
  constructor(parts?: { unmet?: UnmetCall[]; unexpected?: UnexpectedCall[]; faults?: InjectedFault[] });
  unmet: UnmetCall[];
  unexpected: UnexpectedCall[];
  faults: InjectedFault[];
  /** No unmet and no unexpected calls. */
  readonly ok: boolean;
  /** null when clean, else an error listing each problem on its own line. */
  err(): ReplayReportError | null;
  /** Throws err() unless clean. */
  assertClean(): void;
  toJSON(): { unmet: UnmetCall[]; unexpected: UnexpectedCall[]; faults: InjectedFault[] };
  static merge(...reports: Report[]): Report;
}
