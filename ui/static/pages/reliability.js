// The reliability page: the safety review of recent runs — signals by
// kind and tool (or task, or agent) with example runs, the tools' steps by
// effect class and terminal status, and per task the caps the successful
// runs suggest — from GET /api/v1/signals and GET /api/v1/caps.

import { esc, html, join, show } from '../lib/html.js';
import { api, errorHTML } from '../lib/api.js';
import { fmtMs, num, shortID, usd } from '../lib/format.js';
import { copyParams, rangeText, setupRangeForm } from '../lib/range.js';
import { tableHTML } from '../lib/table.js';
import { SIGNAL_HELP, SIGNAL_KINDS, STATUSES, effectPill } from '../lib/vocab.js';

export async function pageReliability() {
  const params = new URLSearchParams(location.search);
  setupRangeForm(document.getElementById('range'), params);
  const sigEl = document.getElementById('signals');
  const stepsEl = document.getElementById('steps');
  const capsEl = document.getElementById('caps');
  const by = ['tool', 'task', 'agent'].includes(params.get('by')) ? params.get('by') : 'tool';
  let rep;
  try {
    rep = await api(`/api/v1/signals?${copyParams(params, ['since', 'until', 'kind', 'tool', 'task', 'agent', 'by'], { since: '24h', by })}`);
  } catch (err) {
    show(sigEl, errorHTML(err, 'Signals'));
    show(stepsEl, html``);
    show(capsEl, html``);
    return;
  }
  if (rep.since) document.getElementById('reliability-range').textContent = rangeText(rep.since, rep.until);
  const runLinks = (ids) => join((ids || []).map((id) => html`<a class="mono" href="/runs/${esc(id)}">${shortID(id)}</a>`), ' ');
  const group = join(['tool', 'task', 'agent'].map((g) => (g === by ? html`<strong>${g}</strong>`
    : html`<a href="/reliability?${new URLSearchParams({ ...Object.fromEntries(params), by: g })}" data-by="${g}">${g}</a>`)), ' · ');
  // Every kind the server counts, in the docs' order (a kind this UI does
  // not know yet, from a newer server, last).
  const counts = rep.kinds || {};
  const kindOrder = [...SIGNAL_KINDS.filter((k) => k in counts), ...Object.keys(counts).filter((k) => !SIGNAL_KINDS.includes(k))];
  const kinds = join(kindOrder.map((k) => html`<span class="pill ${counts[k] ? 'warn' : 'muted'}" data-kind-count="${k}" title="${SIGNAL_HELP[k] || ''}">${k} ${num(counts[k])}</span>`), ' ');
  const head = html`<p id="signals-total"><strong>${num(rep.signals)}</strong> signals in <strong>${num(rep.runs_with_signals)}</strong> of ${num(rep.runs_read)} runs</p>
<p class="muted">${kinds}</p>${rep.truncated ? html`<p class="notice warn">The range has more runs than one review reads: figures cover the newest ${num(rep.runs_read)}.</p>` : ''}
<p class="muted" id="signals-by">Group by ${group}</p>`;
  const groups = rep.groups || [];
  const subject = (g) => g.tool || g.task || g.agent || '—';
  const cols = [
    { key: 'kind', label: 'Kind', html: (g) => html`<abbr title="${SIGNAL_HELP[g.kind] || ''}">${g.kind}</abbr>` },
    { key: 'subject', label: by[0].toUpperCase() + by.slice(1), html: (g) => (subject(g) === '—' ? '—' : html`<a href="/runs?${new URLSearchParams({ [by]: subject(g) })}">${subject(g)}</a>`) },
    { key: 'signals', label: 'Signals', num: true, html: (g) => num(g.signals) },
    { key: 'runs', label: 'Runs', num: true, html: (g) => num(g.runs) },
    { key: 'examples', label: 'Example runs', wrap: true, html: (g) => runLinks(g.example_runs) },
    { key: 'reason', label: 'Newest reason', wrap: true, html: (g) => g.reason },
  ];
  show(sigEl, groups.length
    ? html`${head}${tableHTML(cols, groups, null, { id: 'signals-table', rowAttrs: (g) => html` data-kind="${esc(g.kind)}" data-subject="${esc(subject(g))}"` })}`
    : html`${head}<p class="empty" data-empty>No signals: no run in this range did anything the review flags. Tool effect classes come from <code>--tool-effects</code> or the <code>tally.tool.effect</code> span attribute; caps from <code>--run-cap</code>.</p>`);

  const tools = rep.tools || [];
  const stepCols = [
    { key: 'tool', label: 'Tool', html: (t) => html`<a href="/runs?${new URLSearchParams({ tool: t.tool })}">${t.tool || '—'}</a>` },
    { key: 'effect', label: 'Effect', html: (t) => effectPill(t.effect) },
    { key: 'steps', label: 'Steps', num: true, html: (t) => num(t.steps) },
    ...STATUSES.map((s) => ({ key: s, label: s, num: true, html: (t) => html`<span data-status="${s}">${num((t.statuses || {})[s] || 0)}</span>` })),
    { key: 'signals', label: 'Signals', num: true, html: (t) => num(t.signals) },
  ];
  show(stepsEl, tools.length
    ? tableHTML(stepCols, tools, null, { id: 'steps-table', rowAttrs: (t) => html` data-tool="${esc(t.tool)}"` })
    : html`<p class="empty">No tool steps in this range.</p>`);

  let caps;
  try {
    caps = await api(`/api/v1/caps?${copyParams(params, ['since', 'until', 'task', 'agent'], { since: '7d' })}`);
  } catch (err) {
    show(capsEl, errorHTML(err, 'Caps'));
    return;
  }
  // The caps table wraps (see #caps-table in style.css) so that all its
  // columns fit the window; a figure breaks only between its parts.
  const fig = (f, fmt) => html`<span class="nobr">${fmt(f.p50)} <small class="muted">/ ${fmt(f.p99)}</small></span> <span class="nobr">→ <strong>${fmt(f.suggested)}</strong></span>${f.exceeded ? html` <span class="pill warn nobr" title="runs over the suggested cap">${num(f.exceeded)} over</span>` : ''}`;
  const capCols = [
    { key: 'task', label: 'Task', html: (t) => html`<a href="/runs?${new URLSearchParams({ task: t.task })}">${t.task}</a>` },
    { key: 'runs', label: 'Successful', num: true, html: (t) => html`${num(t.successful)} <small class="muted"><span class="nobr">of ${num(t.runs)}</span>${t.few_runs ? ' (few: p99 ≈ max)' : ''}</small>` },
    { key: 'iter', label: 'Iterations p50 / p99 → cap', num: true, html: (t) => fig(t.iterations, num) },
    { key: 'tokens', label: 'Tokens', num: true, html: (t) => fig(t.tokens, num) },
    { key: 'cost', label: 'Cost', num: true, html: (t) => fig(t.cost_usd, usd) },
    { key: 'active', label: 'Active time', title: 'wall clock less waits for approval', num: true, html: (t) => fig(t.active_ms, fmtMs) },
    { key: 'waits', label: 'Approval waits', title: 'runs that waited for a human, and the median wait', num: true, html: (t) => (t.runs_waiting ? html`${num(t.runs_waiting)} <small class="muted nobr">p50 ${fmtMs(t.wait_ms.p50)}</small>` : '—') },
    { key: 'over', label: 'Runs over', wrap: true, html: (t) => (t.exceeded ? html`${num(t.exceeded)}: ${runLinks(t.exceeded_runs)}` : '—') },
    { key: 'spec', label: 'Suggested --run-cap', wrap: true, html: (t) => html`<code data-spec>${t.spec}</code>${(t.configured || []).length ? html`<br><small class="muted">configured: ${join(t.configured.map((c) => html`<code>${c}</code>`), ' ')}</small>` : ''}` },
  ];
  const tasks = caps.tasks || [];
  show(capsEl, tasks.length
    ? html`<p class="muted">Suggested caps are ${caps.multiplier}× the p99 of the successful runs (passed by their outcomes, else ended ok) over ${rangeText(caps.since, caps.until)}.${caps.quantiles === 'sketch' ? html` <span data-quantiles="sketch">Over ${num(caps.runs_read)} runs the percentiles come from the hourly run rollup, within 1%; the runs over a cap are counted exactly.</span>` : ''}</p>${tableHTML(capCols, tasks, null, { id: 'caps-table', rowAttrs: (t) => html` data-task="${esc(t.task)}"` })}`
    : html`<p class="empty">No task has successful runs in this range.</p>`);
}
