// The replay player, with the Go player's semantics (replay/player.go,
// replay/fault.go): calls match by tool and canonical arguments, identical
// calls answer in recorded order, a recorded tool error is thrown as a
// RecordedToolError, strict mode explains an unrecorded call, report()
// lists what is left over, and faults answer in place of recordings.

import {
  argsHash, argumentsBytes, canonicalBytes, compactBytes, encodeJSON, isValidJSON,
  parseTree, quote, toBytes, utf8,
} from './canonical.js';
import { load as loadFixture, fromObject, VALIDATED } from './fixture.js';
import { FaultError, toFaultRules, validateFault } from './faults.js';
import { goQuote, goTrimSpace } from './gofmt.js';
import { Report } from './report.js';

/** A call the fixture does not hold, from a non-strict player. */
export class NotRecordedError extends Error {
  constructor(tool, args) {
    super(`replay: call not recorded: ${tool}(args ${args})`);
    this.name = 'NotRecordedError';
    this.code = 'ERR_REPLAY_NOT_RECORDED';
    this.tool = tool;
    this.arguments = args;
  }
}

/** A matched call whose result content was not captured. */
export class ResultNotCapturedError extends Error {
  constructor(seq, tool) {
    super(`replay: recorded result was not captured: call #${seq} ${tool}`);
    this.name = 'ResultNotCapturedError';
    this.code = 'ERR_REPLAY_RESULT_NOT_CAPTURED';
    this.seq = seq;
    this.tool = tool;
  }
}

/**
 * The error a recorded call ended with, thrown in place of a result: the
 * tool failed in production, and fails again in the replay.
 */
export class RecordedToolError extends Error {
  constructor({ seq, tool, type, message, result }) {
    super(`replay: recorded error from call #${seq} ${tool}: ${type}: ${message}`);
    this.name = 'RecordedToolError';
    this.seq = seq;
    this.tool = tool;
    /** error.type as recorded */
    this.type = type;
    this.errorType = type;
    /** the status message as recorded */
    this.errorMessage = message;
    /** JSON text of a result recorded beside the error, if any */
    this.result = result;
  }
}

/**
 * A call the fixture does not hold, from a strict player: its message names
 * the closest recorded call and each differing top-level argument key.
 */
export class UnexpectedCallError extends Error {
  constructor(fields) {
    super(unexpectedMessage(fields));
    this.name = 'UnexpectedCallError';
    this.code = 'ERR_REPLAY_UNEXPECTED_CALL';
    this.tool = fields.tool;
    this.arguments = fields.arguments;
    this.argsHash = fields.argsHash;
    this.closest = fields.closest;
    this.otherTool = fields.otherTool;
    this.diffs = fields.diffs;
    this.used = fields.used;
  }
}

function unexpectedMessage(e) {
  let b = `unexpected call ${e.tool}(args ${e.arguments}): `;
  if (!e.closest) return b + 'the fixture records no calls';
  if (e.otherTool) b += `no recorded call of tool ${goQuote(e.tool)}; `;
  b += `closest recorded call #${e.closest.seq} ${e.closest.tool} `;
  if (e.diffs.length === 0) {
    if (e.otherTool) return b + 'has the same arguments';
    return b + `has the same arguments but its ${e.used} recorded answer(s) were already used`;
  }
  b += 'differs ';
  e.diffs.forEach((d, i) => {
    if (i > 0) b += '; ';
    if (d.key === '') { // as Go: an empty key reads as the whole arguments
      b += `in arguments: recorded ${d.recorded}, got ${d.got}`;
    } else {
      if (i === 0) b += 'at ';
      b += `${goQuote(d.key)}: recorded ${d.recorded}, got ${d.got}`;
    }
  });
  return b;
}

const bytesEqual = (a, b) => {
  const la = a ? a.length : 0, lb = b ? b.length : 0;
  if (la !== lb) return false;
  for (let i = 0; i < la; i++) if (a[i] !== b[i]) return false;
  return true;
};

