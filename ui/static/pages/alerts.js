// The alerts page, the loaded rules and the firing badge in the navigation.

import { append, esc, html, join, show } from '../lib/html.js';
import { api, errorHTML, listOf } from '../lib/api.js';
import { fmtMs, goDuration, num, parseTime, pct, shortID, timeHTML, usd } from '../lib/format.js';
import { setupRangeForm } from '../lib/range.js';
import { tableHTML } from '../lib/table.js';

export function alertValue(kind, v) {
  if (v == null) return '—';
  if (/_rate$/.test(kind)) return pct(v);
  if (/latency/.test(kind)) return fmtMs(v);
  if (kind === 'run_cost') return usd(v);
  return num(Math.round(v * 100) / 100);
}

export async function pageAlerts() {
  const params = new URLSearchParams(location.search);
  setupRangeForm(document.getElementById('range'), params);
  const el = document.getElementById('alerts');
  let body;
  try {
    body = await api('/api/v1/alerts');
  } catch (err) {
    show(el, errorHTML(err, 'Alerts'));
    return;
  }
  const want = params.get('state');
  const all = listOf(body, 'alerts').filter((a) => a.state !== 'inactive' && (!want || a.state === want));
  // The loaded rules, with thresholds, severity and their alerts' states.
  let rules = [];
  try {
    rules = listOf(await api('/api/v1/alerts/rules'), 'rules');
  } catch { /* an older server: the alerts alone */ }
  const rulesHTML = rules.length ? html`<h2>Rules (${rules.length})</h2>${tableHTML([
    { key: 'name', label: 'Rule', html: (r) => html`${esc(r.name)} <span class="muted">${esc(r.kind)}</span>${r.description ? html`<div class="muted">${esc(r.description)}</div>` : ''}` },
    { key: 'threshold', label: 'Threshold', num: true, html: (r) => (r.kind === 'cache_read_zero' ? '—' : alertValue(r.kind, r.threshold)) },
    { key: 'window', label: 'Window', html: (r) => esc(goDuration(r.window)) },
    { key: 'for', label: 'For', html: (r) => esc(goDuration(r['for'])) },
    { key: 'severity', label: 'Severity', html: (r) => esc(r.severity) },
    { key: 'state', label: 'Now', html: (r) => html`${r.firing ? html`<span class="pill firing">${num(r.firing)} firing</span> ` : ''}${r.pending ? html`<span class="pill pending">${num(r.pending)} pending</span>` : ''}${!r.firing && !r.pending ? html`<span class="muted">ok</span>` : ''}` },
    { key: 'runbook', label: 'Runbook', html: (r) => (r.runbook_url ? html`<a href="${esc(safeURL(r.runbook_url))}" rel="noopener">runbook</a>` : html`<span class="muted">—</span>`) },
  ], rules, null, { id: 'alert-rules', rowAttrs: (r) => html` data-rule="${esc(r.name)}"` })}` : '';
  const historyHTML = await alertHistory(params);
  if (!all.length) {
    show(el, html`<p class="empty" data-empty>No ${want ? `${want} ` : ''}alerts. Alert rules (retry rate, latency, cache misses, run cost, repeat loops) are evaluated by <code>tally serve</code>; see <code>tally alerts check</code>.</p>${historyHTML}${rulesHTML}`);
    return;
  }
  const order = ['firing', 'pending', 'resolved'];
  const subject = (a) => Object.entries(a.labels || {}).filter(([k]) => k !== 'alertname' && k !== 'severity').map(([k, v]) => `${k}=${v}`).join(' ');
  const when = (a) => (a.state === 'resolved' ? a.resolved_at : a.state === 'firing' ? a.fired_at || a.active_at : a.active_at);
  const cols = [
    { key: 'state', label: 'State', html: (a) => html`<span class="pill ${esc(a.state)}">${esc(a.state)}</span>` },
    { key: 'rule', label: 'Rule', html: (a) => html`${esc(a.rule)} <span class="muted">${esc(a.kind)}</span>` },
    { key: 'subject', label: 'Subject', wrap: true, html: (a) => html`<span class="mono">${esc(subject(a))}</span>` },
    { key: 'value', label: 'Value', num: true, html: (a) => alertValue(a.kind, a.value) },
    { key: 'threshold', label: 'Threshold', num: true, html: (a) => (a.kind === 'cache_read_zero' ? '—' : alertValue(a.kind, a.threshold)) },
    { key: 'samples', label: 'Samples', num: true, html: (a) => num(a.samples) },
    { key: 'since', label: 'In state', title: 'how long since it resolved, fired or started pending', html: (a) => html`${fmtMs(Date.now() - parseTime(when(a)))} <div class="muted">${timeHTML(when(a))}</div>` },
    { key: 'summary', label: 'Summary', wrap: true, html: (a) => esc((a.annotations || {}).summary || (a.annotations || {}).description || '') },
    { key: 'runs', label: 'Example runs', wrap: true, html: (a) => html`${join((a.example_run_ids || []).map((id) => html`<a class="mono" href="/runs/${esc(id)}">${shortID(id)}</a>`), ' ')}${a.generator_url ? html` <a class="all-runs" href="${esc(sameOriginPath(a.generator_url))}">all matching runs</a>` : ''}` },
  ];
  show(el, html`${order.map((st) => {
    const list = all.filter((a) => a.state === st);
    if (!list.length) return '';
    return html`<h2>${st[0].toUpperCase() + st.slice(1)} (${list.length})</h2>${tableHTML(cols, list, null, { id: `alerts-${st}` })}`;
  })}${historyHTML}${rulesHTML}`);
}

