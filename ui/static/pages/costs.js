// The costs page: spend over time, the change against the period before, tables by dimension.

import { esc, html, join, show } from '../lib/html.js';
import { api, errorHTML } from '../lib/api.js';
import { PALETTE, stackedBars } from '../lib/charts.js';
import { moneyHTML, num, parseTime, pct, shortID, timeHTML, usd } from '../lib/format.js';
import { copyParams, parseRange, rangeText, setupRangeForm } from '../lib/range.js';
import { tableHTML } from '../lib/table.js';
import { confidenceHTML } from '../lib/vocab.js';

export const BUCKET_MS = { minute: 6e4, hour: 36e5, day: 864e5 };

// TABLE_GROUPS is the most groups a cost table lists unless the page's
// ?limit= says otherwise (the API's limit): the rest are one row, "N
// others". A day of a busy deployment has hundreds of thousands of
// conversations.
export const TABLE_GROUPS = 100;

export async function pageCosts() {
  const params = new URLSearchParams(location.search);
  setupRangeForm(document.getElementById('range'), params);
  const el = document.getElementById('costs');
  const { from, to } = parseRange(params.get('since'), params.get('until'), '24h');
  let bucket = params.get('bucket');
  if (!bucket) bucket = to - from <= 3 * 36e5 ? 'minute' : to - from <= 4 * 864e5 ? 'hour' : 'day';
  if (bucket === 'minute' && to - from > 864e5) bucket = 'hour';
  const base = copyParams(params, ['since', 'until', 'agent', 'service', 'user'], { since: '24h' });
  // ?limit= lists more (or fewer) groups a table.
  const groups = Math.min(Math.max(Math.trunc(Number(params.get('limit'))) || TABLE_GROUPS, 1), 100000);
  const q = (by, withBucket) => {
    const p = new URLSearchParams(base);
    p.set('by', by);
    p.set('compare', 'previous');
    p.set('limit', String(groups));
    if (withBucket) p.set('bucket', bucket);
    return `/api/v1/costs?${p}`;
  };
  // Every dimension the API groups by, each against the previous period.
  const DIMS = ['agent', 'model', 'task', 'provider', 'tool', 'service', 'user', 'conversation'];
  let reports, top;
  try {
    const topQ = new URLSearchParams(base);
    topQ.delete('user'); // the run list has no user filter
    topQ.set('sort', 'cost');
    topQ.set('limit', '10');
    [reports, top] = await Promise.all([Promise.all(DIMS.map((d, i) => api(q(d, i === 0)))), api(`/api/v1/runs?${topQ}`)]);
  } catch (err) {
    show(el, errorHTML(err, 'Cost reports'));
    return;
  }
  const agent = reports[0];
  document.getElementById('cost-range').textContent = rangeText(agent.since, agent.until);
  const t = agent.total;
  if (!t.spans) {
    show(el, html`<p class="empty" data-empty>No spans in this time range. Widen the range, or send traces: see <a href="/runs">Runs</a> for how to point an OTel SDK at tally.</p>`);
    return;
  }
  const step = BUCKET_MS[agent.bucket || bucket];
  const keys = agent.groups.slice(0, PALETTE.length - 1).map((g) => g.key);
  const other = agent.groups.length > keys.length || !!agent.others;
  const byTime = new Map();
  for (const g of agent.others ? [...agent.groups, { ...agent.others, key: 'other' }] : agent.groups) {
    const key = keys.includes(g.key) ? g.key : 'other';
    for (const p of g.series || []) {
      const tt = parseTime(p.time);
      if (!byTime.has(tt)) byTime.set(tt, new Map());
      const m = byTime.get(tt);
      m.set(key, (m.get(key) || 0) + p.cost.total_usd);
    }
  }
  const allKeys = other ? [...keys, 'other'] : keys;
  const buckets = [...byTime.entries()].sort((a, b) => a[0] - b[0]).map(([tt, m]) => ({ t: tt, parts: allKeys.map((k) => ({ key: k, value: m.get(k) || 0 })) }));
  const unmatched = (agent.unmatched || []);
  show(el, html`
<dl class="stats">
  <div class="stat"><dt>Total spend</dt><dd class="bignum">${moneyHTML(t.cost.total_usd, 'cost-total')}</dd>${agent.previous ? html`<dd id="cost-change" title="the same length just before: ${esc(rangeText(agent.previous.since, agent.previous.until))}">${changeHTML(t.cost.total_usd, agent.previous.total.cost.total_usd)} <small>vs ${usd(agent.previous.total.cost.total_usd)} before</small></dd>` : ''}</div>
  <div class="stat"><dt>LLM calls</dt><dd>${num(t.llm_calls)}</dd></div>
  <div class="stat"><dt>Input tokens</dt><dd>${num(t.usage.input_tokens)}</dd></div>
  <div class="stat"><dt>Cache read</dt><dd>${num(t.usage.cache_read_tokens)}</dd></div>
  <div class="stat"><dt>Cache hit ratio</dt><dd title="cache-read tokens / input tokens">${pct(t.usage.input_tokens ? t.usage.cache_read_tokens / t.usage.input_tokens : null)}</dd></div>
  <div class="stat"><dt>Output tokens</dt><dd>${num(t.usage.output_tokens)}</dd></div>
  <div class="stat"><dt title="cost of inference inside failed or retried tool-call attempts">Retry tax</dt><dd>${moneyHTML(t.retry_tax_usd)}</dd></div>
  <div class="stat"><dt title="the share of spend whose spans' costs are exact: the rest is an upper or lower bound, corrected, approximate, or stored before tally rated costs">Exact spend</dt><dd id="cost-exact" title="${esc(confidenceBreakdown(t))}">${pct(t.cost.total_usd ? (t.cost_by_confidence?.exact_usd || 0) / t.cost.total_usd : null)}</dd></div>
  <div class="stat"><dt>Unpriced spans</dt><dd>${t.unpriced_spans ? html`<span class="pill warn">${num(t.unpriced_spans)}</span>` : '0'}</dd></div>
</dl>
${unmatched.length ? html`<div class="notice warn" id="unmatched" role="status"><strong>${unmatched.length} model${unmatched.length === 1 ? '' : 's'} matched no price entry:</strong> their usage is counted but their cost is missing from these figures. Add them with <code>tally serve --prices prices.yaml</code>.
<ul>${unmatched.map((u) => html`<li><code>${esc(u.provider)}/${esc(u.model)}</code>: ${num(u.spans)} spans, ${num(u.input_tokens)} input and ${num(u.output_tokens)} output tokens</li>`)}</ul></div>` : ''}
<section class="panel" aria-labelledby="spend-h"><h2 id="spend-h">Spend per ${esc(agent.bucket || bucket)} by agent (USD)</h2>${stackedBars(buckets, { from, to, step, fmt: usd, unit: 'USD', keys: allKeys })}</section>
<section class="panel" aria-labelledby="top-h"><h2 id="top-h">Top runs by cost${params.get('user') ? html` <small class="muted">(the run list has no user filter: all users)</small>` : ''}</h2>${(top.runs || []).length ? html`${tableHTML([
    { key: 'trace', label: 'Run', html: (r) => html`<a class="mono" href="/runs/${esc(r.trace_id)}" title="${esc(r.trace_id)}">${shortID(r.trace_id)}</a>` },
    { key: 'task', label: 'Task', html: (r) => esc(r.task) },
    { key: 'agents', label: 'Agents', wrap: true, html: (r) => esc((r.agents || []).join(', ')) },
    { key: 'start', label: 'Started', html: (r) => timeHTML(r.start) },
    { key: 'cost', label: 'Cost', num: true, html: (r) => html`${moneyHTML(r.cost.total_usd)}${confidenceHTML(r.cost_confidence)}` },
  ], top.runs, null, { id: 'top-runs', rowAttrs: (r) => html` data-trace-id="${esc(r.trace_id)}"` })}${top.next_cursor ? html`<p><a href="/runs?${copyParams(params, ['since', 'until'], { sort: 'cost', dir: 'desc' })}">All runs by cost →</a></p>` : ''}` : html`<p class="muted">No run started in this range.</p>`}</section>
<div class="grid2">
  ${DIMS.map((d, i) => costTable(d[0].toUpperCase() + d.slice(1), reports[i], d))}
</div>
<p class="muted">Figures: ${esc(agent.freshness?.rolled_up_hours ?? 0)} hour(s) from the hourly rollup, the rest live from spans.</p>`);
}

