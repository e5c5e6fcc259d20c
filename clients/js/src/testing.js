// Test-runner helpers: a player per test whose report must be clean when
// the test ends (every recorded call made, nothing unexpected called).
// Works with node:test, vitest and jest.

import { Player } from './player.js';

/**
 * Returns a player for fixture and registers, on the test, a check that its
 * report is clean when the test ends.
 *
 * `t` is the node:test test context (its `after` hook is used), a vitest
 * test context (`onTestFinished`), or any hook registrar such as jest's or
 * vitest's `afterEach`/`afterAll` (called with the check).
 *
 * @param {any} t
 * @param {string|URL|object} fixture a path, or a fixture from load()
 * @param {{strict?: boolean, faults?: Array<string|object>, allowUnmet?: boolean}} [options]
 */
export function withReplay(t, fixture, options = {}) {
  const player = new Player(fixture, { strict: options.strict ?? true, faults: options.faults });
  const check = () => assertReplayClean(player, options);
  if (t && typeof t.after === 'function') t.after(check);
  else if (t && typeof t.onTestFinished === 'function') t.onTestFinished(check);
  else if (typeof t === 'function') t(check);
  else throw new TypeError('withReplay: pass the node:test or vitest test context, or a hook such as afterEach');
  return player;
}

/** Throws the report's error unless the replay is clean (unmet calls allowed with allowUnmet). */
export function assertReplayClean(player, { allowUnmet = false } = {}) {
  const report = player.report();
  if (allowUnmet) report.unmet = [];
  report.assertClean();
}

/**
 * For describe blocks (jest, vitest, node:test's describe): a fresh player
 * before each test, its report checked after each. Hooks default to the
 * globals beforeEach/afterEach (jest, vitest with globals); pass them
 * explicitly otherwise, e.g. `replayHooks(path, { beforeEach, afterEach })`
 * with the ones imported from 'vitest' or 'node:test'.
 *
 * @returns {{readonly player: Player}}
 */
export function replayHooks(fixture, options = {}) {
  const before = options.beforeEach ?? globalThis.beforeEach;
  const after = options.afterEach ?? globalThis.afterEach;
  if (typeof before !== 'function' || typeof after !== 'function') {
    throw new TypeError('replayHooks: no beforeEach/afterEach: pass them in options');
  }
  let current = null;
  before(() => {
    current = new Player(fixture, { strict: options.strict ?? true, faults: options.faults });
  });
  after(() => {
    const p = current;
    current = null;
    if (p) assertReplayClean(p, options);
  });
  return {
    get player() {
      if (!current) throw new Error('replayHooks: the player exists only inside a test');
      return current;
    },
  };
}
