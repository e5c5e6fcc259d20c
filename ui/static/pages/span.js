// The selected span's detail: attributes, usage and cost, explanations and captured content.

import { esc, html, isHTML, show } from '../lib/html.js';
import { api, errorHTML } from '../lib/api.js';
import { fmtMs, moneyHTML, num, parseTime, timeHTML } from '../lib/format.js';
import { TYPE_LABEL, tokensText } from '../lib/spans.js';
import { valueHTML } from '../lib/values.js';
import { CONFIDENCE_HELP } from '../lib/vocab.js';
import { chatViewHTML } from './chat.js';
import { searchHref, tqlField, tqlString } from '../lib/search.js';

/** searchLinkHTML offers the runs where field = value (for short values). */
export function searchLinkHTML(field, value) {
  if (value == null || value === '' || String(value).length > 200) return '';
  const q = `{ ${field} = ${tqlString(value)} }`;
  return html` <a class="qlink" href="${searchHref(q)}" title="search runs where ${esc(q)}" data-search="${esc(q)}" aria-label="search runs where ${esc(q)}">⌕</a>`;
}

/** searchableKV is attribute pairs with a search link beside each value. */
function searchableKV(pairs, scope) {
  return pairs.map(([k, v]) => [k, html`${valueHTML(String(v))}${searchLinkHTML(tqlField(scope, k), v)}`, true]);
}

export function kvHTML(pairs) {
  const items = pairs.filter(([, v]) => v !== undefined && v !== null && v !== '' && v !== false);
  if (!items.length) return html`<p class="muted">none</p>`;
  return html`<dl class="kv">${items.map(([k, v, raw]) => html`<dt>${esc(k)}</dt><dd>${raw || isHTML(v) ? v : valueHTML(String(v))}</dd>`)}</dl>`;
}

export const CONTENT_LABEL = {
  'tool.arguments': 'Tool arguments', 'tool.result': 'Tool result', 'input.messages': 'Input messages',
  'output.messages': 'Output messages', system_instructions: 'System instructions', 'tool.definitions': 'Tool definitions',
};

export const contentCache = new Map();