/** changeHTML is the change from before to now: "+25%", "−10%", "new" or "—". */
/** confidenceBreakdown spells out how a total's spend splits by confidence. */
function confidenceBreakdown(t) {
  const c = t.cost_by_confidence || {};
  const parts = [['exact', c.exact_usd], ['corrected', c.corrected_usd], ['upper bound', c.upper_bound_usd], ['lower bound', c.lower_bound_usd], ['approximate', c.approximate_usd]]
    .filter(([, v]) => v > 0).map(([k, v]) => `${k} ${usd(v)}`);
  const rated = (c.exact_usd || 0) + (c.corrected_usd || 0) + (c.upper_bound_usd || 0) + (c.lower_bound_usd || 0) + (c.approximate_usd || 0);
  if (t.cost.total_usd - rated > 1e-9) parts.push(`not rated (stored before tally rated costs; tally reprice rates them) ${usd(t.cost.total_usd - rated)}`);
  return parts.join(' · ');
}

export function changeHTML(now, before) {
  if (!before) return now ? html`<span class="chg up" data-change="new">new</span>` : html`<span class="muted">—</span>`;
  const r = (now - before) / before;
  const cls = r > 0.005 ? 'up' : r < -0.005 ? 'down' : 'flat';
  return html`<span class="chg ${cls}" data-change="${r.toFixed(4)}">${r > 0 ? '+' : r < 0 ? '−' : '±'}${Math.abs(r * 100).toFixed(Math.abs(r) < 0.1 ? 1 : 0)}%</span>`;
}

