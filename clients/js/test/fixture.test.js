// Loading fixtures: every fixture under replay/testdata loads, and a
// fixture breaking the format's rules fails naming the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

import { canonicalize, FixtureError, fromObject, load, parse, Player } from '../src/index.js';

const testdata = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../replay/testdata');

/** Every fixture file under dir (JSON with a "format" field). */
function fixtures(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...fixtures(p));
    else if (name.endsWith('.json')) {
      const v = JSON.parse(readFileSync(p, 'utf8'));
      if (v && !Array.isArray(v) && typeof v === 'object' && 'format' in v) out.push(p);
    }
  }
  return out;
}

test('every fixture under replay/testdata loads and replays in recorded order', () => {
  const files = fixtures(testdata);
  assert.ok(files.length >= 2, `found ${files}`);
  for (const file of files) {
    const f = load(file);
    assert.equal(f.format, 'tally.replay/v1');
    const player = new Player(f);
    for (const c of [...f.calls].sort((a, b) => a.seq - b.seq)) {
      const args = c.rawArguments ?? c.arguments_text ?? 'null';
      try {
        player.callRaw(c.tool, args);
      } catch (err) {
        assert.ok(['RecordedToolError', 'FaultError', 'ResultNotCapturedError'].includes(err.name), `${file} #${c.seq}: ${err.message}`);
        if (err.name === 'FaultError') player.callRaw(c.tool, args); // the recording answers after the fault
      }
    }
    const report = player.report();
    assert.deepEqual(report.unexpected, [], file);
    assert.deepEqual(report.unmet, [], file);
  }
});

test('arguments and results keep their literal text', () => {
  const f = load(path.join(testdata, 'expected_fixture.json'));
  assert.equal(canonicalize(f.calls[0].rawArguments), '{"limit":10,"q":"hotels in Lisbon"}');
  assert.deepEqual(f.calls[0].arguments, { limit: 10, q: 'hotels in Lisbon' });
  assert.equal(JSON.stringify(f.calls[0]).includes('rawArguments'), false); // not enumerable
  assert.equal(f.inferences.length, 1);
  assert.equal(typeof f.inferences[0].rawOutput, 'string');
  const lit = parse(JSON.stringify(minimal({ arguments: 'PLACEHOLDER' })).replace('"PLACEHOLDER"', '{"x": 1.50}'));
  assert.equal(lit.calls[0].rawArguments, '{"x": 1.50}');
  const p = new Player(lit);
  assert.throws(() => p.callRaw('t', '{"x":1.5}'), { name: 'NotRecordedError' }); // 1.5 is not 1.50
  assert.equal(p.callRaw('t', '{"x":1.50}'), '{"ok":true}');
});

function minimal(call = {}, top = {}) {
  return {
    format: 'tally.replay/v1',
    run: { trace_id: 't', conversation_id: '', agent: '', task: '', service: '', started_at: '', source_version: '' },
    calls: [{ seq: 1, span_id: 's', started_at: '2025-03-01T10:00:01Z', tool: 't', args_hash: '', status: 'ok', attempt: 1, duration_ms: 1, result: { ok: true }, ...call }],
    missing: { arguments: [], results: [] },
    ...top,
  };
}

test('a fixture breaking the schema fails naming the field', () => {
  const cases = [
    [{ ...minimal(), format: 'tally.replay/v2' }, 'format', /unsupported format "tally.replay\/v2": this build reads "tally.replay\/v1"/],
    [minimal({ tool: '' }), 'calls[0].tool', /must not be empty/],
    [minimal({ seq: 0 }), 'calls[0].seq', /must be ≥ 1/],
    [minimal({ seq: 1.5 }), 'calls[0].seq', /must be an integer/],
    [minimal({ status: 'fine' }), 'calls[0].status', /"fine" is not one of "ok", "error", "unset"/],
    [minimal({ args_hash: 'ABC' }), 'calls[0].args_hash', /not a 64 lowercase hex/],
    [minimal({ started_at: '2025-03-01 10:00:01' }), 'calls[0].started_at', /RFC 3339/],
    [minimal({ tool_name: 'x' }), 'calls[0].tool_name', /unknown field/],
    [minimal({ duration_ms: -1 }), 'calls[0].duration_ms', /≥ 0/],
    [minimal({ missing: ['arguments', 'arguments'] }), 'calls[0].missing', /repeat/],
    [minimal({ missing: ['args'] }), 'calls[0].missing[0]', /"args" is not one of/],
    [minimal({ fault: { kind: 'explode' } }), 'calls[0].fault.kind', /"explode" is not one of "timeout"/],
    [minimal({ fault: { kind: 'server_error', status: 404 } }), 'calls[0].fault.status', /must be ≥ 500/],
    [minimal({ error: { type: 'x' } }), 'calls[0].error', /required field "message" is missing/],
    [(() => { const m = minimal(); delete m.calls[0].span_id; return m; })(), 'calls[0]', /required field "span_id" is missing/],
    [(() => { const m = minimal(); delete m.missing; return m; })(), '(top level)', /required field "missing" is missing/],
    [minimal({}, { run: { trace_id: 't' } }), 'run', /required field "agent" is missing/],
    [minimal({}, { missing: { arguments: [0], results: [] } }), 'missing.arguments[0]', /≥ 1/],
  ];
  for (const [value, field, message] of cases) {
    for (const attempt of [() => parse(JSON.stringify(value)), () => fromObject(value)]) {
      assert.throws(attempt, (err) => {
        assert.ok(err instanceof FixtureError, err.stack);
        assert.equal(err.field, field);
        assert.match(err.message, message);
        assert.ok(err.message.startsWith(`replay: parse fixture: ${field}: `), err.message);
        return true;
      });
    }
  }
  assert.throws(() => parse('{"calls": []}'), /not a tally replay fixture \(no "format" field\)/);
  // a fixture built by hand is checked when a player is made from it
  assert.throws(() => new Player(minimal({ attempt: -1 })), { field: 'calls[0].attempt' });
  assert.equal(new Player(minimal()).call('t', null).ok, true);
  assert.throws(() => parse('{"format": '), /not valid JSON/);
});

test('load names the file in its errors', () => {
  assert.throws(() => load(path.join(testdata, 'vectors', 'match.json')), (err) => {
    assert.match(err.message, /match\.json: replay: parse fixture: not a tally replay fixture/);
    return true;
  });
  assert.throws(() => load(path.join(testdata, 'no-such.json')), /load fixture: ENOENT/);
});
