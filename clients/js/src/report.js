// A replay's report: recorded calls never made (unmet), calls the fixture
// did not hold (unexpected), and the faults injected (Go's replay.Report).

/** Thrown by Report.assertClean(); its message lists each problem. */
export class ReplayReportError extends Error {
  constructor(message, report) {
    super(message);
    this.name = 'ReplayReportError';
    this.report = report;
  }
}

export class Report {
  /**
   * @param {{unmet?: object[], unexpected?: object[], faults?: object[]}} parts
   */
  constructor({ unmet = [], unexpected = [], faults = [] } = {}) {
    /** recorded calls never made: {trace_id, seq, tool, args_hash, arguments} */
    this.unmet = unmet;
    /** calls nothing answered: {trace_id, tool, arguments, args_hash, message} */
    this.unexpected = unexpected;
    /** faults injected, in order: {trace_id, seq, tool, kind} */
    this.faults = faults;
  }

  /** True when every recorded call was made and nothing unexpected was called. */
  get ok() {
    return this.unmet.length === 0 && this.unexpected.length === 0;
  }

  /**
   * null when the replay is clean; otherwise an Error listing each problem
   * on its own line (the Go Report.Err text).
   * @returns {ReplayReportError|null}
   */
  err() {
    if (this.ok) return null;
    let b = `replay: ${this.unmet.length} recorded call(s) never made, ${this.unexpected.length} unexpected call(s)`;
    for (const u of this.unmet) {
      b += `\n  never made: #${u.seq} ${u.tool}(args ${u.arguments})`;
      if (u.trace_id) b += ` in trace ${u.trace_id}`;
    }
    for (const u of this.unexpected) b += `\n  ${u.message}`;
    return new ReplayReportError(b, this);
  }

  /** Throws the err() error unless the replay is clean. */
  assertClean() {
    const e = this.err();
    if (e) throw e;
  }

  /** The report as GET /report answers it. */
  toJSON() {
    return { unmet: this.unmet, unexpected: this.unexpected, faults: this.faults };
  }

  /**
   * Merges reports in order (several players in one test).
   * @param {...Report} reports
   */
  static merge(...reports) {
    return new Report({
      unmet: reports.flatMap((r) => r.unmet),
      unexpected: reports.flatMap((r) => r.unexpected),
      faults: reports.flatMap((r) => r.faults),
    });
  }
}
