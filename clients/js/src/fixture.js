// Loading and validating tally.replay/v1 fixtures (replay/FORMAT.md,
// replay/fixture.schema.json). Errors name the field that is wrong.

import { readFileSync } from 'node:fs';
import { parseTree, toBytes, utf8 } from './canonical.js';

export const FORMAT_V1 = 'tally.replay/v1';
export const FAULT_KINDS = ['timeout', 'rate_limit', 'server_error', 'truncated', 'unknown_tool', 'injection'];

/** Marks a fixture this module validated (not enumerable). */
export const VALIDATED = Symbol.for('tally.replay.validated');

function validated(f) {
  Object.defineProperty(f, VALIDATED, { value: true, enumerable: false });
  return f;
}

/** A fixture that does not parse or breaks the format's rules. */
export class FixtureError extends Error {
  /**
   * @param {string} message the problem
   * @param {string} [field] the field it is about, e.g. "calls[2].tool"
   */
  constructor(message, field = '') {
    super(field ? `replay: parse fixture: ${field}: ${message}` : `replay: parse fixture: ${message}`);
    this.name = 'FixtureError';
    this.field = field;
    this.problem = message;
    /** @type {string|undefined} */
    this.path = undefined;
  }
}

const TIMESTAMP = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$/;
const TIMESTAMP_OR_EMPTY = /^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z)?$/;
const ARGS_HASH = /^([0-9a-f]{64})?$/;
const STATUSES = ['ok', 'error', 'unset'];

// The schema, as field specs: type string, integer (min, max), number
// (min), string (pattern, minLength), enum, array (items), object (spec),
// any (any JSON, kept with its literal text).
const str = (extra = {}) => ({ type: 'string', ...extra });
const int = (min, max) => ({ type: 'integer', min, max });
const num = (min) => ({ type: 'number', min });
const arr = (items, unique = false) => ({ type: 'array', items, unique });
const en = (values) => ({ type: 'enum', values });
const obj = (props, required) => ({ type: 'object', props, required });
const any = { type: 'any' };

const errorSpec = obj({ type: str(), message: str() }, ['message', 'type']);
const faultSpec = obj({
  kind: en(FAULT_KINDS),
  attempts: int(0),
  retry_after_seconds: int(0),
  status: int(500, 599),
  bytes: int(0),
  text: str(),
}, ['kind']);
const parts = (values) => arr(en(values), true);
const callSpec = obj({
  seq: int(1),
  span_id: str(),
  parent_span_id: str(),
  started_at: str({ pattern: TIMESTAMP, patternText: 'RFC 3339 UTC timestamp' }),
  tool: str({ minLength: 1 }),
  tool_call_id: str(),
  arguments: any,
  arguments_text: str(),
  args_hash: str({ pattern: ARGS_HASH, patternText: '64 lowercase hex characters or ""' }),
  result: any,
  result_text: str(),
  error: errorSpec,
  status: en(STATUSES),
  attempt: int(0),
  duration_ms: num(0),
  missing: parts(['arguments', 'result']),
  truncated: parts(['arguments', 'result']),
  fault: faultSpec,
}, ['args_hash', 'attempt', 'duration_ms', 'seq', 'span_id', 'started_at', 'status', 'tool']);
const usageSpec = obj({
  input_tokens: int(0), cache_read_tokens: int(0), cache_write_tokens: int(0),
  output_tokens: int(0), reasoning_tokens: int(0),
}, ['cache_read_tokens', 'cache_write_tokens', 'input_tokens', 'output_tokens', 'reasoning_tokens']);
const inferenceSpec = obj({
  seq: int(1),
  span_id: str(),
  parent_span_id: str(),
  started_at: str({ pattern: TIMESTAMP, patternText: 'RFC 3339 UTC timestamp' }),
  operation: str(),
  provider: str(),
  model: str(),
  finish_reasons: arr(str()),
  usage: usageSpec,
  output: any,
  output_text: str(),
  error: errorSpec,
  status: en(STATUSES),
  duration_ms: num(0),
  missing: parts(['output']),
  truncated: parts(['output']),
}, ['duration_ms', 'model', 'operation', 'provider', 'seq', 'span_id', 'started_at', 'status', 'usage']);
const runSpec = obj({
  trace_id: str(), conversation_id: str(), agent: str(), task: str(), service: str(),
  started_at: str({ pattern: TIMESTAMP_OR_EMPTY, patternText: 'RFC 3339 UTC timestamp or ""' }),
  source_version: str(),
}, ['agent', 'conversation_id', 'service', 'source_version', 'started_at', 'task', 'trace_id']);
const missingSpec = obj({ arguments: arr(int(1)), results: arr(int(1)) }, ['arguments', 'results']);
const fixtureSpec = obj({
  format: en([FORMAT_V1]),
  run: runSpec,
  calls: arr(callSpec),
  inferences: arr(inferenceSpec),
  missing: missingSpec,
}, ['calls', 'format', 'missing', 'run']);

// The raw-text companions of the "any JSON" fields.
const RAW = { arguments: 'rawArguments', result: 'rawResult', output: 'rawOutput' };

const jsonType = (v) => {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
};

const child = (path, key) => (typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key);

/**
 * Validates a value already in JavaScript form against spec; returns the
 * value to keep. Raw texts of "any" fields come from rawOf(path) when the
 * fixture was parsed from text.
 */