export function showSpan(row, t0, traceID) {
  const n = row.n;
  const el = document.getElementById('detail');
  const usage = n.usage ? kvHTML([
    ['input', num(n.usage.input_tokens)], ['cache read', num(n.usage.cache_read_tokens)],
    ['cache write', num(n.usage.cache_write_tokens)], ['output', num(n.usage.output_tokens)],
    ['reasoning', num(n.usage.reasoning_tokens)], ['mode', n.usage_mode === 'aggregated' ? 'aggregated (repeats its children; not added to totals)' : n.usage_mode],
    ['unreconciled', n.usage_unreconciled ? 'yes: the reported numbers did not add up' : ''],
    ['in run totals', n.counted ? 'counted' : 'not counted (see how it was derived)'],
  ]) : html`<p class="muted">no usage</p>`;
  const cost = n.cost ? kvHTML([
    ['total', moneyHTML(n.cost.total_usd), true], ['input', moneyHTML(n.cost.input_usd), true],
    ['cache read', moneyHTML(n.cost.cache_read_usd), true], ['cache write', moneyHTML(n.cost.cache_write_usd), true],
    ['output', moneyHTML(n.cost.output_usd), true], ['source', n.cost_source],
    ['confidence', n.cost_confidence ? html`<span data-confidence="${esc(n.cost_confidence)}" id="detail-confidence">${esc(CONFIDENCE_HELP[n.cost_confidence] || n.cost_confidence)}</span>` : '', true],
    ['price entry', n.price_entry ? `${n.price_entry}${n.price_version ? ` @ ${n.price_version}` : ''}` : ''],
  ]) : html`<p class="muted">no cost</p>`;
  const events = (n.events || []).length
    ? (n.events.map((e) => html`<div class="content-item"><span class="ck">${esc(e.name)}</span> <span class="muted">+${fmtMs(parseTime(e.time) - t0)}</span>${e.attributes ? valueHTML(JSON.stringify(e.attributes), html` data-event`) : ''}</div>`))
    : html`<p class="muted">none</p>`;
  const attrs = Object.entries(n.attributes || {}).sort(([a], [b]) => a.localeCompare(b));
  const res = Object.entries(n.resource || {}).sort(([a], [b]) => a.localeCompare(b));
  show(el, html`
<h2 id="detail-name">${esc(n.name)}</h2>
<p><span class="pill muted">${TYPE_LABEL[n.type] || 'SPAN'}</span> <span class="pill ${n.status === 'error' ? 'error' : 'ok'}">${esc(n.status || 'unset')}</span>${row.retry ? html` <span class="pill pending">retry</span>` : ''}${n.orphan ? html` <span class="pill warn" title="its parent span never arrived">orphan</span>` : ''}</p>
${kvHTML([
    ['span id', html`<code>${esc(n.span_id)}</code>`, true], ['parent', n.parent_span_id ? html`<code>${esc(n.parent_span_id)}</code>` : '', true],
    ['operation', n.operation], ['kind', n.kind], ['service', n.service],
    ['start', html`${timeHTML(n.start, true)} <span class="muted">(+${fmtMs(row.start - t0)})</span>`, true],
    ['duration', fmtMs(n.duration_ms)], ['time to first chunk', n.time_to_first_chunk_ms ? fmtMs(n.time_to_first_chunk_ms) : ''],
    ['provider', n.provider ? html`${esc(n.provider)}${searchLinkHTML('provider', n.provider)}` : '', true],
    ['model', n.model ? html`${esc(n.model)}${searchLinkHTML('model', n.model)}` : '', true],
    ['request model', n.request_model !== n.model ? n.request_model : ''],
    ['agent', n.agent_name ? html`${esc(n.agent_name)}${searchLinkHTML('agent', n.agent_name)}` : '', true],
    ['tool', n.tool_name ? html`${esc(n.tool_name)}${searchLinkHTML('tool', n.tool_name)}` : '', true], ['tool call id', n.tool_call_id], ['attempt', n.attempt],
    ['finish reasons', (n.finish_reasons || []).join(', ')], ['error type', n.error_type ? html`${esc(n.error_type)}${searchLinkHTML('span.error.type', n.error_type)}` : '', true], ['status message', n.status_message],
    ['effect class', n.effect], ['step status', n.step_status],
  ])}
<h3>Usage</h3>${usage}
<h3>Cost</h3>${cost}
${n.children && n.children.length && (n.subtree_usage || n.subtree_cost) ? html`<h3>With everything below</h3><div id="detail-subtree">${kvHTML([
    ['tokens', tokensText(n.subtree_usage)], ['cache read', n.subtree_usage ? num(n.subtree_usage.cache_read_tokens) : ''],
    ['cost', n.subtree_cost ? moneyHTML(n.subtree_cost.total_usd) : '', true],
  ])}</div>` : ''}
${n.usage || n.cost ? html`<h3>How these numbers were derived</h3><div id="detail-explain"><p class="loading">Loading…</p></div>` : ''}
<h3>Content</h3><div id="detail-content"><p class="loading">Loading captured content…</p></div>
<h3>Events</h3>${events}
<h3>Attributes</h3>${kvHTML(searchableKV(attrs, 'span'))}
${res.length ? html`<details><summary><h3 style="display:inline">Resource</h3></summary>${kvHTML(searchableKV(res, 'resource'))}</details>` : ''}`);
  loadContent(traceID, n.span_id);
  if (n.usage || n.cost) loadExplain(traceID, n.span_id);
}

// loadExplain fills the span's "how derived" section from
// GET /api/v1/runs/{trace}/spans/{span}/explain: the instrumentation
// reading, what the span reported, each step and the cost arithmetic.

