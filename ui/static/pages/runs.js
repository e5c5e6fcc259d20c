// The runs page: the run list with filters, server-side order and live refresh.

import { esc, html, show } from '../lib/html.js';
import { SEND_HELP, aborted, api, errorHTML } from '../lib/api.js';
import { fmtMs, moneyHTML, num, shortID, timeHTML } from '../lib/format.js';
import { copyParams, setupRangeForm } from '../lib/range.js';
import { tableHTML } from '../lib/table.js';
import { confidenceHTML } from '../lib/vocab.js';
import { errorAtHTML, filtersQuery, setupQueryBar, setupSaved, sqlHTML } from '../lib/search.js';

export const RUN_COLS = [
  { key: 'start', label: 'Start', value: (r) => r.start, html: (r) => html`<a href="/runs/${esc(r.trace_id)}">${timeHTML(r.start)}</a>` },
  { key: 'trace', label: 'Trace', html: (r) => html`<a class="mono" href="/runs/${esc(r.trace_id)}" title="${esc(r.trace_id)}">${shortID(r.trace_id)}</a>` },
  { key: 'task', label: 'Task', html: (r) => esc(r.task) },
  { key: 'agents', label: 'Agents', wrap: true, html: (r) => ((r.agents || []).length ? esc(r.agents.join(', ')) : html`<span class="muted">—</span>`) },
  { key: 'service', label: 'Service', html: (r) => esc(r.service) },
  { key: 'duration', label: 'Duration', num: true, value: (r) => r.duration_ms, html: (r) => fmtMs(r.duration_ms) },
  { key: 'llm', label: 'LLM', title: 'LLM (inference) calls', num: true, html: (r) => num(r.llm_calls) },
  { key: 'tools', label: 'Tools', title: 'tool calls', num: true, html: (r) => num(r.tool_calls) },
  { key: 'input', label: 'In', title: 'input tokens (cache included)', num: true, html: (r) => num(r.usage.input_tokens) },
  { key: 'cache_read', label: 'Cache read', title: 'cache-read input tokens', num: true, html: (r) => num(r.usage.cache_read_tokens) },
  { key: 'output', label: 'Out', title: 'output tokens (reasoning included)', num: true, html: (r) => num(r.usage.output_tokens) },
  { key: 'cost', label: 'Cost', num: true, value: (r) => r.cost.total_usd, html: (r) => html`${moneyHTML(r.cost.total_usd)}${confidenceHTML(r.cost_confidence)}${r.unpriced_spans ? html` <span class="pill warn" title="${r.unpriced_spans} span(s) matched no price: cost missing">+?</span>` : ''}` },
  { key: 'errors', label: 'Errors', title: 'spans that ended in error (recovered: the run still succeeded)', num: true, value: (r) => r.errors, html: errorsHTML },
];

/** errorsHTML shows a run's error spans: red when the run failed, amber when it recovered. */
export function errorsHTML(r) {
  if (!r.errors) return '0';
  if (r.status === 'error') return html`<span class="pill error" data-errors="failed">${num(r.errors)}</span>`;
  return html`<span class="pill warn" data-errors="recovered" title="the run succeeded: ${num(r.recovered_errors)} recovered">${num(r.errors)} recovered</span>`;
}

/** runColumns adds a retries column when the API reports retries per run. */
export function runColumns(runs) {
  const cols = RUN_COLS.slice();
  if (runs.some((r) => r.tool_retries != null)) {
    cols.push({ key: 'retries', label: 'Retries', num: true, value: (r) => r.tool_retries, html: (r) => num(r.tool_retries) });
  }
  return cols;
}

/** matchesHTML lists the spans of a run a query matched, each opening the run at it. */
function matchesHTML(r) {
  const m = r.matches || [];
  const shown = m.slice(0, 4).map((s) => html`<a href="/runs/${esc(r.trace_id)}#span=${esc(s.span_id)}" data-match="${esc(s.span_id)}">${esc(s.name || s.span_id)}</a>`);
  return html`<span class="matches">${shown}${m.length > 4 ? html`<span class="muted">+${m.length - 4}</span>` : ''}</span>`;
}

/** highlightHTML is a content excerpt with its matches marked. */
function highlightHTML(h) {
  const parts = [];
  let at = 0;
  for (const [a, b] of h.ranges || []) {
    parts.push(esc(h.text.slice(at, a)), html`<mark>${esc(h.text.slice(a, b))}</mark>`);
    at = b;
  }
  parts.push(esc(h.text.slice(at)));
  return html`<div class="hl" data-highlight><span class="pill muted">${esc(h.kind)}</span> …${parts}…</div>`;
}

/** SEARCH_COLS are the run list's columns with the spans each run matched. */
const SEARCH_COLS = [
  ...RUN_COLS.filter((c) => c.key !== 'service'),
  { key: 'matched', label: 'Matched spans', wrap: true, html: (r) => html`${matchesHTML(r)}${(r.matches || []).flatMap((m) => (m.highlights || []).map(highlightHTML))}` },
];

