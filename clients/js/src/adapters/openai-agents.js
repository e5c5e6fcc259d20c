// OpenAI Agents JS adapter: function tools whose `invoke` is answered by a
// replay player. The model's arguments text is matched as it was sent
// (canonical JSON), so numbers match as written.
//
//   const agent = new Agent({ ..., tools: replayAgentTools([search, book], player) });
//   // or: const replayed = replayAgent(agent, player);
//
// A recorded tool error or an injected error fault reaches the model the
// way the SDK's default tool error function reports a failing tool
// ("An error occurred while running the tool. Please try again. Error: …"),
// as in production. A call the fixture does not hold fails the run with the
// player's error (strict: the closest recorded call and the differing
// argument). With { fallback: true } a non-strict player's unrecorded calls
// run the real tool.

import { NotRecordedError, RecordedToolError } from '../player.js';
import { FaultError } from '../faults.js';

/** The SDK's default message for a failing tool (defaultToolErrorFunction). */
export function defaultToolErrorMessage(error) {
  const details = error instanceof Error ? error.toString() : String(error);
  return `An error occurred while running the tool. Please try again. Error: ${details}`;
}

function cloneWith(obj, overrides) {
  const clone = Object.create(Object.getPrototypeOf(obj), Object.getOwnPropertyDescriptors(obj));
  for (const [k, v] of Object.entries(overrides)) {
    Object.defineProperty(clone, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return clone;
}

/**
 * Wraps function tools (type "function", from `tool()`); other tools
 * (hosted tools, handoffs) are returned as they are.
 * @param {any[]} tools
 * @param {import('../player.js').Player} player
 * @param {{fallback?: boolean, errorMessage?: (err: Error) => string}} [options]
 */
export function replayAgentTools(tools, player, options = {}) {
  if (!Array.isArray(tools)) throw new TypeError('replayAgentTools: want an array of tools');
  const errorMessage = options.errorMessage ?? defaultToolErrorMessage;
  return tools.map((t) => {
    if (!t || t.type !== 'function' || typeof t.invoke !== 'function') return t;
    const original = t.invoke;
    const invoke = async (runContext, input, details) => {
      try {
        return player.call(t.name, input);
      } catch (err) {
        if (options.fallback && err instanceof NotRecordedError) return original.call(t, runContext, input, details);
        if (err instanceof RecordedToolError || err instanceof FaultError) {
          return errorMessage(err);
        }
        throw err;
      }
    };
    return cloneWith(t, { invoke });
  });
}

/**
 * A clone of an Agent whose function tools are replayed (agent.clone).
 * @param {any} agent an Agent from @openai/agents
 * @param {import('../player.js').Player} player
 */
export function replayAgent(agent, player, options) {
  if (!agent || typeof agent.clone !== 'function') throw new TypeError('replayAgent: want an Agent from @openai/agents');
  return agent.clone({ tools: replayAgentTools(agent.tools ?? [], player, options) });
}
