// The safety review's vocabularies as the server spells them, each listed
// once for every page: the terminal statuses of tool steps, the effect
// classes of tools and the signal kinds, in their display order, with what
// the pages draw for each. Go holds the same lists (safety.Statuses,
// safety.Effects, safety.Kinds); TestVocab in ui/vocab_test.go reads this
// file and holds the two equal, so keep its lists literal: quoted strings
// only, one export per list.

import { esc, html } from './html.js';

/** STATUSES are the terminal statuses of a tool step, in table order: ok, then the outcomes from the least to the most troubling. */
export const STATUSES = ['ok', 'retryable', 'ambiguous', 'denied', 'escalated', 'error'];

/** STATUS_PILL is the pill class of each status: the outcomes that may have changed the world, or failed, are errors. */
export const STATUS_PILL = {
  ok: 'ok',
  retryable: 'warn',
  ambiguous: 'error',
  denied: 'warn',
  escalated: 'warn',
  error: 'error',
};

/** EFFECTS are the effect classes of tools, from the harmless to the irreversible, then unknown. */
export const EFFECTS = ['read', 'idempotent', 'non_idempotent', 'irreversible', 'unknown'];

/** EFFECT_PILL is the pill class of each effect class. */
export const EFFECT_PILL = {
  read: 'ok',
  idempotent: 'ok',
  non_idempotent: 'warn',
  irreversible: 'error',
  unknown: 'muted',
};

/** SIGNAL_KINDS are the safety signal kinds, in the order the docs list them. */
export const SIGNAL_KINDS = [
  'duplicate_side_effect',
  'unsafe_retry',
  'unknown_tool',
  'invalid_arguments',
  'ungated_action',
  'retry_storm',
  'runaway_loop',
  'budget_exceeded',
  'unchecked_arguments',
];

/** SIGNAL_HELP says what each signal kind means, for the kind cells. */
export const SIGNAL_HELP = {
  duplicate_side_effect: 'a non-idempotent or irreversible tool succeeded twice for the same step',
  unsafe_retry: 'a non-idempotent or irreversible step retried after an ambiguous outcome',
  unknown_tool: 'a tool the model was not offered, or not in the registry',
  invalid_arguments: "arguments the tool's schema rejects (unknown fields included)",
  ungated_action: 'an irreversible tool ran with no approval before it',
  retry_storm: 'a retry without backoff, or branches retrying in lockstep',
  runaway_loop: 'the same failing call again and again, or past the step limit',
  budget_exceeded: 'over a configured cap, or a typed partial result',
  unchecked_arguments: "arguments not checked: the tool's schema is too large or too complex to validate within the limits",
};

/** SIGNAL_MARK is the badge of each signal kind on its span's row of the waterfall. */
export const SIGNAL_MARK = {
  duplicate_side_effect: 'TWICE',
  unsafe_retry: 'UNSAFE RETRY',
  unknown_tool: 'UNKNOWN TOOL',
  invalid_arguments: 'BAD ARGS',
  ungated_action: 'UNGATED',
  retry_storm: 'NO BACKOFF',
  runaway_loop: 'LOOP',
  budget_exceeded: 'OVER BUDGET',
  unchecked_arguments: 'UNCHECKED ARGS',
};

/** CONFIDENCES are how sure a cost is, from the surest to the least sure (schema.Confidences). */
export const CONFIDENCES = ['exact', 'corrected', 'upper_bound', 'lower_bound', 'approximate', 'unpriced'];

/** CONFIDENCE_HELP says what each confidence means, for the mark's tooltip. */
export const CONFIDENCE_HELP = {
  exact: 'exact: the bill as the provider computes it from what the instrumentation reported',
  corrected: 'corrected: a known, deterministic instrumentation error was undone',
  upper_bound: 'upper bound: the instrumentation never reports a count that would lower the bill (cached input billed at the full price, or a known over-count): the real cost is at most this',
  lower_bound: 'lower bound: the instrumentation never reports a count that would raise the bill (thinking or cached tokens left out), or a span has no price: the real cost is at least this',
  approximate: 'approximate: parts of this cost bound it from above and parts from below',
  unpriced: 'unpriced: nothing here could be priced',
};

/** CONFIDENCE_MARK is the mark drawn beside a cost that is not exact. */
export const CONFIDENCE_MARK = {
  exact: '=',
  corrected: 'corrected',
  upper_bound: '≤',
  lower_bound: '≥',
  approximate: '≈',
  unpriced: '?',
};

/** confidenceHTML marks a cost by its confidence: nothing when exact or unrated, else a small mark whose title says why. */
export function confidenceHTML(level, rules) {
  if (!level || level === CONFIDENCES[0]) return '';
  const why = (rules || []).map((r) => `${r.instrumentation} (${r.versions}): ${r.reason}`).join('\n');
  return html` <span class="pill conf muted" data-confidence="${esc(level)}" title="${esc(CONFIDENCE_HELP[level] || level)}${why ? esc('\n' + why) : ''}">${esc(CONFIDENCE_MARK[level] || level)}</span>`;
}

/** effectPill draws a tool's effect class (unknown when it has none). */
export function effectPill(effect) {
  return html`<span class="pill ${EFFECT_PILL[effect] || 'muted'}" data-effect="${esc(effect)}">${esc(effect || 'unknown')}</span>`;
}
