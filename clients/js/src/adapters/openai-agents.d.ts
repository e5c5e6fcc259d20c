import type { Player } from '../player.js';

export interface ReplayAgentToolsOptions {
  /** Run the real tool for calls a non-strict player does not hold. */
  fallback?: boolean;
  /** The tool output the model sees for a recorded tool error or injected fault (default: the SDK's default tool error message). */
  errorMessage?: (err: Error) => string;
}
export declare function defaultToolErrorMessage(error: unknown): string;
/** Function tools (from `tool()`) with `invoke` answered by the player; other tools unchanged. */
export declare function replayAgentTools<T>(tools: T[], player: Player, options?: ReplayAgentToolsOptions): T[];
/** agent.clone() with its function tools replayed. */
export declare function replayAgent<A extends { clone(config: any): A; tools?: any[] }>(agent: A, player: Player, options?: ReplayAgentToolsOptions): A;
