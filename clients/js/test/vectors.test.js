// The shared test vectors (replay/testdata/vectors, generated from Go): the
// JavaScript client must agree with Go's support/canonical and replay
// player byte for byte.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

import { argsHash, canonicalize, isValidJSON } from '../src/canonical.js';
import { parse, load } from '../src/fixture.js';
import { Player, NotRecordedError } from '../src/player.js';
import { parseFaultRule } from '../src/faults.js';

const testdata = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../replay/testdata');
const vectors = path.join(testdata, 'vectors');
const read = (name) => JSON.parse(readFileSync(path.join(vectors, name), 'utf8'));
const skip = existsSync(path.join(vectors, 'canonical.json')) ? false : 'replay/testdata/vectors not generated yet';

test('canonical.json: canonical form and hash agree with Go', { skip }, () => {
  const cases = read('canonical.json');
  assert.ok(cases.length > 0);
  for (const c of cases) {
    if (c.canonical === null) {
      assert.equal(isValidJSON(c.input), false, c.name);
      assert.throws(() => canonicalize(c.input), /canonical: decode JSON/, c.name);
    } else {
      assert.equal(canonicalize(c.input), c.canonical, c.name);
    }
    assert.equal(argsHash(c.input), c.hash, c.name);
  }
});

/** A one-call fixture recording tool with arguments given as text (null: not captured). */
function oneCallFixture(tool, argsText) {
  let args = '';
  if (argsText !== null) {
    args = isValidJSON(argsText) ? `"arguments": ${argsText},` : `"arguments_text": ${JSON.stringify(argsText)},`;
  }
  return parse(`{"format": "tally.replay/v1",
    "run": {"trace_id": "t", "conversation_id": "", "agent": "", "task": "", "service": "", "started_at": "", "source_version": ""},
    "calls": [{"seq": 1, "span_id": "s1", "started_at": "2025-03-01T10:00:01Z", "tool": ${JSON.stringify(tool)}, ${args}
      "args_hash": "", "status": "ok", "attempt": 1, "duration_ms": 1, "result": {"ok": true}}],
    "missing": {"arguments": [], "results": []}}`);
}

test('match.json: calls match by tool and canonical arguments as in Go', { skip }, () => {
  const cases = read('match.json');
  assert.ok(cases.length > 0);
  for (const c of cases) {
    const player = new Player(oneCallFixture(c.recorded.tool, c.recorded.arguments));
    let matched = true;
    try {
      player.callRaw(c.call.tool, c.call.arguments);
    } catch (err) {
      if (!(err instanceof NotRecordedError)) throw err;
      matched = false;
    }
    assert.equal(matched, c.match, c.name);
  }
});

test('faults.json: fault rules parse as in Go', { skip }, () => {
  const { parse: cases } = read('faults.json');
  assert.ok(cases.length > 0);
  for (const c of cases) {
    if (c.ok) assert.deepEqual(parseFaultRule(c.spec), c.rule, c.spec);
    else assert.throws(() => parseFaultRule(c.spec), (err) => err.message === c.error, c.spec);
  }
});

/** Plays a vector's calls and returns its outcomes in the vectors' shape. */
function play(v) {
  const player = new Player(load(path.join(testdata, v.fixture)), { strict: v.strict, faults: v.rules });
  const outcomes = v.calls.map(({ tool, arguments: args }) => {
    try {
      return { kind: 'result', result: player.callRaw(tool, args) };
    } catch (err) {
      switch (err.name) {
        case 'RecordedToolError':
        {
          const o = { kind: 'recorded_error', seq: err.seq, tool: err.tool, error_type: err.errorType, error_message: err.errorMessage, message: err.message };
          if (err.result !== undefined) o.result = err.result;
          return o;
        }
        case 'FaultError': {
          const o = { kind: 'fault', seq: err.seq, tool: err.tool, fault: err.kind, status: err.status, message: err.message };
          if (err.kind === 'rate_limit') o.retry_after_seconds = err.retryAfterSeconds;
          return o;
        }
        case 'ResultNotCapturedError': return { kind: 'not_captured', message: err.message };
        case 'NotRecordedError': return { kind: 'not_recorded', message: err.message };
        case 'UnexpectedCallError': return { kind: 'unexpected', tool: err.tool, message: err.message };
      }
      throw err;
    }
  });
  const r = player.report();
  return { outcomes, report: { unmet: r.unmet, unexpected: r.unexpected, faults: r.faults } };
}

/** The vector's expected outcome, keeping only the fields play() reports. */
function expected(v) {
  return {
    outcomes: v.outcomes,
    report: { unmet: v.report.unmet ?? [], unexpected: v.report.unexpected ?? [], faults: v.report.faults ?? [] },
  };
}

for (const file of ['faults.json', 'replay.json']) {
  test(`${file}: players answer, fail and report as in Go`, { skip }, async (t) => {
    const data = read(file);
    const cases = Array.isArray(data) ? data : data.play;
    assert.ok(cases.length > 0);
    for (const v of cases) {
      await t.test(v.name, () => {
        assert.deepEqual(play(v), expected(v));
      });
    }
  });
}
