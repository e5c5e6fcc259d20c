// The tools page: retry and error rates, latency percentiles, alert thresholds.

import { esc, html, join, show } from '../lib/html.js';
import { api, errorHTML, listOf } from '../lib/api.js';
import { hbars } from '../lib/charts.js';
import { fmtMs, num, pct, shortID } from '../lib/format.js';
import { copyParams, rangeText, setupRangeForm } from '../lib/range.js';
import { sortRows, tableHTML, wireSort } from '../lib/table.js';
import { STATUSES, STATUS_PILL, effectPill } from '../lib/vocab.js';

/**
 * thresholdsFrom reads the alert thresholds of a kind per subject: each
 * loaded rule's threshold for every subject ('*') and its overrides' for
 * theirs (GET /alerts/rules), then what live alerts measured against.
 */
export function thresholdsFrom(rules, alerts, kind, label) {
  const out = new Map();
  for (const r of rules) {
    if (r.kind !== kind) continue;
    if (r.threshold != null) out.set('*', r.threshold);
    for (const o of r.overrides || []) if (o[label] && o.threshold != null) out.set(o[label], o.threshold);
  }
  for (const a of alerts) if (a.kind === kind && a.labels && a.labels[label]) out.set(a.labels[label], a.threshold);
  return out;
}

/** statusHTML lists a tool's steps by terminal status, ok first, zeros left out. */
function statusHTML(t) {
  if (!t) return '—';
  return join(STATUSES.filter((s) => (t.statuses || {})[s]).map((s) => html`<span class="pill ${STATUS_PILL[s]}" data-status="${s}">${s} ${num(t.statuses[s])}</span>`), ' ');
}

export async function pageTools() {
  const params = new URLSearchParams(location.search);
  setupRangeForm(document.getElementById('range'), params);
  const el = document.getElementById('tools');
  const qs = copyParams(params, ['since', 'until'], { since: '24h' });
  let body;
  try {
    body = await api(`/api/v1/tools?${qs}`);
  } catch (err) {
    show(el, errorHTML(err, 'Tool statistics'));
    return;
  }
  // The thresholds: the loaded rules, and the alerts under way (an older
  // server without either draws none).
  let rules = [], alerts = [];
  try { rules = listOf(await api('/api/v1/alerts/rules'), 'rules'); } catch { /* no rules endpoint */ }
  try { alerts = listOf(await api('/api/v1/alerts'), 'alerts'); } catch { /* alerting off */ }
  // Each tool's effect class and steps by terminal status: the safety
  // review of the same range, drawn when it arrives (the table does not
  // wait for it; an older server without it shows none).
  const review = new Map();
  const reviewed = api(`/api/v1/signals?${qs}`).then((sig) => { for (const t of sig.tools || []) review.set(t.tool, t); }, () => {});
  const tools = listOf(body, 'tools');
  if (body && body.since) document.getElementById('tools-range').textContent = rangeText(body.since, body.until);
  if (!tools.length) {
    show(el, html`<p class="empty" data-empty>No tool calls in this time range. Tool calls are spans with <code>gen_ai.operation.name = execute_tool</code> and <code>gen_ai.tool.name</code>.</p>`);
    return;
  }
  const retryT = thresholdsFrom(rules, alerts, 'tool_retry_rate', 'tool');
  const errT = thresholdsFrom(rules, alerts, 'tool_error_rate', 'tool');
  const latT = thresholdsFrom(rules, alerts, 'tool_latency_p95', 'tool');
  const th = (m, tool) => (m.has(tool) ? m.get(tool) : m.has('*') ? m.get('*') : null);
  const cols = [
    { key: 'tool', label: 'Tool', value: (t) => t.tool, html: (t) => html`<button type="button" class="link" data-tool="${esc(t.tool)}" aria-expanded="false">${esc(t.tool)}</button>` },
    { key: 'effect', label: 'Effect', title: 'what a call can do to the world (--tool-effects, tally.tool.effect)', value: (t) => (review.get(t.tool) || {}).effect || 'unknown', html: (t) => effectPill((review.get(t.tool) || {}).effect || 'unknown') },
    { key: 'calls', label: 'Calls', num: true, value: (t) => t.calls, html: (t) => num(t.calls) },
    { key: 'errors', label: 'Errors', num: true, value: (t) => t.errors, html: (t) => num(t.errors) },
    { key: 'error_rate', label: 'Error rate', num: true, value: (t) => t.error_rate, html: (t) => rateHTML(t.error_rate, th(errT, t.tool)) },
    { key: 'retries', label: 'Retries', num: true, value: (t) => t.retries, html: (t) => num(t.retries) },
    { key: 'retry_rate', label: 'Retry rate', num: true, value: (t) => t.retry_rate, html: (t) => rateHTML(t.retry_rate, th(retryT, t.tool)) },
    { key: 'repeats', label: 'Repeats', title: 'identical arguments after a success (loop signal)', num: true, value: (t) => t.repeats, html: (t) => num(t.repeats) },
    { key: 'status', label: 'Ended', title: `steps by terminal status: ${STATUSES.join(', ')} (ambiguous: a timeout or a 5xx)`, wrap: true, html: (t) => statusHTML(review.get(t.tool)) },
    { key: 'p50', label: 'p50', num: true, value: (t) => t.p50_ms, html: (t) => fmtMs(t.p50_ms) },
    { key: 'p95', label: 'p95', num: true, value: (t) => t.p95_ms, html: (t) => { const x = th(latT, t.tool); return x != null && t.p95_ms > x ? html`<span class="pill error" title="above the alert threshold ${fmtMs(x)}">${fmtMs(t.p95_ms)}</span>` : fmtMs(t.p95_ms); } },
    { key: 'p99', label: 'p99', num: true, value: (t) => t.p99_ms, html: (t) => fmtMs(t.p99_ms) },
  ];
  const state = { sort: 'calls', dir: 'desc' };
  const rows = tools.slice();
  const chartRows = (f, m) => rows.map((t) => ({ label: t.tool, value: f(t) || 0, threshold: th(m, t.tool) }));
  const render = () => {
    sortRows(rows, cols, state);
    show(el, html`<div class="grid2">
<section class="panel">${hbars(chartRows((t) => t.retry_rate, retryT), { fmt: pct, title: 'Retry rate (dashed: alert threshold)' })}</section>
<section class="panel">${hbars(chartRows((t) => t.p95_ms, latT), { fmt: fmtMs, title: 'p95 latency (dashed: alert threshold)' })}</section>
</div>
${retryT.size || latT.size || errT.size ? '' : html`<p class="muted">No tool alert rules loaded: no thresholds to draw.</p>`}
${tableHTML(cols, rows, state, { id: 'tools-table', rowAttrs: (t) => html` data-tool="${esc(t.tool)}"` })}
<p class="muted">Select a tool to list example runs.${body.definitions && body.definitions.retry ? html` ${esc(body.definitions.retry)}` : ''}</p>
${modelsHTML(listOf(body, 'models'), thresholdsFrom(rules, alerts, 'model_latency_p95', 'model'))}`);
  };
  render();
  wireSort(el, state, render);
  reviewed.then(() => { render(); el.dataset.review = 'loaded'; });
  el.addEventListener('click', (ev) => {
    const b = ev.target.closest('button[data-tool]');
    if (!b) return;
    const tr = b.closest('tr');
    const next = tr.nextElementSibling;
    if (next && next.classList.contains('examples')) {
      next.remove();
      b.setAttribute('aria-expanded', 'false');
      return;
    }
    const t = rows.find((x) => x.tool === b.dataset.tool);
    const links = (ids) => (ids || []).length ? join(ids.map((id) => html`<a class="mono" href="/runs/${esc(id)}">${shortID(id)}</a>`), ' ') : html`<span class="muted">none</span>`;
    const ex = document.createElement('tr');
    ex.className = 'examples';
    show(ex, html`<td colspan="${cols.length}"><strong>Retried:</strong> ${links(t.retried_runs)} &nbsp; <strong>Failed:</strong> ${links(t.failed_runs)} &nbsp; <strong>Slowest:</strong> ${links(t.slowest_runs)}</td>`);
    tr.after(ex);
    b.setAttribute('aria-expanded', 'true');
  });
}

