import type { Fixture } from './fixture.js';
import type { Player, PlayerOptions } from './player.js';

export interface ReplayTestOptions extends PlayerOptions {
  /** Pass even when recorded calls were never made (unexpected calls still fail). */
  allowUnmet?: boolean;
}

/** A node:test context, a vitest test context, or a hook registrar such as afterEach. */
export type TestLike =
  | { after(fn: () => void): void }
  | { onTestFinished(fn: () => void): void }
  | ((fn: () => void) => void);

/** A strict player (unless strict: false) whose report must be clean when the test ends. */
export declare function withReplay(t: TestLike, fixture: Fixture | string | URL, options?: ReplayTestOptions): Player;
export declare function assertReplayClean(player: Player, options?: { allowUnmet?: boolean }): void;
/** A fresh player before each test of a describe block, its report checked after each. */
export declare function replayHooks(
  fixture: Fixture | string | URL,
  options?: ReplayTestOptions & { beforeEach?: (fn: () => void) => void; afterEach?: (fn: () => void) => void },
): { readonly player: Player };
