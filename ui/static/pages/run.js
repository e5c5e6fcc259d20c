// The run page: totals, the span waterfall (loaded in parts for big runs) and the fixture export.

import { esc, html, join, show } from '../lib/html.js';
import { ApiError, api, errorHTML } from '../lib/api.js';
import { fmtMs, moneyHTML, num, parseTime, pct, timeHTML } from '../lib/format.js';
import { main } from '../lib/page.js';
import { showSpan } from './span.js';
import { Waterfall } from './waterfall.js';
import { CONFIDENCE_HELP, confidenceHTML } from '../lib/vocab.js';

/**
 * flatten turns the span tree into rows in display order, marking retries.
 * A node of a run answered in part that hides children gets one more row
 * after its loaded ones: the "load more" row (row.more is the node).
 */
export function flatten(roots) {
  const rows = [];
  const walk = (nodes, parent, depth) => {
    for (const n of nodes) {
      const i = rows.length;
      const row = { n, parent, depth, kids: [], end: 0, start: parseTime(n.start), stop: parseTime(n.end), retry: false };
      rows.push(row);
      if (parent >= 0) rows[parent].kids.push(i);
      walk(n.children || [], i, depth + 1);
      if (n.hidden_children > 0) {
        row.kids.push(rows.length);
        rows.push({ n: { type: 'more', span_id: `${n.span_id}:more`, name: '' }, more: n, parent: i, depth: depth + 1,
          kids: [], end: rows.length + 1, start: row.start, stop: row.start, retry: false });
      }
      row.end = rows.length; // index after the last descendant
    }
  };
  walk(roots, -1, 0);
  // The API classifies each tool call by docs/design.md's retry rules (as /tools
  // does); without it, fall back to attempt ≥ 2 or a repeated call id.
  const seen = new Set();
  const byStart = rows.filter((r) => r.n.type === 'tool').sort((a, b) => a.start - b.start);
  for (const r of byStart) {
    if (r.n.retry_class) r.retry = r.n.retry_class.startsWith('retry_');
    else if ((r.n.attempt || 0) >= 2 || (r.n.tool_call_id && seen.has(r.n.tool_call_id))) r.retry = true;
    if (r.n.tool_call_id) seen.add(r.n.tool_call_id);
  }
  return rows;
}

