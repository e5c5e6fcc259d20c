// The explore page: a metrics query's series as a chart and its
// whole-window figures as a table.

import { esc, html, show } from '../lib/html.js';
import { aborted, api, errorHTML } from '../lib/api.js';
import { fmtMs, num, usd } from '../lib/format.js';
import { lineChart } from '../lib/charts.js';
import { copyParams, setupRangeForm } from '../lib/range.js';
import { tableHTML } from '../lib/table.js';
import { errorAtHTML, searchHref, setupQueryBar, setupSaved, sqlHTML } from '../lib/search.js';

/** formatFor formats values of a unit as the other pages do. */
function formatFor(unit) {
  switch (unit) {
    case 's': return (v) => fmtMs(v * 1000);
    case 'USD': return (v) => usd(v);
    case 'spans/s': return (v) => `${num(Number(v.toPrecision(3)))}/s`;
    default: return (v) => num(Number(v.toPrecision(6)));
  }
}

/** seriesKey names a series by its labels. */
const seriesKey = (s) => Object.entries(s.labels || {}).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${v}`).join(', ') || 'all spans';

export async function pageExplore() {
  const params = new URLSearchParams(location.search);
  const form = document.getElementById('filters');
  setupRangeForm(form, params);
  const input = document.getElementById('query');
  setupQueryBar(input, document.getElementById('query-suggest'),
    () => copyParams(new URLSearchParams(location.search), ['since', 'until']));
  setupSaved(input, '/explore');
  const el = document.getElementById('explore');
  const query = params.get('query');
  if (!query) return;
  const apiParams = copyParams(params, ['since', 'until', 'step']);
  apiParams.set('q', query);
  apiParams.set('sql', '1');
  let res;
  try {
    res = await api(`/api/v1/search?${apiParams}`);
  } catch (err) {
    if (aborted(err)) return;
    show(el, err.position != null ? errorAtHTML(query, err.position, err.message) : errorHTML(err, 'metrics'));
    return;
  }
  if (res.kind !== 'metrics') {
    show(el, html`<p class="notice" data-runs-query>This query finds runs: <a href="${searchHref(query, params)}">see them on the Runs page</a>, or end it with a metrics function such as <code>| rate()</code>.</p>`);
    return;
  }
  const fmt = formatFor(res.unit);
  const from = Date.parse(res.start), to = Date.parse(res.end);
  const series = res.series.map((s) => ({ key: seriesKey(s), points: s.points.map((p) => ({ t: Date.parse(p.t), v: p.v })), total: s.total, labels: s.labels }));
  const notes = [];
  if (res.truncated) notes.push(html`<p class="notice warn">More series matched than an answer holds: those with the largest totals are shown.</p>`);
  if (res.partial) notes.push(html`<p class="notice warn" data-partial>Evaluated over the first ${num(res.examined)} runs with candidate spans only (the examined-runs limit).</p>`);
  if (!series.length) {
    show(el, html`${notes}<p class="empty" data-empty>No span matched in this window.</p>`);
    return;
  }
  const cols = [
    { key: 'series', label: 'Series', html: (s) => esc(s.key) },
    { key: 'total', label: `${res.fn} over the window`, num: true, html: (s) => html`<span data-total="${s.total}">${fmt(s.total)}</span>` },
    { key: 'points', label: 'Steps with spans', num: true, html: (s) => num(s.points.length) },
  ];
  show(el, html`${notes}<section><h2>${esc(res.fn)} <span class="muted">(${esc(res.unit || 'value')}, step ${fmtMs(res.step_seconds * 1000)}${res.in_sql ? '' : ', evaluated over the matching runs'})</span></h2>
${lineChart(series, { from, to, step: res.step_seconds * 1000, fmt, unit: res.unit || res.fn })}</section>
<section><h2>Table</h2>${tableHTML(cols, series, null, { id: 'series-table', caption: 'Series' })}</section>${sqlHTML(res.sql)}`);
}
