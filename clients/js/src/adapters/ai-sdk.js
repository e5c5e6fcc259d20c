// Vercel AI SDK adapter: a `tools` object whose every `execute` is
// answered by a replay player (the tool's input is the call's arguments).
//
//   const result = await generateText({ model, tools: replayTools(tools, player), ... });
//
// A recorded tool error or an injected error fault is thrown from
// `execute`, which the AI SDK hands to the model as a tool error, as in
// production. A call the fixture does not hold is thrown too (the AI SDK
// also turns it into a tool error, so check player.report() — withReplay
// does). With { fallback: true } a non-strict player's unrecorded calls run
// the real tool instead.

import { NotRecordedError } from '../player.js';

/**
 * @param {Record<string, any>} tools an AI SDK tools object (values from `tool()`)
 * @param {import('../player.js').Player} player
 * @param {{fallback?: boolean, onCall?: (name: string, input: unknown) => void}} [options]
 * @returns {Record<string, any>} the same tools, each `execute` replayed
 */
export function replayTools(tools, player, options = {}) {
  if (!tools || typeof tools !== 'object') throw new TypeError('replayTools: want an AI SDK tools object');
  const out = {};
  for (const [name, t] of Object.entries(tools)) {
    const original = t?.execute;
    out[name] = {
      ...t,
      execute: async (input, execOptions) => {
        options.onCall?.(name, input);
        try {
          return player.call(name, input);
        } catch (err) {
          if (options.fallback && err instanceof NotRecordedError && typeof original === 'function') {
            return original.call(t, input, execOptions);
          }
          throw err;
        }
      },
    };
  }
  return out;
}