export async function pageRun() {
  const el = document.getElementById('run');
  const id = main.dataset.id;
  let run;
  const want = new URLSearchParams(location.hash.slice(1)).get('span');
  try {
    // A big run comes in parts: the first RUN_PART spans (the deep-linked
    // one's path among them), the rest loaded where the reader expands.
    const focus = want && /^[0-9a-f]{16}$/.test(want) ? `&focus=${want}` : '';
    run = await api(`/api/v1/runs/${encodeURIComponent(id)}?max_nodes=${RUN_PART}${focus}`);
    performance.mark('tally:run-loaded');
  } catch (err) {
    show(el, errorHTML(err, `run ${id}`));
    return;
  }
  const s = run.summary;
  let rows = flatten(run.roots || []);
  performance.mark('tally:flattened');
  const t0 = Math.min(parseTime(s.start), ...rows.slice(0, 1).map((r) => r.start));
  const t1 = Math.max(parseTime(s.end), t0 + 0.001);
  const retries = s.tool_retries != null ? s.tool_retries : rows.filter((r) => r.retry).length;
  const u = s.usage;
  const hit = u.input_tokens ? u.cache_read_tokens / u.input_tokens : null;
  show(el, html`
<div class="runhead">
  <h1>${esc(s.task)} <code title="trace id">${esc(s.trace_id)}</code></h1>
  <span class="pill ${s.status === 'error' ? 'error' : 'ok'}" id="run-status" title="the run's outcome: its root span's status">${esc(s.status)}</span>${s.errors ? html` <span class="pill ${s.status === 'error' ? 'error' : 'warn'}" id="run-errors">${num(s.errors)} error span${s.errors === 1 ? '' : 's'}${s.recovered_errors ? ', recovered' : ''}</span>` : ''}
  <span class="muted">${esc(s.service)} · started ${timeHTML(s.start, true)}${s.agents.length ? html` · agents ${esc(s.agents.join(', '))}` : ''}</span>
  ${s.conversation_id ? html`<a href="/conversations/${encodeURIComponent(s.conversation_id)}">conversation ${esc(s.conversation_id)}</a>` : ''}
  <button type="button" id="export-fixture">Export replay fixture</button>
  <span id="export-status" role="status"></span>
  <div id="run-outcomes" class="outcomes"></div>
</div>
<dl class="stats" id="run-totals">
  <div class="stat"><dt>Cost</dt><dd>${moneyHTML(s.cost.total_usd, 'run-cost')}${confidenceHTML(s.cost_confidence, run.cost_confidence_rules)}${s.unpriced_spans ? html` <small title="spans with usage that matched no price entry">+ ${s.unpriced_spans} unpriced</small>` : ''}</dd></div>
  <div class="stat"><dt>Duration</dt><dd>${fmtMs(s.duration_ms)}</dd></div>
  <div class="stat"><dt>Input tokens</dt><dd title="cache included">${num(u.input_tokens)}</dd></div>
  <div class="stat"><dt>Cache read / write</dt><dd>${num(u.cache_read_tokens)} <small>/ ${num(u.cache_write_tokens)}</small></dd></div>
  <div class="stat"><dt>Output tokens</dt><dd>${num(u.output_tokens)}${u.reasoning_tokens ? html` <small>${num(u.reasoning_tokens)} reasoning</small>` : ''}</dd></div>
  <div class="stat"><dt>Cache hit ratio</dt><dd title="cache-read tokens / input tokens">${pct(hit)}</dd></div>
  <div class="stat"><dt>Spans</dt><dd>${num(s.spans)}</dd></div>
  <div class="stat"><dt>LLM / tool calls</dt><dd>${num(s.llm_calls)} <small>/</small> ${num(s.tool_calls)}</dd></div>
  <div class="stat"><dt>Errors</dt><dd>${s.errors ? html`<span class="pill error">${num(s.errors)}</span>` : '0'}</dd></div>
  <div class="stat"><dt title="tool calls that retried an earlier attempt: attempt ≥ 2, a repeated call id or step id, or the same tool again after it failed under the same parent">Retries</dt><dd>${num(retries)}</dd></div>
</dl>
${(run.cost_confidence_rules || []).length ? html`<div class="notice" id="run-confidence"><strong>Cost ${esc(CONFIDENCE_HELP[s.cost_confidence] || '')}.</strong> <ul>${run.cost_confidence_rules.map((r) => html`<li data-rule="${esc(r.rule)}">${esc(r.instrumentation)} <span class="muted">(${esc(r.versions)})</span>: ${esc(r.reason)}</li>`)}</ul></div>` : ''}
${s.usage_from_aggregate ? html`<p class="notice warn">No inference span carried usage: token totals come from the agent span's aggregated usage.</p>` : ''}
${run.truncated ? html`<p class="notice warn" id="run-truncated">This run has ${num(run.truncated.total_spans)} spans: the tree is built from the earliest ${num(run.truncated.returned_spans)} (the server's --max-tree-spans). The totals above cover the whole run.</p>` : ''}
${(s.signals || []).length ? html`<div class="notice error" id="run-signals" role="status"><strong>Safety review:</strong> <ul>${s.signals.map((g) => html`<li data-signal="${g.kind}"><code>${g.kind}</code> ${g.reason}</li>`)}</ul></div>` : ''}
${(s.guardrails || []).length ? html`<p class="muted" id="run-guardrails"><strong>Guardrails:</strong> ${join(s.guardrails.map((g) => html`<span class="pill ${g.triggered ? 'error' : g.triggered === false ? 'ok' : 'muted'}" data-guardrail="${g.name}">${g.name} ${g.triggered ? 'triggered' : g.triggered === false ? 'passed' : 'no verdict'}</span>`), ' ')}</p>` : ''}
${run.partial ? html`<p class="notice" id="run-partial">This run has ${num(run.partial.total_spans)} spans: ${num(run.partial.returned_spans)} are loaded, the costliest step and the first error among them. Rows marked ⋯ load the rest of their subtree; every figure covers the whole run.</p>` : ''}
<div class="runbody">
  <section class="waterfall" aria-label="Span waterfall">
    <div class="wf-toolbar">
      <button type="button" id="wf-expand">Expand all</button>
      <button type="button" id="wf-collapse">Collapse all</button>
      <button type="button" id="wf-costliest" title="select the span with the highest cost of its own">Most expensive step</button>
      <button type="button" id="wf-first-error" title="select the earliest span that ended in error">First error</button>
      <span class="muted" id="wf-count"></span>
      <span class="legend" aria-hidden="true"><span><i style="background:var(--agent)"></i>agent</span><span><i style="background:var(--llm)"></i>LLM</span><span><i style="background:var(--tool)"></i>tool</span><span><i style="background:var(--other)"></i>other</span><span><i style="background:var(--err)"></i>error</span></span>
    </div>
    <div class="wf-axis" aria-hidden="true"><div class="label muted" style="padding-left:6px">Span</div><div class="lane">${axisTicks(t1 - t0)}</div></div>
    <div class="wf-rows" id="wf-rows" role="tree" tabindex="0" aria-label="Spans: arrow keys move, left and right collapse and expand, Enter selects"></div>
  </section>
  <aside class="detail" id="detail" aria-live="polite"><p class="muted">Select a span to see its attributes, usage, cost, events and captured content.</p></aside>
</div>`);
  document.getElementById('export-fixture').addEventListener('click', () => exportFixture(id));
  loadOutcomes(s.trace_id);
  const detail = document.getElementById('detail');
  const signals = new Map();
  for (const sig of s.signals || []) signals.set(sig.span_id, [...(signals.get(sig.span_id) || []), sig]);
  const wf = new Waterfall(document.getElementById('wf-rows'), rows, t0, t1, (i) => {
    showSpan(wf.rows[i], t0, id);
    // Narrow windows stack the detail below the tree: bring it into view.
    const tree = document.querySelector('.waterfall').getBoundingClientRect();
    if (detail.getBoundingClientRect().top >= tree.bottom - 1) detail.scrollIntoView({ block: 'start' });
  });
  // A "load more" row fetches the next page of its node's children and
  // merges them (a child already loaded, as a focused path, stays).
  wf.onMore = async (row) => {
    const node = row.more;
    if (node._loading) return;
    node._loading = true;
    node._error = null;
    wf.render();
    try {
      const page = await api(`/api/v1/runs/${encodeURIComponent(id)}/spans/${node.span_id}/children?offset=${node._next || 0}&max_nodes=${CHILDREN_PART}`);
      const have = new Set(node.children.map((c) => c.span_id));
      const size = (c) => (c.children || []).reduce((k, g) => k + size(g), 1);
      let added = 0;
      for (const c of page.children) {
        if (have.has(c.span_id)) continue;
        node.children.push(c);
        added += size(c);
      }
      node.children.sort((a, b) => parseTime(a.start) - parseTime(b.start) || (a.span_id < b.span_id ? -1 : 1));
      node._next = page.next_offset;
      node.hidden_children = page.next_offset == null ? 0 : page.children_total - node.children.length;
      for (let p = row.parent; p >= 0; p = wf.rows[p].parent) wf.rows[p].n.hidden_spans = Math.max(0, (wf.rows[p].n.hidden_spans || 0) - added);
    } catch (err) {
      node._error = err.message;
    }
    node._loading = false;
    wf.setRows(flatten(run.roots || []));
  };
  wf.signals = signals;
  document.getElementById('wf-expand').addEventListener('click', () => wf.setAll(false));
  document.getElementById('wf-collapse').addEventListener('click', () => wf.setAll(true));
  // Jumps: the span whose own cost counts most, and the earliest error (the
  // server names both; they are in every answer, a partial one included).
  const byID = (sid) => (sid ? wf.rows.findIndex((r) => r.n.span_id === sid) : -1);
  for (const [btn, sid] of [['wf-costliest', run.costliest_span_id], ['wf-first-error', run.first_error_span_id]]) {
    const b = document.getElementById(btn);
    if (byID(sid) < 0) b.disabled = true;
    else b.addEventListener('click', () => { wf.select(byID(sid), true); wf.el.focus({ preventScroll: true }); });
  }
  performance.mark('tally:header');
  wf.render();
  performance.mark('tally:rows');
  void wf.el.offsetHeight;
  performance.mark('tally:layout');
  const pick = want ? wf.rows.findIndex((r) => r.n.span_id === want) : -1;
  if (pick >= 0) wf.select(pick, true);
  // Mark the first complete render (after layout and a frame) for benchmarks.
  requestAnimationFrame(() => setTimeout(() => { document.body.dataset.rendered = String(performance.now()); }, 0));
}

/** axisTicks labels 0, ¼, ½, ¾ and the full run duration. */
export function axisTicks(total) {
  return [0, 0.25, 0.5, 0.75, 1].map((f) => html`<span class="tick" style="left:${f * 100}%">${fmtMs(total * f)}</span>`);
}

/**
 * RUN_PART is the most spans the run page asks for at first, CHILDREN_PART
 * the most one "load more" brings: enough for any run an engineer reads
 * whole, small enough that a 50,000-span run paints at once.
 */
export const RUN_PART = 2000;

export const CHILDREN_PART = 1000;

export async function exportFixture(traceID) {
  const status = document.getElementById('export-status');
  status.textContent = 'Exporting…';
  const path = `/api/v1/runs/${traceID}/fixture`;
  try {
    const resp = await fetch(path, { credentials: 'same-origin' });
    if (!resp.ok) {
      let msg = resp.statusText;
      try { msg = (await resp.json()).error || msg; } catch { /* not JSON */ }
      throw new ApiError(resp.status, msg, path);
    }
    const blob = await resp.blob();
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `fixture-${traceID}.json`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    status.textContent = `Saved fixture-${traceID}.json`;
  } catch (err) {
    show(status, (err.status === 404 && /not available/.test(err.message)) || err.status === 501
      ? html`<span class="pill warn">replay fixtures are not available in this build</span>`
      : html`<span class="pill error">export failed: ${esc(err.message)}</span>`);
  }
}

/**
 * loadOutcomes shows a run's outcomes under its header: each verdict,
 * score or label with who judged it and why (GET …/outcomes). An older
 * server without the endpoint shows nothing.
 */
async function loadOutcomes(traceID) {
  const box = document.getElementById('run-outcomes');
  let rep;
  try {
    rep = await api(`/api/v1/runs/${traceID}/outcomes`);
  } catch {
    return;
  }
  const outs = rep.outcomes || [];
  if (!outs.length) return;
  show(box, html`<span class="muted">Outcomes:</span> ${join(outs.map((o) => {
    const verdict = o.passed == null ? '' : o.passed ? 'passed' : 'failed';
    // A label that is the verdict itself (pass, failed…) is not repeated.
    const labelIsVerdict = o.passed != null && /^(pass|passed|success|succeeded|correct|true|yes|ok|fail|failed|failure|incorrect|false|no|error)$/i.test(o.label || '');
    const what = [verdict, o.score != null ? `score ${o.score}` : '', o.label && !labelIsVerdict ? o.label : ''].filter(Boolean).join(', ');
    const cls = o.passed == null ? 'muted' : o.passed ? 'ok' : 'error';
    return html`<span class="pill ${cls}" data-outcome="${o.name}" title="${o.explanation || ''}${o.source ? ` (${o.source}, ${o.origin})` : ''}">${o.name}: ${what}</span>`;
  }), ' ')}`);
}