export async function pageRuns() {
  const params = new URLSearchParams(location.search);
  const form = document.getElementById('filters');
  setupRangeForm(form, params);
  const input = document.getElementById('query');
  const windowParams = () => copyParams(new URLSearchParams(location.search), ['since', 'until']);
  if (input) {
    setupQueryBar(input, document.getElementById('query-suggest'), windowParams);
    document.getElementById('query-from-filters').addEventListener('click', () => {
      const q = filtersQuery(new URLSearchParams(new FormData(form)));
      if (!q) return;
      input.value = input.value.trim() ? `${input.value.trim()} && ${q}` : q;
      // The boxes now live in the query.
      for (const name of ['agent', 'model', 'tool', 'service', 'task', 'min_cost']) { const f = form.elements[name]; if (f) f.value = ''; }
      for (const name of ['status', 'has_errors']) { const f = form.elements[name]; if (f) f.value = ''; }
      input.focus();
    });
    setupSaved(input, '/runs');
    const explore = document.getElementById('query-explore');
    if (params.get('query')) explore.href = `/explore?${copyParams(params, ['query', 'since', 'until'])}`;
  }
  if (params.get('query')) {
    await searchRuns(params);
    return;
  }
  const el = document.getElementById('runs');
  const apiParams = copyParams(params, ['since', 'until', 'agent', 'model', 'service', 'task', 'tool', 'conversation', 'status', 'has_errors', 'has_recovered_errors', 'q', 'min_cost', 'sort', 'dir', 'cursor', 'limit']);
  const state = { sort: params.get('sort') || 'start', dir: params.get('dir') || 'desc' };
  // A header asks the API for that order from the first page (a cursor belongs to its order).
  el.addEventListener('click', (ev) => {
    const b = ev.target.closest('button.sortbtn');
    if (!b) return;
    const key = b.dataset.sort;
    const next = new URLSearchParams(params);
    next.set('dir', state.sort === key && state.dir === 'desc' ? 'asc' : 'desc');
    next.set('sort', key);
    next.delete('cursor');
    location.assign(`/runs?${next}`);
  });
  let shown = null; // trace ids drawn, to mark what a refresh brings
  // load draws the first page, or a refresh of it; a refresh cancelled
  // (Live turned off, or the next refresh due) draws nothing.
  const load = async (signal) => {
    let page;
    try {
      page = await api(`/api/v1/runs?${apiParams}`, { signal });
    } catch (err) {
      if (aborted(err)) return;
      show(el, errorHTML(err, 'runs'));
      return;
    }
    if (signal && signal.aborted) return;
    fillDatalists(page.runs);
    const filtered = ['since', 'until', 'agent', 'model', 'service', 'task', 'tool', 'status', 'has_errors', 'has_recovered_errors', 'q', 'min_cost', 'cursor'].some((k) => params.get(k));
    if (!page.runs.length) {
      show(el, filtered
        ? html`<p class="empty" data-empty>No runs match these filters. <a href="/runs">Clear the filters</a> or widen the time range.</p>`
        : SEND_HELP);
      return;
    }
    const cols = runColumns(page.runs);
    // The API sorts (across every page, cursor included): the page shows its order as is.
    const rows = page.runs;
    const pager = () => {
      const parts = [];
      if (params.get('cursor')) {
        const first = new URLSearchParams(params);
        first.delete('cursor');
        parts.push(html`<a href="/runs?${first}">« First page</a>`);
      }
      const order = state.sort === 'start' ? (state.dir === 'asc' ? 'oldest first' : 'newest first') : html`by ${esc(state.sort)}, ${state.dir === 'asc' ? 'lowest' : 'highest'} first`;
      parts.push(html`<span class="muted" id="runs-order">${rows.length} run${rows.length === 1 ? '' : 's'} on this page, ${order}</span>`);
      if (page.next_cursor) {
        const next = new URLSearchParams(params);
        next.set('cursor', page.next_cursor);
        parts.push(html`<a href="/runs?${next}" rel="next">Next page »</a>`);
      }
      return html`<nav class="pager" aria-label="Pages">${parts}</nav>`;
    };
    const before = shown;
    shown = new Set(rows.map((r) => r.trace_id));
    show(el, html`${tableHTML(cols, rows, state, {
      id: 'runs-table',
      caption: 'Runs',
      rowAttrs: (r) => html` data-trace-id="${esc(r.trace_id)}"${r.status === 'error' ? html` class="err"` : ''}${before && !before.has(r.trace_id) ? html` data-new="true"` : ''}`,
    })}${pager()}`);
  };
  await load();
  liveRefresh(params, load);
}

/**
 * searchRuns draws the runs a query matched (GET /api/v1/search), newest
 * first, with the spans each matched; a query that does not parse is
 * shown with its error underlined, and a metrics query is sent to the
 * explore page. Live refresh reloads the first page as the list does.
 */