function check(spec, v, path, rawOf) {
  switch (spec.type) {
    case 'any':
      return v;
    case 'string':
      if (typeof v !== 'string') throw new FixtureError(`must be a string, not ${jsonType(v)}`, path);
      if (spec.minLength && v.length < spec.minLength) throw new FixtureError('must not be empty', path);
      if (spec.pattern && !spec.pattern.test(v)) throw new FixtureError(`${JSON.stringify(v)} is not a ${spec.patternText}`, path);
      return v;
    case 'integer':
    case 'number': {
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new FixtureError(`must be ${spec.type === 'integer' ? 'an integer' : 'a number'}, not ${jsonType(v)}`, path);
      if (spec.type === 'integer' && !Number.isInteger(v)) throw new FixtureError(`must be an integer, not ${v}`, path);
      if (spec.min !== undefined && v < spec.min) throw new FixtureError(`must be ≥ ${spec.min}, not ${v}`, path);
      if (spec.max !== undefined && v > spec.max) throw new FixtureError(`must be ≤ ${spec.max}, not ${v}`, path);
      return v;
    }
    case 'enum':
      if (!spec.values.includes(v)) {
        throw new FixtureError(`${JSON.stringify(v)} is not one of ${spec.values.map((x) => JSON.stringify(x)).join(', ')}`, path);
      }
      return v;
    case 'array': {
      if (!Array.isArray(v)) throw new FixtureError(`must be an array, not ${jsonType(v)}`, path);
      const out = v.map((x, i) => check(spec.items, x, child(path, i), rawOf));
      if (spec.unique && new Set(out).size !== out.length) throw new FixtureError('must not repeat an item', path);
      return out;
    }
    case 'object': {
      if (jsonType(v) !== 'object') throw new FixtureError(`must be an object, not ${jsonType(v)}`, path);
      for (const key of Object.keys(v)) {
        if (!(key in spec.props)) throw new FixtureError(`unknown field (not in ${FORMAT_V1}; check its spelling)`, child(path, key));
      }
      for (const key of spec.required) {
        if (!(key in v) || v[key] === undefined) throw new FixtureError(`required field "${key}" is missing`, path || '(top level)');
      }
      const out = {};
      for (const [key, sub] of Object.entries(spec.props)) {
        if (!(key in v) || v[key] === undefined) continue;
        out[key] = check(sub, v[key], child(path, key), rawOf);
        if (sub.type === 'any') {
          const raw = rawOf ? rawOf(child(path, key)) : undefined;
          if (raw !== undefined) Object.defineProperty(out, RAW[key], { value: raw, enumerable: false });
        }
      }
      return out;
    }
  }
  throw new Error(`fixture spec: unknown type ${spec.type}`);
}

/** Converts a parse tree to JS values, recording the raw text of "any" fields by path. */
function toValue(node, src, path, raws) {
  switch (node.kind) {
    case 'object': {
      const o = {};
      for (const { key, node: n } of node.members) {
        const p = child(path, key);
        if (key in RAW) {
          const text = utf8(src.subarray(n.start, n.end));
          raws.set(p, text);
          Object.defineProperty(o, key, { value: JSON.parse(text), enumerable: true, configurable: true, writable: true });
        } else {
          Object.defineProperty(o, key, { value: toValue(n, src, p, raws), enumerable: true, configurable: true, writable: true });
        }
      }
      return o;
    }
    case 'array':
      return node.items.map((n, i) => toValue(n, src, child(path, i), raws));
    case 'string': return node.value;
    case 'number': return Number(node.raw);
    case 'true': return true;
    case 'false': return false;
    default: return null;
  }
}

function checkFormat(v) {
  if (jsonType(v) !== 'object') throw new FixtureError(`not a tally replay fixture (a JSON ${jsonType(v)}, not an object)`);
  if (!('format' in v)) throw new FixtureError('not a tally replay fixture (no "format" field)');
  if (v.format !== FORMAT_V1) {
    throw new FixtureError(`unsupported format ${JSON.stringify(v.format)}: this build reads "${FORMAT_V1}"`, 'format');
  }
}

/**
 * Parses fixture text (or bytes) and validates it against the format's
 * schema rules. Arguments, results and outputs keep their literal JSON
 * text (call.rawArguments, call.rawResult, inference.rawOutput; not
 * enumerable), so numbers match as written.
 * @param {string|Uint8Array} text
 */
export function parse(text) {
  const src = toBytes(text);
  const tree = parseTree(src);
  if (tree === null) throw new FixtureError('not valid JSON');
  const raws = new Map();
  const value = toValue(tree, src, '', raws);
  checkFormat(value);
  return validated(check(fixtureSpec, value, '', (p) => raws.get(p)));
}

/**
 * Validates a fixture given as a JavaScript object (e.g. built in a test)
 * and returns a checked copy.
 * @param {object} value
 */
export function fromObject(value) {
  checkFormat(value);
  return validated(check(fixtureSpec, value, '', (p) => {
    // Keep raw texts an object already carries (a fixture loaded before).
    const m = /^(.*)\.(arguments|result|output)$/.exec(p);
    if (!m) return undefined;
    const owner = m[1].split(/\.|\[(\d+)\]/).filter(Boolean).reduce((o, k) => (o == null ? o : o[k]), value);
    return owner ? owner[RAW[m[2]]] : undefined;
  }));
}

/**
 * Reads and parses the fixture file at path. Errors start with the path.
 * @param {string|URL} path
 */
export function load(path) {
  let bytes;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new FixtureError(`load fixture: ${err.message}`);
  }
  try {
    return parse(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  } catch (err) {
    if (err instanceof FixtureError) {
      err.path = String(path instanceof URL ? path.pathname : path);
      err.message = `${err.path}: ${err.message}`;
    }
    throw err;
  }
}
