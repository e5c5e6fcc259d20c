// The cache page: verdicts per agent and model, runs that never hit.

import { esc, html, join, show } from '../lib/html.js';
import { api, errorHTML } from '../lib/api.js';
import { num, pct, shortID, timeHTML } from '../lib/format.js';
import { copyParams, rangeText, setupRangeForm } from '../lib/range.js';
import { tableHTML } from '../lib/table.js';

export async function pageCache() {
  const params = new URLSearchParams(location.search);
  setupRangeForm(document.getElementById('range'), params);
  const el = document.getElementById('cache');
  let rep;
  try {
    rep = await api(`/api/v1/cache?${copyParams(params, ['since', 'until'], { since: '24h' })}`);
  } catch (err) {
    show(el, errorHTML(err, 'Cache health'));
    return;
  }
  if (rep.since) document.getElementById('cache-range').textContent = rangeText(rep.since, rep.until);
  const groups = rep.groups || [];
  if (!groups.length) {
    show(el, html`<p class="empty" data-empty>No inference calls in this time range.</p>`);
    return;
  }
  const runsLink = (g) => `/runs?${new URLSearchParams({ agent: g.agent, model: g.model, ...(params.get('since') ? { since: params.get('since') } : {}) })}`;
  const cols = [
    { key: 'agent', label: 'Agent', html: (g) => (g.agent ? esc(g.agent) : html`<span class="muted">(none)</span>`) },
    { key: 'model', label: 'Model', html: (g) => html`<span class="mono">${esc(g.model)}</span>` },
    { key: 'provider', label: 'Provider', html: (g) => esc(g.provider) },
    { key: 'verdict', label: 'Verdict', html: (g) => html`<span class="pill ${esc(g.verdict)}">${esc(String(g.verdict).replace(/_/g, ' '))}</span>` },
    { key: 'hit', label: 'Hit ratio', title: 'eligible cache-read tokens / eligible input tokens', num: true, html: (g) => pct(g.hit_ratio) },
    { key: 'calls', label: 'Calls', num: true, html: (g) => num(g.calls) },
    { key: 'eligible', label: 'Cacheable', title: `calls whose prompt reaches the model's minimum cacheable prefix`, num: true, html: (g) => num(g.eligible_calls) },
    { key: 'prefix', label: 'Min prefix', num: true, html: (g) => html`<span title="${esc(g.prefix_source)}">${num(g.min_prefix_tokens)}</span>` },
    { key: 'in', label: 'Input', num: true, html: (g) => num(g.input_tokens) },
    { key: 'cr', label: 'Cache read', num: true, html: (g) => num(g.cache_read_tokens) },
    { key: 'cw', label: 'Cache write', num: true, html: (g) => num(g.cache_write_tokens) },
    { key: 'runs', label: 'Runs', html: (g) => html`<a href="${esc(runsLink(g))}"${g.verdict === 'never_hit' ? ' data-never-hit' : ''}>runs »</a>${g.never_hit_runs ? html` <span class="muted">${num(g.never_hit_runs)} never hit</span>` : ''}` },
  ];
  const never = rep.never_hit_runs || [];
  // Every never_hit group names its latest runs with cacheable calls, even
  // when each run makes too few calls to be judged on its own.
  const examples = groups.filter((g) => g.verdict === 'never_hit' && (g.example_run_ids || []).length);
  const examplesHTML = examples.length ? html`<h2>Runs to open</h2><ul id="never-hit-examples">${examples.map((g) =>
    html`<li data-agent="${esc(g.agent)}" data-model="${esc(g.model)}"><strong>${g.agent || '(none)'}</strong> on <span class="mono">${esc(g.model)}</span>, latest runs with cacheable calls and no cache read: ${
      join(g.example_run_ids.map((id) => html`<a class="mono" href="/runs/${esc(id)}" data-trace-id="${esc(id)}">${shortID(id)}</a>`), ' ')}</li>`)}</ul>` : '';
  show(el, html`${groups.some((g) => g.verdict === 'never_hit') ? html`<p class="notice error" role="status"><strong>Silent cache misses:</strong> some agent × model pairs send cacheable prompts but never read from the cache — often a timestamp or id at the start of the prompt invalidates it.</p>` : ''}
${tableHTML(cols, groups, null, { id: 'cache-table', rowAttrs: (g) => html` data-verdict="${esc(g.verdict)}"` })}
<p class="muted">never_hit: at least ${num(rep.thresholds?.min_eligible_calls)} cacheable calls and zero cache reads. Default minimum prefix ${num(rep.thresholds?.default_min_prefix_tokens)} tokens.</p>
${examplesHTML}
${never.length ? html`<h2>Runs that never hit the cache${rep.runs_truncated ? ' (first ones)' : ''}</h2>${tableHTML([
    { key: 'start', label: 'Start', html: (r) => html`<a href="/runs/${esc(r.trace_id)}">${timeHTML(r.start)}</a>` },
    { key: 'task', label: 'Task', html: (r) => esc(r.task) },
    { key: 'agents', label: 'Agents', html: (r) => esc((r.agents || []).join(', ')) },
    { key: 'models', label: 'Models', html: (r) => esc((r.models || []).join(', ')) },
    { key: 'eligible', label: 'Cacheable calls', num: true, html: (r) => num(r.eligible_calls) },
    { key: 'in', label: 'Input', num: true, html: (r) => num(r.input_tokens) },
  ], never, null, { id: 'never-hit-runs' })}` : ''}`);
}
