import type { Player } from '../player.js';

export interface ReplayToolsOptions {
  /** Run the real tool's execute for calls a non-strict player does not hold. */
  fallback?: boolean;
  onCall?: (name: string, input: unknown) => void;
}
/** The same AI SDK tools, each `execute` answered by the player. */
export declare function replayTools<T extends Record<string, any>>(tools: T, player: Player, options?: ReplayToolsOptions): T;
