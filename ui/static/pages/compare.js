// The compare page: a task's versions (configuration fingerprints) and two
// of them — or two time ranges — side by side, each metric with its change
// and whether it is beyond noise (GET /api/v1/versions, /api/v1/compare).

import { esc, html, join, show } from '../lib/html.js';
import { api, errorHTML } from '../lib/api.js';
import { fmtMs, num, pct, timeHTML, usd } from '../lib/format.js';
import { tableHTML } from '../lib/table.js';

/** METRIC_LABEL names the comparison's metrics; METRIC_FMT formats them. */
const METRIC_LABEL = {
  pass_rate: 'Pass rate', pass_hat_3: 'pass^3', error_rate: 'Error rate', retry_rate: 'Retry rate',
  cost_per_run: 'Cost / run', cost_per_success: 'Cost / success', p95_duration_ms: 'p95 duration',
  steps_p50: 'Steps p50', tokens_p50: 'Tokens p50',
};
const METRIC_FMT = {
  pass_rate: pct, pass_hat_3: pct, error_rate: pct, retry_rate: pct, cost_per_run: usd, cost_per_success: usd,
  p95_duration_ms: fmtMs, steps_p50: num, tokens_p50: num,
};

/** configText lists what a version is: agents, prompts, models, tools, instructions. */
function configHTML(c) {
  if (!c) return '';
  const parts = [
    ['agents', c.agent_versions], ['prompts', c.prompts], ['models', c.models],
    ['tools', c.tools], ['instructions', c.instructions], ['service', c.service_version ? [c.service_version] : []],
  ].filter(([, v]) => v && v.length);
  return join(parts.map(([k, v]) => html`<span class="muted">${k}</span> <span class="mono">${v.join(', ')}</span>`), html`<br>`);
}

export async function pageCompare() {
  const params = new URLSearchParams(location.search);
  const el = document.getElementById('compare');
  const task = params.get('task') || '';
  document.getElementById('compare-task').textContent = task;
  if (!task) {
    show(el, html`<p class="empty" data-empty>Pick a task on the <a href="/tasks">Tasks</a> page to compare its versions.</p>`);
    return;
  }
  const since = params.get('since') || '30d';
  let vr;
  try {
    vr = await api(`/api/v1/versions?${new URLSearchParams({ task, since })}`);
  } catch (err) {
    show(el, errorHTML(err, 'versions'));
    return;
  }
  const versions = ((vr.tasks || [])[0] || {}).versions || [];
  const versionsHTML = tableHTML([
    { key: 'fp', label: 'Version', html: (v) => html`<span class="mono">${v.fingerprint}</span>` },
    { key: 'config', label: 'Configuration', wrap: true, html: (v) => configHTML(v.config) },
    { key: 'runs', label: 'Runs', num: true, html: (v) => num(v.runs) },
    { key: 'first', label: 'First seen', html: (v) => timeHTML(v.first_seen) },
    { key: 'last', label: 'Last seen', html: (v) => timeHTML(v.last_seen) },
    { key: 'rate', label: 'Pass rate', num: true, html: (v) => (v.pass_rate == null ? '—' : html`${pct(v.pass_rate)} <small class="muted">${num(v.passed)}/${num(v.graded)}</small>`) },
    { key: 'cost', label: 'Cost / run', num: true, html: (v) => usd(v.cost_per_run) },
    { key: 'p95', label: 'p95 duration', num: true, html: (v) => fmtMs(v.p95_duration_ms) },
  ], versions, null, { id: 'versions-table', rowAttrs: (v) => html` data-fingerprint="${v.fingerprint}"` });
  // Compare what the URL names, else the newest version with the one before it.
  const a = params.get('a') || (versions[1] || {}).fingerprint;
  const b = params.get('b') || (versions[0] || {}).fingerprint;
  if (!a || !b) {
    show(el, html`<p class="muted">${versions.length} version${versions.length === 1 ? '' : 's'} in the last ${since}: nothing to compare yet.</p>${versionsHTML}`);
    return;
  }
  let c;
  try {
    c = await api(`/api/v1/compare?${new URLSearchParams({ task, since, a, b })}`);
  } catch (err) {
    show(el, html`${errorHTML(err, 'comparison')}${versionsHTML}`);
    return;
  }
  const fmtOf = (m) => METRIC_FMT[m.metric] || num;
  const val = (m, v) => (v == null ? '—' : fmtOf(m)(v));
  const change = (m) => {
    if (m.diff == null) return '—';
    const rel = m.relative == null ? '' : ` (${m.relative > 0 ? '+' : ''}${(m.relative * 100).toFixed(1)}%)`;
    const d = /rate|pass_hat/.test(m.metric) ? `${m.diff > 0 ? '+' : ''}${(m.diff * 100).toFixed(1)} pts` : `${m.diff > 0 ? '+' : ''}${fmtOf(m)(m.diff)}`;
    return html`<span class="${m.worse ? 'chg up' : 'chg down'}">${d}${rel}</span>`;
  };
  const verdict = (m) => {
    if (m.test === 'none' || m.p_value == null) return html`<span class="muted">no test</span>`;
    if (!m.significant) return html`<span class="muted" data-verdict="noise">within noise</span>`;
    return m.worse ? html`<span class="pill error" data-verdict="worse">worse</span>` : html`<span class="pill ok" data-verdict="better">better</span>`;
  };
  const side = (s, name) => html`<div class="stat"><dt>${name}: <span class="mono">${s.fingerprint || html`${timeHTML(s.since)} – ${timeHTML(s.until)}`}</span></dt><dd>${num(s.runs)} runs, ${num(s.passed)}/${num(s.graded)} passed<br><small>${configHTML(s.config)}</small></dd></div>`;
  show(el, html`<dl class="stats sides" id="compare-sides">${side(c.a, 'A')}${side(c.b, 'B')}</dl>
${tableHTML([
    { key: 'metric', label: 'Metric', html: (m) => METRIC_LABEL[m.metric] || m.metric },
    { key: 'a', label: 'A', num: true, html: (m) => val(m, m.a) },
    { key: 'b', label: 'B', num: true, html: (m) => val(m, m.b) },
    { key: 'change', label: 'B − A', num: true, html: change },
    { key: 'p', label: 'p', title: 'p-value of the test: below 0.05 is beyond noise', num: true, html: (m) => (m.p_value == null ? '—' : m.p_value.toPrecision(3)) },
    { key: 'test', label: 'Test', html: (m) => (m.test === 'fisher_exact' ? "Fisher's exact" : m.test === 'mann_whitney' ? 'Mann–Whitney U' : '—') },
    { key: 'verdict', label: 'Verdict', html: verdict },
  ], c.metrics, null, { id: 'compare-table', rowAttrs: (m) => html` data-metric="${esc(m.metric)}"` })}
<h2>Versions in the last ${since}</h2>${versionsHTML}`);
}
