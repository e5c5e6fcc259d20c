// A span's type label and its figures as text: shared by the run page's
// waterfall rows and its span detail.

import { num, usd } from './format.js';

/** TYPE_LABEL is the badge of each span type (agent, inference, tool, other). */
export const TYPE_LABEL = { agent: 'AGENT', inference: 'LLM', tool: 'TOOL', other: 'SPAN' };

/** tokensText is "1,000 in / 100 out" for a usage, "" without one. */
export const tokensText = (u) => (u ? `${num(u.input_tokens)} in / ${num(u.output_tokens)} out` : '');

/**
 * spanFigures is the hover text of a waterfall row: the span's own tokens
 * and cost, and its subtree's (what counts in the run's totals from it and
 * everything below it), "" when neither has any.
 */
export function spanFigures(n) {
  const parts = [];
  if (n.usage || n.cost) {
    const own = [tokensText(n.usage), n.cost ? usd(n.cost.total_usd) : ''].filter(Boolean).join(' · ');
    parts.push(`this span: ${own}${n.counted || !n.usage ? '' : ' (not counted: repeats usage counted elsewhere)'}`);
  }
  if (n.subtree_usage || n.subtree_cost) {
    parts.push(`with everything below: ${[tokensText(n.subtree_usage), n.subtree_cost ? usd(n.subtree_cost.total_usd) : ''].filter(Boolean).join(' · ')}`);
  }
  return parts.join('\n');
}