const byteCompare = (a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

/** Compact arguments as sent when JSON (key order kept), else the text. */
function displayArgs(raw) {
  return utf8(isValidJSON(raw) ? compactBytes(raw) : raw);
}

/** Keeps diff messages readable when values are large (Go's shorten). */
function shorten(s) {
  if (Buffer.byteLength(s, 'utf8') <= 120) return s;
  const r = Array.from(s);
  if (r.length <= 120) return s;
  return r.slice(0, 120).join('') + '…';
}

/** Splits canonical JSON object bytes into canonical value texts by key. */
function objectOf(b, isJSON) {
  if (!isJSON || !b || b.length === 0 || b[0] !== 0x7b) return null;
  const tree = parseTree(b);
  if (!tree || tree.kind !== 'object') return null;
  const out = new Map();
  for (const { key, node } of tree.members) out.set(key, b.subarray(node.start, node.end));
  return out;
}

function diffArgs(recorded, recordedOK, got, gotOK) {
  const rec = objectOf(recorded, recordedOK);
  const gt = objectOf(got, gotOK);
  if (!rec || !gt) {
    if (bytesEqual(recorded, got)) return [];
    const show = (b) => (!b || b.length === 0 ? '(none)' : utf8(b));
    return [{ key: '', recorded: shorten(show(recorded)), got: shorten(show(got)) }];
  }
  const keys = [...rec.keys()];
  for (const k of gt.keys()) if (!rec.has(k)) keys.push(k);
  keys.sort(byteCompare);
  const diffs = [];
  for (const k of keys) {
    const r = rec.get(k), g = gt.get(k);
    if (r && g && bytesEqual(r, g)) continue;
    diffs.push({ key: k, recorded: r ? shorten(utf8(r)) : '(absent)', got: g ? shorten(utf8(g)) : '(absent)' });
  }
  return diffs;
}

const has = (o, k) => o[k] !== undefined;

/**
 * Answers tool calls from one fixture.
 */
export class Player {
  /**
   * @param {object|string} fixture a fixture from load()/parse(), a fixture
   *   object, or a path to a fixture file
   * @param {{strict?: boolean, faults?: Array<string|object>}} [options]
   */
  constructor(fixture, options = {}) {
    if (typeof fixture === 'string' || fixture instanceof URL) fixture = loadFixture(fixture);
    else if (!fixture || typeof fixture !== 'object') throw new TypeError('Player needs a fixture (from load or parse) or a path');
    else if (!fixture[VALIDATED]) fixture = fromObject(fixture); // built by hand: check it, naming the field
    this.fixture = fixture;
    this.traceId = fixture.run?.trace_id ?? '';
    this.strict = !!options.strict;
    this.faultRules = toFaultRules(options.faults);
    const calls = [...fixture.calls].map((c, i) => [c, i]).sort((a, b) => a[0].seq - b[0].seq || a[1] - b[1]).map(([c]) => c);
    this._calls = [];
    this._byKey = new Map();
    this._anyArgs = new Map();
    for (const c of calls) {
      const rc = { call: c, args: null, argsOK: false, anyArgs: false, result: null, hasRes: false };
      if (has(c, 'arguments') || c.rawArguments !== undefined) {
        const text = c.rawArguments !== undefined ? toBytes(c.rawArguments) : toBytes(encodeJSON(c.arguments));
        const canon = canonicalBytes(text);
        if (canon) { rc.args = canon; rc.argsOK = true; } else rc.args = text;
      } else if (c.arguments_text) {
        rc.args = toBytes(c.arguments_text);
        const canon = canonicalBytes(rc.args);
        if (canon) { rc.args = canon; rc.argsOK = true; }
      }
      let hash = c.args_hash || '';
      if (hash === '' && rc.args !== null) hash = argsHash(rc.args);
      rc.anyArgs = hash === '';
      if (has(c, 'result') || c.rawResult !== undefined) {
        const text = c.rawResult !== undefined ? toBytes(c.rawResult) : toBytes(encodeJSON(c.result));
        rc.result = utf8(isValidJSON(text) ? compactBytes(text) : text);
        rc.hasRes = true;
      } else if (c.result_text) {
        rc.result = quote(c.result_text);
        rc.hasRes = true;
      }
      const i = this._calls.length;
      this._calls.push(rc);
      const [map, key] = rc.anyArgs ? [this._anyArgs, c.tool] : [this._byKey, c.tool + '\u0000' + hash];
      if (!map.has(key)) map.set(key, []);
      map.get(key).push(i);
    }
    this._used = this._calls.map(() => false);
    this._unexpected = [];
    this._injected = [];
    this._faults = this._calls.map((rc) => {
      let f = rc.call.fault;
      for (const r of this.faultRules) {
        if ((r.seq !== 0 && r.seq === rc.call.seq) || (r.tool !== '' && r.tool === rc.call.tool)) f = r.fault;
      }
      return f ? { ...f } : null;
    });
    this._faultLeft = this._faults.map((f) => (f ? Math.max(f.attempts ?? 0, 1) : 0));
  }

  /** Loads the fixture at path and returns a player for it. */
  static load(path, options) {
    return new Player(loadFixture(path), options);
  }

  /**
   * Answers a tool call with what the fixture recorded for that tool and
   * arguments, as JSON text (compact, exactly the Go player's bytes). args
   * may be the arguments' JSON text (a string or bytes; non-JSON text is
   * matched as is) or any other value, encoded as JSON.
   *
   * Throws RecordedToolError (the tool failed in production), FaultError (an
   * injected fault), ResultNotCapturedError, and for a call the fixture does
   * not hold NotRecordedError, or UnexpectedCallError when strict.
   * @param {string} tool
   * @param {unknown} [args]
   * @returns {string}
   */
  callRaw(tool, args) {
    const raw = argumentsBytes(args);
    const hash = argsHash(raw);
    let i = this._take(this._byKey.get(tool + '\u0000' + hash));
    if (i < 0) i = this._take(this._anyArgs.get(tool));
    if (i < 0) {
      const uce = this._explain(tool, raw, hash);
      this._unexpected.push({ trace_id: this.traceId, tool, arguments: uce.arguments, args_hash: hash, message: uce.message });
      if (this.strict) throw uce;
      throw new NotRecordedError(tool, uce.arguments);
    }
    const rc = this._calls[i];
    const f = this._faults[i];
    if (f && this._faultLeft[i] > 0) {
      this._used[i] = false; // the recording answers once the fault's attempts are spent
      try {
        validateFault(f);
      } catch (err) {
        throw new Error(`replay: call #${rc.call.seq} ${rc.call.tool}: ${err.message}`);
      }
      this._faultLeft[i]--;
      this._injected.push({ trace_id: this.traceId, seq: rc.call.seq, tool: rc.call.tool, kind: f.kind });
      return answerFault(rc, f);
    }
    if (rc.call.error) {
      throw new RecordedToolError({
        seq: rc.call.seq, tool: rc.call.tool, type: rc.call.error.type, message: rc.call.error.message,
        result: rc.hasRes ? rc.result : undefined,
      });
    }
    if (!rc.hasRes) throw new ResultNotCapturedError(rc.call.seq, rc.call.tool);
    return rc.result;
  }

  /**
   * Like callRaw, with the answer parsed: the recorded result as a
   * JavaScript value (a result recorded as text is a string).
   * @param {string} tool
   * @param {unknown} [args]
   */
  call(tool, args) {
    return JSON.parse(this.callRaw(tool, args));
  }

  /**
   * A tool function for name: async (args) => the recorded result.
   * @param {string} name
   */
  tool(name) {
    return async (args) => this.call(name, args);
  }

  _take(queue) {
    if (!queue) return -1;
    for (const i of queue) {
      if (!this._used[i]) {
        this._used[i] = true;
        return i;
      }
    }
    return -1;
  }

  _explain(tool, raw, hash) {
    const canon = canonicalBytes(raw);
    const got = canon ?? raw;
    const gotOK = canon !== null;
    const fields = { tool, arguments: displayArgs(raw), argsHash: hash, closest: null, otherTool: false, diffs: [], used: 0 };
    const sameTool = this._calls.some((rc) => rc.call.tool === tool);
    let best = -1, bestScore = 0, bestDiffs = [];
    this._calls.forEach((rc, i) => {
      if (sameTool && rc.call.tool !== tool) return;
      const diffs = diffArgs(rc.args, rc.argsOK, got, gotOK);
      const score = diffs.length * 2 + (this._used[i] ? 1 : 0);
      if (best < 0 || score < bestScore) { best = i; bestScore = score; bestDiffs = diffs; }
    });
    if (best >= 0) {
      const closest = this._calls[best];
      fields.closest = closest.call;
      fields.otherTool = !sameTool;
      fields.diffs = bestDiffs;
      if (bestDiffs.length === 0) {
        for (const rc of this._calls) {
          if (rc.call.tool === closest.call.tool && bytesEqual(rc.args, closest.args)) fields.used++;
        }
      }
    }
    return new UnexpectedCallError(fields);
  }

  /**
   * What the replay left over: recorded calls never made (unmet), calls
   * nothing answered (unexpected), and the faults injected.
   * @returns {Report}
   */
  report() {
    const unmet = [];
    this._calls.forEach((rc, i) => {
      if (this._used[i]) return;
      unmet.push({
        trace_id: this.traceId, seq: rc.call.seq, tool: rc.call.tool, args_hash: rc.call.args_hash ?? '',
        arguments: rc.args ? utf8(rc.args) : '',
      });
    });
    return new Report({ unmet, unexpected: [...this._unexpected], faults: [...this._injected] });
  }
}

/** A recorded result as text: a JSON string's content, other JSON as written. */
function resultText(rc) {
  if (!rc.hasRes) return '';
  if (rc.result.startsWith('"')) {
    try { return JSON.parse(rc.result); } catch { /* not a string */ }
  }
  return rc.result;
}

function answerFault(rc, f) {
  const base = { seq: rc.call.seq, tool: rc.call.tool, kind: f.kind };
  switch (f.kind) {
    case 'timeout': throw new FaultError({ ...base, status: 504 });
    case 'rate_limit': throw new FaultError({ ...base, status: 429, retryAfterSeconds: f.retry_after_seconds });
    case 'server_error': throw new FaultError({ ...base, status: f.status });
    case 'unknown_tool': throw new FaultError({ ...base, status: 404 });
  }
  const text = toBytes(resultText(rc));
  if (f.kind === 'truncated') {
    let keep = Math.floor(text.length / 2);
    if (f.bytes > 0) keep = Math.min(f.bytes, text.length);
    return quote(text.subarray(0, keep));
  }
  return quote(goTrimSpace(utf8(text) + '\n\n' + f.text));
}

/**
 * Loads a fixture and returns a player for it.
 * @param {string|URL|object} fixture
 * @param {{strict?: boolean, faults?: Array<string|object>}} [options]
 */
export function replay(fixture, options) {
  return new Player(fixture, options);
}
