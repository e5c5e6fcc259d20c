// The tasks page: how consistent each task is over its runs — pass rate,
// pass@k and pass^k with the sample size, the spread of steps, tokens,
// cost and wall clock, cost per success — from GET /api/v1/tasks.

import { esc, html, join, show } from '../lib/html.js';
import { api, errorHTML } from '../lib/api.js';
import { fmtMs, num, pct, shortID, usd } from '../lib/format.js';
import { copyParams, rangeText, setupRangeForm } from '../lib/range.js';
import { tableHTML } from '../lib/table.js';

/** TASK_K are the k shown for pass@k and pass^k. */
const TASK_K = [1, 3, 5];

export async function pageTasks() {
  const params = new URLSearchParams(location.search);
  setupRangeForm(document.getElementById('range'), params);
  const el = document.getElementById('tasks');
  let rep;
  try {
    rep = await api(`/api/v1/tasks?${copyParams(params, ['since', 'until', 'by', 'outcome', 'task', 'agent'], { since: '7d' })}`);
  } catch (err) {
    show(el, errorHTML(err, 'Tasks'));
    return;
  }
  if (rep.since) document.getElementById('tasks-range').textContent = rangeText(rep.since, rep.until);
  const tasks = rep.tasks || [];
  if (!tasks.length) {
    show(el, html`<p class="empty" data-empty>No runs started in this range. Runs are grouped by <code>task.name</code> (or their root span's name) and graded by their outcomes: <code>gen_ai.evaluation.result</code> events, or <code>POST /api/v1/runs/{trace_id}/outcomes</code> (<code>tally outcome</code>).</p>`);
    return;
  }
  const by = rep.by || 'task';
  const at = (m, k) => (m && m[k] != null ? pct(m[k]) : html`<span class="muted" title="fewer graded runs than k">—</span>`);
  const spread = (s, fmt) => html`${fmt(s.p50)} <small class="muted">/ ${fmt(s.p99)}</small>`;
  const cols = [
    { key: 'key', label: { agent: 'Agent', case: 'Case' }[by] || 'Task', html: (t) => (by === 'case' ? html`<span class="mono">${t.key}</span>` : html`<a href="/runs?${new URLSearchParams({ [by === 'agent' ? 'agent' : 'task']: t.key })}">${t.key}</a>`) },
    { key: 'runs', label: 'Runs', num: true, html: (t) => num(t.runs) },
    { key: 'graded', label: 'Graded', title: 'runs with a verdict (n of the estimators)', num: true, html: (t) => html`${num(t.graded)}${t.verdicts_from === 'status' ? html` <small class="muted" title="no run carries an outcome: graded by run status">by status</small>` : ''}` },
    { key: 'rate', label: 'Pass rate', num: true, html: (t) => (t.pass_rate == null ? '—' : html`<span data-pass-rate="${t.pass_rate}">${pct(t.pass_rate)}</span> <small class="muted">${num(t.passed)}/${num(t.graded)}</small>`) },
    ...TASK_K.map((k) => ({ key: `at${k}`, label: `pass@${k}`, title: `chance at least one of ${k} tries passes`, num: true, html: (t) => at(t.pass_at_k, String(k)) })),
    ...TASK_K.map((k) => ({ key: `hat${k}`, label: `pass^${k}`, title: `chance all ${k} tries pass`, num: true, html: (t) => html`<span data-pass-hat="${k}">${at(t.pass_hat_k, String(k))}</span>` })),
    { key: 'steps', label: 'Steps p50 / p99', title: 'LLM and tool calls per run', num: true, html: (t) => spread(t.steps, num) },
    { key: 'tokens', label: 'Tokens p50 / p99', num: true, html: (t) => html`${spread(t.tokens, num)}${t.tokens.cv > 0.5 ? html` <span class="pill warn" title="coefficient of variation">cv ${t.tokens.cv.toFixed(2)}</span>` : ''}` },
    { key: 'time', label: 'Time p50 / p99', num: true, html: (t) => spread(t.duration_ms, fmtMs) },
    { key: 'cost', label: 'Cost / run', num: true, html: (t) => usd(t.cost_per_run) },
    { key: 'success', label: 'Cost / success', title: 'cost of the graded runs over their passes', num: true, html: (t) => (t.cost_per_success == null ? '—' : usd(t.cost_per_success)) },
    { key: 'budget', label: 'Over budget', title: 'passes using more tokens than the budget multiple × the median pass', num: true, html: (t) => (t.over_budget_share == null ? '—' : html`${pct(t.over_budget_share)} <small class="muted">&gt; ${num(Math.round(t.budget_tokens))}</small>`) },
    { key: 'versions', label: 'Versions', html: (t) => (by !== 'task' ? '—' : html`<a href="/compare?${new URLSearchParams({ task: t.key })}">compare</a>`) },
    { key: 'failed', label: 'Failed runs', wrap: true, html: (t) => join(t.failed_runs.map((id) => html`<a class="mono" href="/runs/${esc(id)}">${shortID(id)}</a>`), ' ') },
  ];
  const group = join(['task', 'agent', 'case'].map((g) => (g === by ? html`<strong>${g}</strong>`
    : html`<a href="/tasks?${new URLSearchParams({ ...Object.fromEntries(params), by: g })}" data-by="${g}">${g}</a>`)), ' · ');
  show(el, html`<p class="muted" id="tasks-by">Group by ${group}</p>${rep.truncated ? html`<p class="notice warn">The range has more runs than one report reads: figures cover the newest ${num(rep.runs_read)}.</p>` : ''}
${rep.quantiles === 'sketch' ? html`<p class="muted" data-quantiles="sketch">Over ${num(rep.runs_read)} runs the percentiles (p50, p99, the budget's median) come from the hourly run rollup, within 1%; counts and means are exact.</p>` : ''}
<p class="muted">pass@k: the chance that at least one of k tries passes; pass^k: that all k do — unbiased estimates from the graded runs (n) and their passes (c). A task passing 75% of the time has pass^3 ≈ 42%.</p>
${tableHTML(cols, tasks, null, { id: 'tasks-table', rowAttrs: (t) => html` data-task="${esc(t.key)}"` })}`);
}