export function costTable(label, report, by) {
  const total = report.total.cost.total_usd || 0;
  const prev = report.previous ? new Map(report.previous.groups.map((g) => [g.key, g.cost.total_usd])) : null;
  const link = (k) => (['agent', 'model', 'task', 'tool', 'service', 'conversation'].includes(by) ? html`<a href="/runs?${new URLSearchParams({ [by]: k })}">${esc(k)}</a>` : esc(k));
  const cols = [
    { key: 'key', label, html: (g) => {
      if (!g.key) return html`<span class="muted">(none)</span>`;
      // A catalog model with the raw names the provider returned beneath it.
      const raw = g.models || [];
      if (raw.length > 1 || (raw.length === 1 && raw[0] !== g.key)) return html`${esc(g.key)}<div class="muted raw-models">${join(raw.map(link), ', ')}</div>`;
      return link(g.key);
    } },
    { key: 'cost', label: 'Cost', num: true, html: (g) => html`${moneyHTML(g.cost.total_usd)}${g.unpriced_spans ? html` <span class="pill warn" title="spans without a price">+?</span>` : ''}` },
    { key: 'share', label: 'Share', num: true, html: (g) => { const s = total ? g.cost.total_usd / total : 0; return html`<span class="share" style="width:${Math.round(s * 50)}px"></span>${pct(s)}`; } },
    ...(prev ? [{ key: 'change', label: 'vs before', title: 'change against the period of the same length just before', num: true, html: (g) => changeHTML(g.cost.total_usd, prev.get(g.key) || 0) }] : []),
    { key: 'llm', label: 'LLM calls', num: true, html: (g) => num(g.llm_calls) },
    { key: 'in', label: 'In', num: true, html: (g) => num(g.usage.input_tokens) },
    { key: 'cr', label: 'Cache read', num: true, html: (g) => num(g.usage.cache_read_tokens) },
    { key: 'out', label: 'Out', num: true, html: (g) => num(g.usage.output_tokens) },
  ];
  // A foot row: the groups past the limit added up, or the total.
  const footRow = (attrs, th, t, share, change) => html`<tr${attrs}>${th}<td class="num">${moneyHTML(t.cost.total_usd)}</td><td class="num">${share}</td>${prev ? html`<td class="num">${change}</td>` : ''}<td class="num">${num(t.llm_calls)}</td><td class="num">${num(t.usage.input_tokens)}</td><td class="num">${num(t.usage.cache_read_tokens)}</td><td class="num">${num(t.usage.output_tokens)}</td></tr>`;
  const o = report.others;
  const left = report.groups_total - report.groups.length;
  const foot = html`${o ? footRow(html` class="others" data-others="${left}"`, html`<th scope="row" class="muted">${num(left)} others</th>`, o, pct(total ? o.cost.total_usd / total : 0), '') : ''}${footRow('', html`<th scope="row">Total</th>`, report.total, '', prev ? changeHTML(total, report.previous.total.cost.total_usd) : '')}`;
  return html`<section class="panel" aria-label="Cost by ${esc(by)}"><h2>By ${esc(by)}</h2>${tableHTML(cols, report.groups, null, { id: `cost-by-${by}`, rowHeader: true, foot })}</section>`;
}