/**
 * alertHistory draws the alerts that fired in the page's time range
 * (GET /api/v1/alerts/history; default the last 7 days): when each fired
 * and resolved, for how long, and the value it fired at.
 */
async function alertHistory(params) {
  const q = new URLSearchParams({ since: params.get('since') || '7d' });
  if (params.get('until')) q.set('until', params.get('until'));
  let rep;
  try {
    rep = await api(`/api/v1/alerts/history?${q}`);
  } catch (err) {
    return errorHTML(err, 'alert history');
  }
  const eps = rep.episodes || [];
  if (!eps.length) return html`<h2>History</h2><p class="muted" id="alert-history-empty">No alert fired since ${timeHTML(rep.since)}.</p>`;
  const subject = (ep) => Object.entries(ep.labels || {}).filter(([k]) => !['alertname', 'severity', 'project'].includes(k)).map(([k, v]) => `${k}=${v}`).join(' ');
  return html`<h2>History (${eps.length} since ${timeHTML(rep.since)})</h2>${tableHTML([
    { key: 'fired', label: 'Fired', html: (ep) => timeHTML(ep.fired_at) },
    { key: 'resolved', label: 'Resolved', html: (ep) => (ep.resolved_at ? timeHTML(ep.resolved_at) : html`<span class="pill firing">still firing</span>`) },
    { key: 'for', label: 'For', num: true, html: (ep) => fmtMs(ep.duration_s * 1000) },
    { key: 'rule', label: 'Rule', html: (ep) => html`${esc(ep.rule)} <span class="muted">${esc(ep.severity)}</span>` },
    { key: 'subject', label: 'Subject', wrap: true, html: (ep) => html`<span class="mono">${esc(subject(ep))}</span>` },
    { key: 'value', label: 'Fired at', title: 'the measurement when it fired', num: true, html: (ep) => alertValue(ep.kind, ep.fired_value) },
    { key: 'threshold', label: 'Threshold', num: true, html: (ep) => (ep.kind === 'cache_read_zero' ? '—' : alertValue(ep.kind, ep.threshold)) },
    { key: 'summary', label: 'Summary', wrap: true, html: (ep) => esc(ep.summary || '') },
  ], eps, null, { id: 'alert-history', rowAttrs: (ep) => html` data-rule="${esc(ep.rule)}"` })}`;
}

/** safeURL keeps http(s) links only (a rules file's runbook URL). */
export function safeURL(u) {
  try {
    const url = new URL(u, location.origin);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : '#';
  } catch { return '#'; }
}

/**
 * sameOriginPath turns an alert's generator URL (built from the server's
 * --external-url) into a path on this origin, so the link works whatever
 * name the UI was reached by.
 */
export function sameOriginPath(u) {
  try {
    const url = new URL(u, location.origin);
    return url.pathname + url.search;
  } catch { return '/runs'; }
}

/** navBadge marks the Alerts link with the number of firing alerts. */
export async function navBadge() {
  const link = document.querySelector('header.top nav a[href="/alerts"]');
  if (!link) return;
  try {
    const n = listOf(await api('/api/v1/alerts?state=firing'), 'alerts').length;
    if (n > 0) append(link, html` <span class="nav-badge" id="nav-firing" title="${n} alert${n === 1 ? '' : 's'} firing">${n}</span>`);
  } catch { /* alerting off (501) or the API unreachable: no badge */ }
}