export async function loadExplain(traceID, spanID) {
  const selected = () => document.querySelector('.wf-row[aria-selected="true"]')?.dataset.spanId === spanID;
  let x;
  try {
    const data = await api(`/api/v1/runs/${traceID}/spans/${spanID}/explain`);
    x = (data.spans || [])[0];
  } catch (err) {
    const b = document.getElementById('detail-explain');
    if (b && selected()) show(b, errorHTML(err, 'explanations'));
    return;
  }
  const b = document.getElementById('detail-explain');
  if (!b || !selected() || !x) return;
  const list = (items) => html`<ul class="steps">${items.map((i) => html`<li>${esc(i)}</li>`)}</ul>`;
  show(b, html`${kvHTML([
    ['reading', html`<code>${esc(x.reading)}</code>${x.instrumentation ? html` <span class="muted">${esc(x.instrumentation)}</span>` : ''}`, true],
    ['scope', html`${esc(x.scope || '')} ${esc(x.scope_version || '')}`, true],
    ['source', x.source],
    ['in run totals', html`${x.counted ? 'counted' : 'not counted'}: ${esc(x.counted_why)}`, true],
    ['cost confidence', x.confidence ? html`<span id="explain-confidence" data-confidence="${esc(x.confidence.level)}"><strong>${esc(x.confidence.level)}</strong>${x.confidence.reason ? html`: ${esc(x.confidence.reason)}` : ''}${x.confidence.rule ? html` <span class="muted">(rule <code>${esc(x.confidence.rule)}</code>, ${esc(x.confidence.versions)}; ${esc(x.confidence.source)})</span>` : ''}</span>` : '', true],
  ])}
${(x.reported || []).length ? html`<h4>Reported</h4>${kvHTML(x.reported.map((r) => [r.key + (r.on_resource ? ' (resource)' : ''), r.value]))}` : ''}
<h4>Steps</h4><div id="explain-steps">${list(x.steps || [])}</div>
${(x.cost_lines || []).length ? html`<h4>Cost</h4><div id="explain-cost">${list(x.cost_lines)}</div>` : ''}
${x.stored ? html`<p class="pill warn">The stored figures differ from what the current rules derive: <code>tally reprice</code> re-derives them.</p>` : ''}`);
}

export async function loadContent(traceID, spanID) {
  const box = () => document.getElementById('detail-content');
  let data = contentCache.get(spanID);
  if (!data) {
    try {
      data = await api(`/api/v1/runs/${traceID}/spans/${spanID}`);
      contentCache.set(spanID, data);
    } catch (err) {
      const b = box();
      if (b && document.querySelector(`.wf-row[aria-selected="true"]`)?.dataset.spanId === spanID) show(b, errorHTML(err, 'captured content'));
      return;
    }
  }
  const b = box();
  if (!b || document.querySelector('.wf-row[aria-selected="true"]')?.dataset.spanId !== spanID) return;
  const items = data.content || [];
  const chat = data.chat ? chatViewHTML(data.chat) : '';
  if (!items.length && !chat) {
    show(b, html`<p class="muted">No content captured for this span (content is stored only when the SDK records it, and may be disabled or redacted by configuration).</p>`);
    return;
  }
  const raw = items.map((c) => html`<div class="content-item"><span class="ck">${esc(CONTENT_LABEL[c.kind] || c.kind)}</span> <span class="muted mono">${esc(c.source_key)}</span>${c.truncated ? html` <span class="pill warn">truncated at ingest</span>` : ''}${valueHTML(c.value, html` data-kind="${esc(c.kind)}"`)}</div>`);
  // Messages read as a conversation; the raw values stay one click away.
  show(b, chat
    ? html`${chat}${raw.length ? html`<details class="raw-content"><summary>Raw captured values (${items.length})</summary>${raw}</details>` : ''}`
    : raw);
}