/** modelsHTML lists inference latency per model, with p95 alert thresholds. */
export function modelsHTML(models, latT) {
  if (!models.length) return '';
  const th = (m) => (latT.has(m) ? latT.get(m) : latT.has('*') ? latT.get('*') : null);
  const slow = (v, x) => (x != null && v > x ? html`<span class="pill error" title="above the alert threshold ${fmtMs(x)}">${fmtMs(v)}</span>` : fmtMs(v));
  return html`<h2>Model latency</h2>${tableHTML([
    { key: 'model', label: 'Model', html: (m) => html`<span class="mono">${esc(m.model)}</span>` },
    { key: 'calls', label: 'Calls', num: true, html: (m) => num(m.calls) },
    { key: 'p50', label: 'p50', num: true, html: (m) => fmtMs(m.p50_ms) },
    { key: 'p95', label: 'p95', num: true, html: (m) => slow(m.p95_ms, th(m.model)) },
    { key: 'p99', label: 'p99', num: true, html: (m) => fmtMs(m.p99_ms) },
    { key: 'ttfc', label: 'Streamed', title: 'calls that reported time to first chunk', num: true, html: (m) => num(m.ttfc_calls) },
    { key: 'ttfc50', label: 'TTFC p50', title: 'time to first chunk', num: true, html: (m) => (m.ttfc_calls ? fmtMs(m.ttfc_p50_ms) : '—') },
    { key: 'ttfc95', label: 'TTFC p95', num: true, html: (m) => (m.ttfc_calls ? fmtMs(m.ttfc_p95_ms) : '—') },
    { key: 'slow', label: 'Slowest runs', wrap: true, html: (m) => join((m.slowest_runs || []).map((id) => html`<a class="mono" href="/runs/${esc(id)}">${shortID(id)}</a>`), ' ') },
  ], models, null, { id: 'models-table' })}`;
}

export function rateHTML(rate, threshold) {
  if (threshold != null && rate > threshold) return html`<span class="pill error" title="above the alert threshold ${pct(threshold)}">${pct(rate)}</span>`;
  return pct(rate);
}