async function searchRuns(params) {
  const el = document.getElementById('runs');
  const query = params.get('query');
  const apiParams = copyParams(params, ['since', 'until', 'cursor', 'limit']);
  apiParams.set('q', query);
  apiParams.set('sql', '1');
  const ignored = ['agent', 'model', 'service', 'task', 'tool', 'status', 'has_errors', 'min_cost', 'q'].filter((k) => params.get(k));
  const load = async (signal) => {
    let page;
    try {
      page = await api(`/api/v1/search?${apiParams}`, { signal });
    } catch (err) {
      if (aborted(err)) return;
      show(el, err.position != null ? errorAtHTML(query, err.position, err.message) : errorHTML(err, 'search'));
      return;
    }
    if (signal && signal.aborted) return;
    if (page.kind === 'metrics') {
      show(el, html`<p class="notice" data-metrics>This is a metrics query: <a href="/explore?${copyParams(params, ['query', 'since', 'until'])}">see its chart on the Explore page</a>.</p>`);
      return;
    }
    const notes = [];
    if (ignored.length) notes.push(html`<p class="notice warn" data-ignored>A query replaces the filter boxes (${esc(ignored.join(', '))}): use <em>Filters → query</em> to add them to it.</p>`);
    if (page.partial) notes.push(html`<p class="notice warn" data-partial>Stopped after examining ${num(page.examined)} runs with candidate spans: the next page goes on from there.</p>`);
    const pager = [];
    if (params.get('cursor')) {
      const first = new URLSearchParams(params);
      first.delete('cursor');
      pager.push(html`<a href="/runs?${first}">« First page</a>`);
    }
    pager.push(html`<span class="muted" id="runs-order">${page.runs.length} matching run${page.runs.length === 1 ? '' : 's'} on this page, newest match first</span>`);
    if (page.next_cursor) {
      const next = new URLSearchParams(params);
      next.set('cursor', page.next_cursor);
      pager.push(html`<a href="/runs?${next}" rel="next">Next page »</a>`);
    }
    if (!page.runs.length) {
      show(el, html`${notes}${sqlHTML(page.sql)}<p class="empty" data-empty>No run matches <code>${esc(query)}</code> in this window.${page.next_cursor ? html` <a href="/runs?${(() => { const n = new URLSearchParams(params); n.set('cursor', page.next_cursor); return n; })()}">Look further back</a>.` : ' Widen the time range, or loosen the query.'}</p>${pager.length > 1 ? html`<nav class="pager">${pager}</nav>` : ''}`);
      return;
    }
    show(el, html`${notes}${tableHTML(SEARCH_COLS, page.runs, null, {
      id: 'runs-table',
      caption: 'Runs matching the query',
      rowAttrs: (r) => html` data-trace-id="${esc(r.trace_id)}"${r.status === 'error' ? html` class="err"` : ''}`,
    })}<nav class="pager" aria-label="Pages">${pager}</nav>${sqlHTML(page.sql)}`);
  };
  await load();
  liveRefresh(params, load);
}

/**
 * liveRefresh reloads the run list every few seconds while "Live" is on:
 * the URL's live=N (seconds, 2 to 300; live=1 means 10) keeps it on across
 * reloads. Only the first page refreshes (a later page is a fixed cursor),
 * and only while the tab is visible. load(signal) must draw nothing once
 * signal aborts: turning Live off cancels the refresh in flight (so a slow
 * one cannot redraw the list after), and a refresh still running when the
 * next is due is cancelled for it.
 */
export function liveRefresh(params, load) {
  const box = document.getElementById('live');
  if (!box) return;
  const arg = Number(params.get('live') || 0);
  const secs = arg >= 2 ? Math.min(arg, 300) : 10;
  const status = document.getElementById('live-status');
  let timer = 0;
  let inflight = null; // the refresh under way, to cancel
  const cancel = () => {
    if (inflight) inflight.abort();
    inflight = null;
  };
  const refresh = async () => {
    cancel();
    const ctl = new AbortController();
    inflight = ctl;
    try {
      await load(ctl.signal);
    } finally {
      if (inflight === ctl) inflight = null;
    }
  };
  const set = (on) => {
    clearInterval(timer);
    timer = 0;
    cancel();
    const url = new URLSearchParams(location.search);
    if (on) url.set('live', arg >= 2 ? String(secs) : '1');
    else url.delete('live');
    history.replaceState(null, '', `${location.pathname}${url.size ? `?${url}` : ''}`);
    if (!on) { status.textContent = ''; return; }
    if (params.get('cursor')) { status.textContent = 'live updates show on the first page only'; return; }
    status.textContent = `every ${secs} s`;
    timer = setInterval(() => { if (document.visibilityState === 'visible') refresh(); }, secs * 1000);
  };
  box.checked = arg !== 0;
  box.addEventListener('change', () => set(box.checked));
  if (box.checked) set(true);
}

export function fillDatalists(runs) {
  const sets = { agent: new Set(), model: new Set(), task: new Set(), service: new Set() };
  for (const r of runs) {
    (r.agents || []).forEach((a) => sets.agent.add(a));
    (r.models || []).forEach((m) => sets.model.add(m));
    sets.task.add(r.task);
    sets.service.add(r.service);
  }
  for (const [k, set] of Object.entries(sets)) {
    const dl = document.getElementById(`dl-${k}`);
    if (dl) show(dl, [...set].filter(Boolean).sort().map((v) => html`<option value="${esc(v)}">`));
  }
}
