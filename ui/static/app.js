// tally UI: reads /api/v1 JSON and renders tables, the run waterfall and SVG
// charts. One ES module, no framework, no network access besides tally's API.
// Every figure shown comes from the API; this file only formats and lays out.

const main = document.getElementById('main');

// ---------------------------------------------------------------- helpers

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/** esc escapes text for HTML element content and attribute values. */
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ESC[c]);

/** ApiError is a non-2xx answer from the API, with its message. */
class ApiError extends Error {
  constructor(status, message, path) {
    super(message);
    this.status = status;
    this.path = path;
  }
}

/** api fetches a JSON document from tally's API and throws ApiError on failure. */
async function api(path) {
  let resp;
  try {
    resp = await fetch(path, { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
  } catch (e) {
    throw new ApiError(0, `tally did not answer (${e.message})`, path);
  }
  let body = null;
  const text = await resp.text();
  try { body = text ? JSON.parse(text) : null; } catch { body = null; }
  if (!resp.ok) {
    throw new ApiError(resp.status, (body && body.error) || text.slice(0, 300) || resp.statusText, path);
  }
  return body;
}

/**
 * errorHTML explains a failed API call. A 404 or 501 from a feature's endpoint
 * means this build (or this server's configuration) lacks the feature.
 */
function errorHTML(err, feature) {
  if (err instanceof ApiError && (err.status === 404 || err.status === 501) && feature) {
    const why = err.status === 501 ? `the server says: ${err.message}` : `<code>${esc(err.path)}</code> answered 404`;
    return `<p class="notice warn" role="status" data-unavailable="${esc(feature)}">Not available in this build of tally: ${esc(feature)} (${err.status === 501 ? esc(why) : why}).</p>`;
  }
  const status = err instanceof ApiError && err.status ? ` (HTTP ${err.status})` : '';
  return `<div class="notice error" role="alert"><strong>Could not load ${esc(feature || 'data')}${status}:</strong> ${esc(err.message)}${err.path ? ` <code>${esc(err.path)}</code>` : ''}</div>`;
}

const SEND_HELP = `<div class="empty" data-empty>
<h2>No runs yet</h2>
<p>tally shows what your agents send it over OTLP/HTTP. Point any OpenTelemetry SDK at this server:</p>
<pre>export OTEL_EXPORTER_OTLP_ENDPOINT=http://${esc(location.hostname || 'localhost')}:${esc(location.port || '4318')}
export OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf
# with API keys configured: export OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer &lt;ingest key&gt;"</pre>
<p>Record spans with the GenAI semantic conventions (<code>gen_ai.operation.name</code>, <code>gen_ai.request.model</code>,
<code>gen_ai.usage.*</code>, <code>gen_ai.tool.name</code>…). To try it with realistic traffic, run <code>tally demo</code>.</p>
</div>`;

/** parseTime turns an RFC 3339 time (nanoseconds allowed) into fractional epoch milliseconds. */
function parseTime(iso) {
  if (!iso) return NaN;
  const m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(iso);
  if (!m) return Date.parse(iso);
  const base = Date.parse(m[1] + m[3]);
  return m[2] ? base + parseFloat('0' + m[2]) * 1000 : base;
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

/** localTime formats epoch ms in the viewer's zone, e.g. 2025-05-01 14:03:07. */
function localTime(ms, withMs = false) {
  const d = new Date(ms);
  const s = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return withMs ? `${s}.${pad(d.getMilliseconds(), 3)}` : s;
}

/** timeHTML renders a time in the local zone with UTC on hover. */
function timeHTML(iso, withMs = false) {
  const ms = parseTime(iso);
  if (!Number.isFinite(ms) || ms <= 0) return '<span class="muted">—</span>';
  return `<time datetime="${esc(iso)}" title="${esc(iso)} (UTC)">${localTime(ms, withMs)}</time>`;
}

/** fmtMs formats a duration in milliseconds for humans: 0.42 ms, 87 ms, 1.2 s, 3 min 05 s. */
function fmtMs(ms) {
  if (ms == null || !Number.isFinite(ms)) return '—';
  if (ms === 0) return '0';
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${pad(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${pad(Math.floor((s % 3600) / 60))} min`;
}

/** usd formats a USD amount: $0.0031, $0.00747, $12.35, $1,234. */
function usd(v) {
  if (v == null || !Number.isFinite(v)) return '—';
  if (v === 0) return '$0';
  const a = Math.abs(v);
  let s;
  if (a >= 1000) s = Math.round(a).toLocaleString('en-US');
  else if (a >= 1) s = a.toFixed(2);
  else {
    const decimals = Math.min(12, 2 - Math.floor(Math.log10(a)));
    s = a.toFixed(decimals).replace(/0+$/, '').replace(/\.$/, '');
  }
  return (v < 0 ? '-$' : '$') + s;
}

/** moneyHTML is usd with the exact figure kept for hover and tests. */
const moneyHTML = (v, id) => `<span class="money"${id ? ` id="${id}"` : ''} data-usd="${esc(v)}" title="${esc(v)} USD">${usd(v)}</span>`;

/** num formats an integer with thousands separators. */
const num = (n) => (n == null ? '—' : Number(n).toLocaleString('en-US'));

/** pct formats a ratio (0.1 → 10.0%). */
const pct = (r) => (r == null || !Number.isFinite(r) ? '—' : `${(r * 100).toFixed(r > 0 && r < 0.1 ? 2 : 1)}%`);

/** shortID shows the first 8 characters of an id. */
const shortID = (id) => String(id).slice(0, 8);

/** parseRange turns since/until parameters (RFC 3339 or 24h/7d) into epoch ms bounds. */
function parseRange(since, until, defaultSince) {
  const now = Date.now();
  const one = (v, dflt) => {
    if (!v) return dflt;
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(v);
    if (m) return now - parseFloat(m[1]) * { ms: 1, s: 1e3, m: 6e4, h: 36e5, d: 864e5 }[m[2]];
    return parseTime(v);
  };
  return { from: one(since, defaultSince ? one(defaultSince, null) : null), to: one(until, now) };
}

/** toLocalInput formats epoch ms for a datetime-local input. */
function toLocalInput(ms) {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/**
 * setupRangeForm wires a filter form's time preset select with its custom
 * from/to inputs, and submits only the non-empty fields (clean, shareable URLs).
 */
function setupRangeForm(form, params) {
  if (!form) return;
  const sel = form.querySelector('#f-since');
  const custom = form.querySelector('#f-custom');
  const from = form.querySelector('#f-from');
  const to = form.querySelector('#f-to');
  if (sel && custom) {
    const since = params.get('since') || '';
    const preset = [...sel.options].some((o) => o.value === since && o.value !== 'custom');
    if ((since && !preset) || params.get('until')) {
      sel.value = 'custom';
      const r = parseRange(since, params.get('until'));
      if (Number.isFinite(r.from)) from.value = toLocalInput(r.from);
      if (params.get('until') && Number.isFinite(r.to)) to.value = toLocalInput(r.to);
    }
    const sync = () => { custom.hidden = sel.value !== 'custom'; };
    sel.addEventListener('change', sync);
    sync();
  }
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const out = new URLSearchParams();
    for (const [k, v] of new FormData(form)) {
      if (v === '' || k === 'cursor') continue;
      if (k === 'since' && v === 'custom') {
        if (from.value) out.set('since', new Date(from.value).toISOString());
        if (to.value) out.set('until', new Date(to.value).toISOString());
        continue;
      }
      out.set(k, v);
    }
    const qs = out.toString();
    location.assign(form.getAttribute('action') + (qs ? `?${qs}` : ''));
  });
}

/** copyParams copies the named, non-empty page parameters into API parameters. */
function copyParams(params, names, extra = {}) {
  const out = new URLSearchParams();
  for (const n of names) if (params.get(n)) out.set(n, params.get(n));
  for (const [k, v] of Object.entries(extra)) if (v != null && v !== '' && !out.has(k)) out.set(k, v);
  return out;
}

/** rangeText describes the shown range. */
function rangeText(since, until) {
  const s = parseTime(since), u = parseTime(until);
  if (!Number.isFinite(s) || !Number.isFinite(u)) return '';
  return `${localTime(s)} – ${localTime(u)} (local time)`;
}

// ---------------------------------------------------------------- tables

/**
 * sortableTable renders a table whose columns sort on click. cols: {key, label,
 * num, value(row) for sorting, html(row)}. state: {sort, dir}; onSort(state)
 * is told when the user sorts.
 */
function tableHTML(cols, rows, state, opts = {}) {
  const head = cols.map((c) => {
    const cls = c.num ? ' class="num"' : '';
    const active = state && state.sort === c.key;
    const aria = active ? ` aria-sort="${state.dir === 'asc' ? 'ascending' : 'descending'}"` : '';
    const label = c.title ? `<abbr title="${esc(c.title)}">${esc(c.label)}</abbr>` : esc(c.label);
    const inner = state && c.value ? `<button type="button" class="sortbtn" data-sort="${c.key}" aria-pressed="${active}" data-arrow="${active && state.dir === 'asc' ? '▲' : '▼'}">${label}</button>` : label;
    return `<th scope="col"${cls}${aria}>${inner}</th>`;
  }).join('');
  const body = rows.map((r, i) => {
    const attrs = opts.rowAttrs ? opts.rowAttrs(r, i) : '';
    return `<tr${attrs}>${cols.map((c, j) => {
      const tag = j === 0 && opts.rowHeader ? 'th scope="row"' : 'td';
      return `<${tag}${c.num ? ' class="num"' : c.wrap ? ' class="wrap"' : ''}>${c.html(r, i)}</${tag.split(' ')[0]}>`;
    }).join('')}</tr>`;
  }).join('');
  const foot = opts.foot ? `<tfoot>${opts.foot}</tfoot>` : '';
  return `<table class="data"${opts.id ? ` id="${opts.id}"` : ''}>${opts.caption ? `<caption class="sr">${esc(opts.caption)}</caption>` : ''}<thead><tr>${head}</tr></thead><tbody>${body}</tbody>${foot}</table>`;
}

/** sortRows sorts rows by a column's value in place. */
function sortRows(rows, cols, state) {
  const col = cols.find((c) => c.key === state.sort);
  if (!col || !col.value) return rows;
  const dir = state.dir === 'asc' ? 1 : -1;
  return rows.sort((a, b) => {
    const x = col.value(a), y = col.value(b);
    if (typeof x === 'string' || typeof y === 'string') return dir * String(x).localeCompare(String(y));
    return dir * ((x ?? -Infinity) - (y ?? -Infinity));
  });
}

/** wireSort re-renders a sortable table when a header is clicked. */
function wireSort(container, state, rerender, onChange) {
  container.addEventListener('click', (ev) => {
    const b = ev.target.closest('button.sortbtn');
    if (!b) return;
    const key = b.dataset.sort;
    if (state.sort === key) state.dir = state.dir === 'asc' ? 'desc' : 'asc';
    else { state.sort = key; state.dir = key === 'task' ? 'asc' : 'desc'; }
    rerender();
    if (onChange) onChange(state);
    const again = container.querySelector(`button.sortbtn[data-sort="${key}"]`);
    if (again) again.focus();
  });
}

// RUN_COLS are the run-list columns; those with a value are the orders the API sorts runs by
// (sort=start|duration|cost|errors|retries; tokens from the form), across all pages.
const RUN_COLS = [
  { key: 'start', label: 'Start', value: (r) => r.start, html: (r) => `<a href="/runs/${esc(r.trace_id)}">${timeHTML(r.start)}</a>` },
  { key: 'trace', label: 'Trace', html: (r) => `<a class="mono" href="/runs/${esc(r.trace_id)}" title="${esc(r.trace_id)}">${shortID(r.trace_id)}</a>` },
  { key: 'task', label: 'Task', html: (r) => esc(r.task) },
  { key: 'agents', label: 'Agents', wrap: true, html: (r) => esc((r.agents || []).join(', ')) || '<span class="muted">—</span>' },
  { key: 'service', label: 'Service', html: (r) => esc(r.service) },
  { key: 'duration', label: 'Duration', num: true, value: (r) => r.duration_ms, html: (r) => fmtMs(r.duration_ms) },
  { key: 'llm', label: 'LLM', title: 'LLM (inference) calls', num: true, html: (r) => num(r.llm_calls) },
  { key: 'tools', label: 'Tools', title: 'tool calls', num: true, html: (r) => num(r.tool_calls) },
  { key: 'input', label: 'In', title: 'input tokens (cache included)', num: true, html: (r) => num(r.usage.input_tokens) },
  { key: 'cache_read', label: 'Cache read', title: 'cache-read input tokens', num: true, html: (r) => num(r.usage.cache_read_tokens) },
  { key: 'output', label: 'Out', title: 'output tokens (reasoning included)', num: true, html: (r) => num(r.usage.output_tokens) },
  { key: 'cost', label: 'Cost', num: true, value: (r) => r.cost.total_usd, html: (r) => moneyHTML(r.cost.total_usd) + (r.unpriced_spans ? ` <span class="pill warn" title="${r.unpriced_spans} span(s) matched no price: cost missing">+?</span>` : '') },
  { key: 'errors', label: 'Errors', title: 'spans that ended in error (recovered: the run still succeeded)', num: true, value: (r) => r.errors, html: errorsHTML },
];

/** errorsHTML shows a run's error spans: red when the run failed, amber when it recovered. */
function errorsHTML(r) {
  if (!r.errors) return '0';
  if (r.status === 'error') return `<span class="pill error" data-errors="failed">${num(r.errors)}</span>`;
  return `<span class="pill warn" data-errors="recovered" title="the run succeeded: ${num(r.recovered_errors)} recovered">${num(r.errors)} recovered</span>`;
}

/** runColumns adds a retries column when the API reports retries per run. */
function runColumns(runs) {
  const cols = RUN_COLS.slice();
  if (runs.some((r) => r.tool_retries != null)) {
    cols.push({ key: 'retries', label: 'Retries', num: true, value: (r) => r.tool_retries, html: (r) => num(r.tool_retries) });
  }
  return cols;
}

// ---------------------------------------------------------------- runs page

async function pageRuns() {
  const params = new URLSearchParams(location.search);
  setupRangeForm(document.getElementById('filters'), params);
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
  const load = async () => {
    let page;
    try {
      page = await api(`/api/v1/runs?${apiParams}`);
    } catch (err) {
      el.innerHTML = errorHTML(err, 'runs');
      return;
    }
    fillDatalists(page.runs);
    const filtered = ['since', 'until', 'agent', 'model', 'service', 'task', 'tool', 'status', 'has_errors', 'has_recovered_errors', 'q', 'min_cost', 'cursor'].some((k) => params.get(k));
    if (!page.runs.length) {
      el.innerHTML = filtered
        ? `<p class="empty" data-empty>No runs match these filters. <a href="/runs">Clear the filters</a> or widen the time range.</p>`
        : SEND_HELP;
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
        parts.push(`<a href="/runs?${first}">« First page</a>`);
      }
      const order = state.sort === 'start' ? (state.dir === 'asc' ? 'oldest first' : 'newest first') : `by ${esc(state.sort)}, ${state.dir === 'asc' ? 'lowest' : 'highest'} first`;
      parts.push(`<span class="muted" id="runs-order">${rows.length} run${rows.length === 1 ? '' : 's'} on this page, ${order}</span>`);
      if (page.next_cursor) {
        const next = new URLSearchParams(params);
        next.set('cursor', page.next_cursor);
        parts.push(`<a href="/runs?${next}" rel="next">Next page »</a>`);
      }
      return `<nav class="pager" aria-label="Pages">${parts.join('')}</nav>`;
    };
    const before = shown;
    shown = new Set(rows.map((r) => r.trace_id));
    el.innerHTML = tableHTML(cols, rows, state, {
      id: 'runs-table',
      caption: 'Runs',
      rowAttrs: (r) => ` data-trace-id="${esc(r.trace_id)}"${r.status === 'error' ? ' class="err"' : ''}${before && !before.has(r.trace_id) ? ' data-new="true"' : ''}`,
    }) + pager();
  };
  await load();
  liveRefresh(params, load);
}

/**
 * liveRefresh reloads the run list every few seconds while "Live" is on:
 * the URL's live=N (seconds, 2 to 300; live=1 means 10) keeps it on across
 * reloads. Only the first page refreshes (a later page is a fixed cursor),
 * and only while the tab is visible.
 */
function liveRefresh(params, load) {
  const box = document.getElementById('live');
  if (!box) return;
  const arg = Number(params.get('live') || 0);
  const secs = arg >= 2 ? Math.min(arg, 300) : 10;
  const status = document.getElementById('live-status');
  let timer = 0;
  const set = (on) => {
    clearInterval(timer);
    timer = 0;
    const url = new URLSearchParams(location.search);
    if (on) url.set('live', arg >= 2 ? String(secs) : '1');
    else url.delete('live');
    history.replaceState(null, '', `${location.pathname}${url.size ? `?${url}` : ''}`);
    if (!on) { status.textContent = ''; return; }
    if (params.get('cursor')) { status.textContent = 'live updates show on the first page only'; return; }
    status.textContent = `every ${secs} s`;
    timer = setInterval(() => { if (document.visibilityState === 'visible') load(); }, secs * 1000);
  };
  box.checked = arg !== 0;
  box.addEventListener('change', () => set(box.checked));
  if (box.checked) set(true);
}

function fillDatalists(runs) {
  const sets = { agent: new Set(), model: new Set(), task: new Set(), service: new Set() };
  for (const r of runs) {
    (r.agents || []).forEach((a) => sets.agent.add(a));
    (r.models || []).forEach((m) => sets.model.add(m));
    sets.task.add(r.task);
    sets.service.add(r.service);
  }
  for (const [k, set] of Object.entries(sets)) {
    const dl = document.getElementById(`dl-${k}`);
    if (dl) dl.innerHTML = [...set].filter(Boolean).sort().map((v) => `<option value="${esc(v)}">`).join('');
  }
}

// ---------------------------------------------------------------- run page

const TYPE_LABEL = { agent: 'AGENT', inference: 'LLM', tool: 'TOOL', other: 'SPAN' };

/**
 * flatten turns the span tree into rows in display order, marking retries.
 * A node of a run answered in part that hides children gets one more row
 * after its loaded ones: the "load more" row (row.more is the node).
 */
function flatten(roots) {
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
  // The API classifies each tool call by DESIGN.md's retry rules (as /tools
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

async function pageRun() {
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
    el.innerHTML = errorHTML(err, `run ${id}`);
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
  el.innerHTML = `
<div class="runhead">
  <h1>${esc(s.task)} <code title="trace id">${esc(s.trace_id)}</code></h1>
  <span class="pill ${s.status === 'error' ? 'error' : 'ok'}" id="run-status" title="the run's outcome: its root span's status">${esc(s.status)}</span>${s.errors ? ` <span class="pill ${s.status === 'error' ? 'error' : 'warn'}" id="run-errors">${num(s.errors)} error span${s.errors === 1 ? '' : 's'}${s.recovered_errors ? ', recovered' : ''}</span>` : ''}
  <span class="muted">${esc(s.service)} · started ${timeHTML(s.start, true)}${s.agents.length ? ` · agents ${esc(s.agents.join(', '))}` : ''}</span>
  ${s.conversation_id ? `<a href="/conversations/${encodeURIComponent(s.conversation_id)}">conversation ${esc(s.conversation_id)}</a>` : ''}
  <button type="button" id="export-fixture">Export replay fixture</button>
  <span id="export-status" role="status"></span>
</div>
<dl class="stats" id="run-totals">
  <div class="stat"><dt>Cost</dt><dd>${moneyHTML(s.cost.total_usd, 'run-cost')}${s.unpriced_spans ? ` <small title="spans with usage that matched no price entry">+ ${s.unpriced_spans} unpriced</small>` : ''}</dd></div>
  <div class="stat"><dt>Duration</dt><dd>${fmtMs(s.duration_ms)}</dd></div>
  <div class="stat"><dt>Input tokens</dt><dd title="cache included">${num(u.input_tokens)}</dd></div>
  <div class="stat"><dt>Cache read / write</dt><dd>${num(u.cache_read_tokens)} <small>/ ${num(u.cache_write_tokens)}</small></dd></div>
  <div class="stat"><dt>Output tokens</dt><dd>${num(u.output_tokens)}${u.reasoning_tokens ? ` <small>${num(u.reasoning_tokens)} reasoning</small>` : ''}</dd></div>
  <div class="stat"><dt>Cache hit ratio</dt><dd title="cache-read tokens / input tokens">${pct(hit)}</dd></div>
  <div class="stat"><dt>Spans</dt><dd>${num(s.spans)}</dd></div>
  <div class="stat"><dt>LLM / tool calls</dt><dd>${num(s.llm_calls)} <small>/</small> ${num(s.tool_calls)}</dd></div>
  <div class="stat"><dt>Errors</dt><dd>${s.errors ? `<span class="pill error">${num(s.errors)}</span>` : '0'}</dd></div>
  <div class="stat"><dt title="tool calls that retried an earlier attempt: attempt ≥ 2, a repeated call id or step id, or the same tool again after it failed under the same parent">Retries</dt><dd>${num(retries)}</dd></div>
</dl>
${s.usage_from_aggregate ? '<p class="notice warn">No inference span carried usage: token totals come from the agent span\'s aggregated usage.</p>' : ''}
${run.truncated ? `<p class="notice warn" id="run-truncated">This run has ${num(run.truncated.total_spans)} spans: the tree is built from the earliest ${num(run.truncated.returned_spans)} (the server's --max-tree-spans). The totals above cover the whole run.</p>` : ''}
${run.partial ? `<p class="notice" id="run-partial">This run has ${num(run.partial.total_spans)} spans: ${num(run.partial.returned_spans)} are loaded, the costliest step and the first error among them. Rows marked ⋯ load the rest of their subtree; every figure covers the whole run.</p>` : ''}
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
</div>`;
  document.getElementById('export-fixture').addEventListener('click', () => exportFixture(id));
  const detail = document.getElementById('detail');
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

/** tokensText is "1,000 in / 100 out" for a usage, "" without one. */
const tokensText = (u) => (u ? `${num(u.input_tokens)} in / ${num(u.output_tokens)} out` : '');

/**
 * spanFigures is the hover text of a waterfall row: the span's own tokens
 * and cost, and its subtree's (what counts in the run's totals from it and
 * everything below it), "" when neither has any.
 */
function spanFigures(n) {
  const parts = [];
  if (n.usage || n.cost) {
    const own = [tokensText(n.usage), n.cost ? usd(n.cost.total_usd) : ''].filter(Boolean).join(' · ');
    parts.push(`this span: ${own}${n.counted || !n.usage ? '' : ' (not counted: repeats usage counted elsewhere)'}`);
  }
  if (n.subtree_usage || n.subtree_cost) {
    parts.push(`with everything below: ${[tokensText(n.subtree_usage), n.subtree_cost ? usd(n.subtree_cost.total_usd) : ''].filter(Boolean).join(' · ')}`);
  }
  return parts.join('\n');
}

/** axisTicks labels 0, ¼, ½, ¾ and the full run duration. */
function axisTicks(total) {
  return [0, 0.25, 0.5, 0.75, 1].map((f) => `<span class="tick" style="left:${f * 100}%">${fmtMs(total * f)}</span>`).join('');
}

/** ROW_H is the height of a waterfall row in pixels (see .wf-row in style.css). */
const ROW_H = 22;

/**
 * RUN_PART is the most spans the run page asks for at first, CHILDREN_PART
 * the most one "load more" brings: enough for any run an engineer reads
 * whole, small enough that a 50,000-span run paints at once.
 */
const RUN_PART = 2000;
const CHILDREN_PART = 1000;

/** Waterfall draws the span rows, with collapse/expand, selection and keyboard navigation. */
class Waterfall {
  constructor(el, rows, t0, t1, onSelect) {
    this.el = el;
    this.rows = rows;
    this.t0 = t0;
    this.span = t1 - t0;
    this.onSelect = onSelect;
    this.onMore = null;
    this.collapsed = new Uint8Array(rows.length);
    this.visible = [];
    this.focus = 0;
    this.selected = -1;
    // Big runs open with deep subtrees collapsed, so the first paint stays small.
    if (rows.length > 500) rows.forEach((r, i) => { if (r.depth >= 2 && r.kids.length) this.collapsed[i] = 1; });
    el.addEventListener('click', (ev) => {
      const rowEl = ev.target.closest('.wf-row');
      if (!rowEl) return;
      const i = +rowEl.dataset.i;
      if (ev.target.closest('.tg')) {
        this.focus = i;
        this.toggle(i);
        this.moveFocus(i);
      } else this.select(i);
      this.el.focus({ preventScroll: true });
    });
    el.addEventListener('keydown', (ev) => this.key(ev));
  }

  /**
   * setRows replaces the rows (after loading more of the tree), keeping
   * which spans are collapsed, focused and selected.
   */
  setRows(rows) {
    const idOf = (i) => (i >= 0 && this.rows[i] ? this.rows[i].n.span_id : '');
    const folded = new Set(this.rows.filter((_, i) => this.collapsed[i]).map((r) => r.n.span_id));
    const focus = idOf(this.focus), selected = idOf(this.selected);
    this.rows = rows;
    this.collapsed = new Uint8Array(rows.length);
    rows.forEach((r, i) => { if (folded.has(r.n.span_id)) this.collapsed[i] = 1; });
    const at = (sid) => rows.findIndex((r) => r.n.span_id === sid);
    this.focus = Math.max(at(focus), 0);
    this.selected = selected ? at(selected) : -1;
    this.render();
  }

  /** moreHTML draws a "load more" row: what its node's subtree still hides. */
  moreHTML(i, r) {
    const n = r.more;
    const what = n._loading ? 'loading…' : n._error ? `could not load: ${n._error}`
      : `${num(n.hidden_spans)} more span${n.hidden_spans === 1 ? '' : 's'} (${num(n.hidden_children)} direct) — load`;
    return `<div class="wf-row wf-more${i === this.focus ? ' focus' : ''}" role="treeitem" id="wf-${i}" data-i="${i}" data-more-of="${esc(n.span_id)}" aria-level="${r.depth + 1}" aria-selected="false">`
      + `<div class="label" style="padding-left:${4 + r.depth * 14}px"><span class="tg leaf"></span><button type="button" class="more" tabindex="-1">⋯ ${esc(what)}</button></div><div class="lane"></div></div>`;
  }

  rowHTML(i) {
    const r = this.rows[i];
    if (r.more) return this.moreHTML(i, r);
    const n = r.n;
    const left = ((r.start - this.t0) / this.span) * 100;
    const width = Math.max(((r.stop - r.start) / this.span) * 100, 0.15);
    const isErr = n.status === 'error';
    const exp = r.kids.length ? ` aria-expanded="${this.collapsed[i] ? 'false' : 'true'}"` : '';
    const tg = r.kids.length
      ? `<button type="button" class="tg" tabindex="-1" aria-hidden="true">${this.collapsed[i] ? '▶' : '▼'}</button>`
      : '<span class="tg leaf"></span>';
    const marks = (isErr ? `<span class="mark err" title="${esc(n.status_message || n.error_type || 'error')}">ERR</span>` : '')
      + (r.retry ? `<span class="mark retry" title="retry${n.attempt ? ` (attempt ${n.attempt})` : ''}">RETRY</span>` : '');
    const hidden = this.collapsed[i] ? ` <span class="muted">(+${r.end - i - 1})</span>` : '';
    const figures = spanFigures(n);
    const cost = n.subtree_cost ? `<span class="wcost" data-usd="${esc(n.subtree_cost.total_usd)}" title="${esc(figures)}">${usd(n.subtree_cost.total_usd)}</span>` : '';
    const end = left + width;
    const d = fmtMs(n.duration_ms);
    const dur = end < 82
      ? `<span class="dur" style="left:calc(${end}% + 4px)">${d}</span>`
      : left > 18
        ? `<span class="dur" style="right:calc(${100 - left}% + 4px)">${d}</span>`
        : `<span class="dur in" style="right:calc(${100 - end}% + 4px)">${d}</span>`;
    return `<div class="wf-row k-${esc(n.type)}${isErr ? ' is-err' : ''}${i === this.focus ? ' focus' : ''}" role="treeitem" id="wf-${i}" data-i="${i}" data-span-id="${esc(n.span_id)}" data-depth="${r.depth}" data-type="${esc(n.type)}" aria-level="${r.depth + 1}"${exp} aria-selected="${i === this.selected}">`
      + `<div class="label" style="padding-left:${4 + r.depth * 14}px">${tg}<span class="kind">${TYPE_LABEL[n.type] || 'SPAN'}</span><span class="name" title="${esc(n.name)}">${esc(n.name)}</span>${marks}${hidden}${cost}</div>`
      + `<div class="lane"><div class="bar" style="left:${left}%;width:${width}%" title="${esc(n.name)}: ${fmtMs(n.duration_ms)} at +${fmtMs(r.start - this.t0)}${figures ? `\n${esc(figures)}` : ''}"></div>${dur}</div></div>`;
  }

  /**
   * render recomputes which rows are shown (collapsed subtrees skipped) and
   * paints them. Only the rows in and near the viewport are in the DOM, so a
   * run of thousands of spans costs no more to draw than one screenful.
   */
  render() {
    const vis = [];
    for (let i = 0; i < this.rows.length;) {
      vis.push(i);
      i = this.collapsed[i] ? this.rows[i].end : i + 1;
    }
    this.visible = vis;
    this.pos = new Int32Array(this.rows.length).fill(-1);
    vis.forEach((i, k) => { this.pos[i] = k; });
    if (this.pos[this.focus] < 0) this.focus = this.nearestVisible(this.focus);
    if (!this.spacer) {
      this.el.innerHTML = '<div class="wf-spacer" role="presentation"><div class="wf-window" role="presentation"></div></div>';
      this.spacer = this.el.firstChild;
      this.win = this.spacer.firstChild;
      this.el.addEventListener('scroll', () => {
        if (this.raf) return;
        this.raf = requestAnimationFrame(() => { this.raf = 0; this.paint(); });
      }, { passive: true });
    }
    this.spacer.style.height = `${vis.length * ROW_H}px`;
    this.painted = null;
    this.paint();
    const count = document.getElementById('wf-count');
    if (count) {
      const real = (list) => list.reduce((k, i) => k + (this.rows[i].more ? 0 : 1), 0);
      count.textContent = `${real(vis)} of ${real(this.rows.map((_, i) => i))} spans shown`;
    }
  }

  /** paint draws the window of visible rows around the scroll position. */
  paint() {
    const view = this.el.clientHeight || 600;
    const first = Math.max(0, Math.floor(this.el.scrollTop / ROW_H) - 15);
    const last = Math.min(this.visible.length, first + Math.ceil(view / ROW_H) + 30);
    const key = `${first}:${last}`;
    if (this.painted === key) return;
    this.painted = key;
    const parts = new Array(last - first);
    for (let k = first; k < last; k++) parts[k - first] = this.rowHTML(this.visible[k]);
    this.win.style.transform = `translateY(${first * ROW_H}px)`;
    this.win.innerHTML = parts.join('');
    this.el.setAttribute('aria-activedescendant', `wf-${this.focus}`);
  }

  nearestVisible(i) {
    let j = i;
    while (j >= 0 && this.pos[j] < 0) j = this.rows[j].parent;
    return Math.max(j, 0);
  }

  toggle(i, collapse = !this.collapsed[i]) {
    if (!this.rows[i].kids.length || !!this.collapsed[i] === collapse) return;
    this.collapsed[i] = collapse ? 1 : 0;
    this.render();
    this.scrollTo(this.focus);
  }

  setAll(collapse) {
    this.rows.forEach((r, i) => { this.collapsed[i] = collapse && r.kids.length ? 1 : 0; });
    this.render();
  }

  moveFocus(i) {
    const old = this.el.querySelector('.wf-row.focus');
    if (old) old.classList.remove('focus');
    this.focus = i;
    this.scrollTo(i);
    const row = document.getElementById(`wf-${i}`);
    if (row) row.classList.add('focus');
    this.el.setAttribute('aria-activedescendant', `wf-${i}`);
  }

  /** scrollTo scrolls the least needed to show row i, and paints. */
  scrollTo(i) {
    const k = this.pos[i];
    if (k < 0) return;
    const top = k * ROW_H, view = this.el.clientHeight;
    if (top < this.el.scrollTop) this.el.scrollTop = top;
    else if (top + ROW_H > this.el.scrollTop + view) this.el.scrollTop = top + ROW_H - view;
    this.paint();
    const row = document.getElementById(`wf-${i}`);
    if (row && !row.classList.contains('focus') && i === this.focus) row.classList.add('focus');
  }

  /** select shows a span's details (a "load more" row loads); reveal expands its ancestors first. */
  select(i, reveal = false) {
    if (this.rows[i].more) {
      this.moveFocus(i);
      if (this.onMore) this.onMore(this.rows[i]);
      return;
    }
    if (reveal && this.pos[i] < 0) {
      for (let p = this.rows[i].parent; p >= 0; p = this.rows[p].parent) this.collapsed[p] = 0;
      this.render();
    }
    const prev = this.el.querySelector('.wf-row[aria-selected="true"]');
    if (prev) prev.setAttribute('aria-selected', 'false');
    this.selected = i;
    const row = document.getElementById(`wf-${i}`);
    if (row) row.setAttribute('aria-selected', 'true');
    this.moveFocus(i);
    history.replaceState(null, '', `#span=${this.rows[i].n.span_id}`);
    this.onSelect(i);
  }

  key(ev) {
    const pos = this.visible.indexOf(this.focus);
    const r = this.rows[this.focus];
    let handled = true;
    switch (ev.key) {
      case 'ArrowDown': if (pos < this.visible.length - 1) this.moveFocus(this.visible[pos + 1]); break;
      case 'ArrowUp': if (pos > 0) this.moveFocus(this.visible[pos - 1]); break;
      case 'Home': this.moveFocus(this.visible[0]); break;
      case 'End': this.moveFocus(this.visible[this.visible.length - 1]); break;
      case 'ArrowRight':
        if (r.kids.length && this.collapsed[this.focus]) this.toggle(this.focus, false);
        else if (r.kids.length) this.moveFocus(r.kids[0]);
        break;
      case 'ArrowLeft':
        if (r.kids.length && !this.collapsed[this.focus]) this.toggle(this.focus, true);
        else if (r.parent >= 0) this.moveFocus(r.parent);
        break;
      case 'PageDown': this.moveFocus(this.visible[Math.min(pos + 20, this.visible.length - 1)]); break;
      case 'PageUp': this.moveFocus(this.visible[Math.max(pos - 20, 0)]); break;
      case 'Enter': case ' ': this.select(this.focus); break;
      default: handled = false;
    }
    if (handled) ev.preventDefault();
  }
}

/** pretty pretty-prints JSON text; anything else is returned as is. */
function pretty(v) {
  if (typeof v !== 'string') return JSON.stringify(v, null, 2);
  const t = v.trim();
  if (t.startsWith('{') || t.startsWith('[')) {
    try { return JSON.stringify(JSON.parse(t), null, 2); } catch { /* not JSON */ }
  }
  return v;
}

/** valueHTML shows a value, pretty-printed, collapsed when long. */
function valueHTML(v, attrs = '') {
  const p = pretty(v);
  const lines = p.split('\n').length;
  if (p.length > 600 || lines > 16) {
    const head = p.replace(/\s+/g, ' ').slice(0, 80);
    return `<details><summary><span class="mono">${esc(head)}…</span> <span class="muted">(${num(p.length)} chars)</span></summary><pre class="json"${attrs}>${esc(p)}</pre></details>`;
  }
  if (lines > 1 || attrs) return `<pre class="json"${attrs}>${esc(p)}</pre>`;
  return esc(p);
}

function kvHTML(pairs) {
  const items = pairs.filter(([, v]) => v !== undefined && v !== null && v !== '' && v !== false);
  if (!items.length) return '<p class="muted">none</p>';
  return `<dl class="kv">${items.map(([k, v, raw]) => `<dt>${esc(k)}</dt><dd>${raw ? v : valueHTML(String(v))}</dd>`).join('')}</dl>`;
}

const CONTENT_LABEL = {
  'tool.arguments': 'Tool arguments', 'tool.result': 'Tool result', 'input.messages': 'Input messages',
  'output.messages': 'Output messages', system_instructions: 'System instructions', 'tool.definitions': 'Tool definitions',
};

const contentCache = new Map();

function showSpan(row, t0, traceID) {
  const n = row.n;
  const el = document.getElementById('detail');
  const usage = n.usage ? kvHTML([
    ['input', num(n.usage.input_tokens)], ['cache read', num(n.usage.cache_read_tokens)],
    ['cache write', num(n.usage.cache_write_tokens)], ['output', num(n.usage.output_tokens)],
    ['reasoning', num(n.usage.reasoning_tokens)], ['mode', n.usage_mode === 'aggregated' ? 'aggregated (repeats its children; not added to totals)' : n.usage_mode],
    ['unreconciled', n.usage_unreconciled ? 'yes: the reported numbers did not add up' : ''],
    ['in run totals', n.counted ? 'counted' : 'not counted (see how it was derived)'],
  ]) : '<p class="muted">no usage</p>';
  const cost = n.cost ? kvHTML([
    ['total', moneyHTML(n.cost.total_usd), true], ['input', moneyHTML(n.cost.input_usd), true],
    ['cache read', moneyHTML(n.cost.cache_read_usd), true], ['cache write', moneyHTML(n.cost.cache_write_usd), true],
    ['output', moneyHTML(n.cost.output_usd), true], ['source', n.cost_source],
    ['price entry', n.price_entry ? `${n.price_entry}${n.price_version ? ` @ ${n.price_version}` : ''}` : ''],
  ]) : '<p class="muted">no cost</p>';
  const events = (n.events || []).length
    ? (n.events.map((e) => `<div class="content-item"><span class="ck">${esc(e.name)}</span> <span class="muted">+${fmtMs(parseTime(e.time) - t0)}</span>${e.attributes ? valueHTML(JSON.stringify(e.attributes), ' data-event') : ''}</div>`).join(''))
    : '<p class="muted">none</p>';
  const attrs = Object.entries(n.attributes || {}).sort(([a], [b]) => a.localeCompare(b));
  const res = Object.entries(n.resource || {}).sort(([a], [b]) => a.localeCompare(b));
  el.innerHTML = `
<h2 id="detail-name">${esc(n.name)}</h2>
<p><span class="pill muted">${TYPE_LABEL[n.type] || 'SPAN'}</span> <span class="pill ${n.status === 'error' ? 'error' : 'ok'}">${esc(n.status || 'unset')}</span>${row.retry ? ' <span class="pill pending">retry</span>' : ''}${n.orphan ? ' <span class="pill warn" title="its parent span never arrived">orphan</span>' : ''}</p>
${kvHTML([
    ['span id', `<code>${esc(n.span_id)}</code>`, true], ['parent', n.parent_span_id ? `<code>${esc(n.parent_span_id)}</code>` : '', true],
    ['operation', n.operation], ['kind', n.kind], ['service', n.service],
    ['start', `${timeHTML(n.start, true)} <span class="muted">(+${fmtMs(row.start - t0)})</span>`, true],
    ['duration', fmtMs(n.duration_ms)], ['time to first chunk', n.time_to_first_chunk_ms ? fmtMs(n.time_to_first_chunk_ms) : ''],
    ['provider', n.provider], ['model', n.model], ['request model', n.request_model !== n.model ? n.request_model : ''],
    ['agent', n.agent_name], ['tool', n.tool_name], ['tool call id', n.tool_call_id], ['attempt', n.attempt],
    ['finish reasons', (n.finish_reasons || []).join(', ')], ['error type', n.error_type], ['status message', n.status_message],
  ])}
<h3>Usage</h3>${usage}
<h3>Cost</h3>${cost}
${n.children && n.children.length && (n.subtree_usage || n.subtree_cost) ? `<h3>With everything below</h3><div id="detail-subtree">${kvHTML([
    ['tokens', tokensText(n.subtree_usage)], ['cache read', n.subtree_usage ? num(n.subtree_usage.cache_read_tokens) : ''],
    ['cost', n.subtree_cost ? moneyHTML(n.subtree_cost.total_usd) : '', true],
  ])}</div>` : ''}
${n.usage || n.cost ? '<h3>How these numbers were derived</h3><div id="detail-explain"><p class="loading">Loading…</p></div>' : ''}
<h3>Content</h3><div id="detail-content"><p class="loading">Loading captured content…</p></div>
<h3>Events</h3>${events}
<h3>Attributes</h3>${kvHTML(attrs)}
${res.length ? `<details><summary><h3 style="display:inline">Resource</h3></summary>${kvHTML(res)}</details>` : ''}`;
  loadContent(traceID, n.span_id);
  if (n.usage || n.cost) loadExplain(traceID, n.span_id);
}

// loadExplain fills the span's "how derived" section from
// GET /api/v1/runs/{trace}/spans/{span}/explain: the instrumentation
// reading, what the span reported, each step and the cost arithmetic.
async function loadExplain(traceID, spanID) {
  const selected = () => document.querySelector('.wf-row[aria-selected="true"]')?.dataset.spanId === spanID;
  let x;
  try {
    const data = await api(`/api/v1/runs/${traceID}/spans/${spanID}/explain`);
    x = (data.spans || [])[0];
  } catch (err) {
    const b = document.getElementById('detail-explain');
    if (b && selected()) b.innerHTML = errorHTML(err, 'explanations');
    return;
  }
  const b = document.getElementById('detail-explain');
  if (!b || !selected() || !x) return;
  const list = (items) => `<ul class="steps">${items.map((i) => `<li>${esc(i)}</li>`).join('')}</ul>`;
  b.innerHTML = `${kvHTML([
    ['reading', `<code>${esc(x.reading)}</code>${x.instrumentation ? ` <span class="muted">${esc(x.instrumentation)}</span>` : ''}`, true],
    ['scope', `${esc(x.scope || '')} ${esc(x.scope_version || '')}`, true],
    ['source', x.source],
    ['in run totals', `${x.counted ? 'counted' : 'not counted'}: ${esc(x.counted_why)}`, true],
  ])}
${(x.reported || []).length ? `<h4>Reported</h4>${kvHTML(x.reported.map((r) => [r.key + (r.on_resource ? ' (resource)' : ''), r.value]))}` : ''}
<h4>Steps</h4><div id="explain-steps">${list(x.steps || [])}</div>
${(x.cost_lines || []).length ? `<h4>Cost</h4><div id="explain-cost">${list(x.cost_lines)}</div>` : ''}
${x.stored ? '<p class="pill warn">The stored figures differ from what the current rules derive: <code>tally reprice</code> re-derives them.</p>' : ''}`;
}

async function loadContent(traceID, spanID) {
  const box = () => document.getElementById('detail-content');
  let data = contentCache.get(spanID);
  if (!data) {
    try {
      data = await api(`/api/v1/runs/${traceID}/spans/${spanID}`);
      contentCache.set(spanID, data);
    } catch (err) {
      const b = box();
      if (b && document.querySelector(`.wf-row[aria-selected="true"]`)?.dataset.spanId === spanID) b.innerHTML = errorHTML(err, 'captured content');
      return;
    }
  }
  const b = box();
  if (!b || document.querySelector('.wf-row[aria-selected="true"]')?.dataset.spanId !== spanID) return;
  const items = data.content || [];
  const chat = data.chat ? chatViewHTML(data.chat) : '';
  if (!items.length && !chat) {
    b.innerHTML = '<p class="muted">No content captured for this span (content is stored only when the SDK records it, and may be disabled or redacted by configuration).</p>';
    return;
  }
  const raw = items.map((c) => `<div class="content-item"><span class="ck">${esc(CONTENT_LABEL[c.kind] || c.kind)}</span> <span class="muted mono">${esc(c.source_key)}</span>${c.truncated ? ' <span class="pill warn">truncated at ingest</span>' : ''}${valueHTML(c.value, ` data-kind="${esc(c.kind)}"`)}</div>`).join('');
  // Messages read as a conversation; the raw values stay one click away.
  b.innerHTML = chat
    ? chat + (raw ? `<details class="raw-content"><summary>Raw captured values (${items.length})</summary>${raw}</details>` : '')
    : raw;
}

// ---------------------------------------------------------------- chat view

/** chatViewHTML draws a span's chat (from the API's transcript reading): sent, then answered. */
function chatViewHTML(chat) {
  const src = (s) => (s ? ` <span class="muted mono" title="read from">${esc(s)}</span>` : '');
  return `<div class="chat" data-chat>`
    + (chat.input && chat.input.length ? `<div class="chat-side"><div class="chat-head">Sent${src(chat.input_source)}</div>${chatHTML(chat.input)}</div>` : '')
    + (chat.output && chat.output.length ? `<div class="chat-side"><div class="chat-head">Answered${src(chat.output_source)}</div>${chatHTML(chat.output)}</div>` : '')
    + '</div>';
}

/** chatHTML draws messages as turns: role, text, tool calls and their results. */
function chatHTML(messages) {
  return messages.map((m) => `<div class="msg role-${esc(m.role)}" data-role="${esc(m.role)}"><div class="msg-role">${esc(m.role)}${m.finish_reason ? ` <span class="muted">· ${esc(m.finish_reason)}</span>` : ''}</div>${(m.parts || []).map(partHTML).join('')}</div>`).join('');
}

function partHTML(p) {
  switch (p.type) {
    case 'text': return `<div class="part-text">${esc(p.text)}</div>`;
    case 'tool_call': return `<div class="part-call" data-part="tool_call"><span class="ck">→ ${esc(p.name || 'tool')}</span>${p.id ? ` <span class="muted mono">${esc(p.id)}</span>` : ''}${p.arguments ? valueHTML(p.arguments) : ''}</div>`;
    case 'tool_result': return `<div class="part-result" data-part="tool_result"><span class="ck">← ${esc(p.name || 'result')}</span>${p.id ? ` <span class="muted mono">${esc(p.id)}</span>` : ''}${valueHTML(p.result || '')}</div>`;
    case 'reasoning': return `<details class="part-reasoning"><summary>reasoning</summary><div class="part-text">${esc(p.text)}</div></details>`;
    default: return `<div class="muted">${esc(p.text || p.type)}</div>`;
  }
}

async function exportFixture(traceID) {
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
    status.innerHTML = (err.status === 404 && /not available/.test(err.message)) || err.status === 501
      ? '<span class="pill warn">replay fixtures are not available in this build</span>'
      : `<span class="pill error">export failed: ${esc(err.message)}</span>`;
  }
}

// ---------------------------------------------------------------- conversation page

async function pageConversation() {
  const el = document.getElementById('conversation');
  const id = main.dataset.id;
  let page;
  try {
    page = await api(`/api/v1/runs?${new URLSearchParams({ conversation: id, limit: '1000' })}`);
  } catch (err) {
    el.innerHTML = errorHTML(err, 'conversation');
    return;
  }
  const runs = page.runs.slice().sort((a, b) => parseTime(a.start) - parseTime(b.start));
  if (!runs.length) {
    el.innerHTML = `<p class="empty" data-empty>No runs carry conversation id <code>${esc(id)}</code>. Runs join a conversation through <code>gen_ai.conversation.id</code> (or its aliases, e.g. <code>session.id</code>).</p>`;
    return;
  }
  const sum = (f) => runs.reduce((a, r) => a + f(r), 0);
  const first = parseTime(runs[0].start);
  const last = Math.max(...runs.map((r) => parseTime(r.end)));
  const cols = [{ key: 'n', label: '#', num: true, html: (r, i) => String(i + 1) }, ...RUN_COLS];
  el.innerHTML = `
<dl class="stats">
  <div class="stat"><dt>Runs</dt><dd>${num(runs.length)}${page.next_cursor ? ' <small>(first 1000)</small>' : ''}</dd></div>
  <div class="stat"><dt>Cost</dt><dd>${moneyHTML(sum((r) => r.cost.total_usd), 'conv-cost')}</dd></div>
  <div class="stat"><dt>Elapsed</dt><dd>${fmtMs(last - first)}</dd></div>
  <div class="stat"><dt>Run time</dt><dd>${fmtMs(sum((r) => r.duration_ms))}</dd></div>
  <div class="stat"><dt>Input / cache read</dt><dd>${num(sum((r) => r.usage.input_tokens))} <small>/ ${num(sum((r) => r.usage.cache_read_tokens))}</small></dd></div>
  <div class="stat"><dt>Output tokens</dt><dd>${num(sum((r) => r.usage.output_tokens))}</dd></div>
  <div class="stat"><dt>LLM / tool calls</dt><dd>${num(sum((r) => r.llm_calls))} <small>/</small> ${num(sum((r) => r.tool_calls))}</dd></div>
  <div class="stat"><dt>Errors</dt><dd>${num(sum((r) => r.errors))}</dd></div>
</dl>
<p class="muted">Started ${timeHTML(runs[0].start)}; user ${esc(runs.find((r) => r.user_id)?.user_id || '—')}. Runs in the order they started.</p>
${tableHTML(cols, runs, null, { id: 'conv-runs', rowAttrs: (r) => ` data-trace-id="${esc(r.trace_id)}"${r.status === 'error' ? ' class="err"' : ''}` })}
<h2>Transcript</h2><div id="conv-transcript"><p class="loading">Loading the transcript…</p></div>`;
  const box = document.getElementById('conv-transcript');
  try {
    const tr = await api(`/api/v1/conversations/${encodeURIComponent(id)}/transcript`);
    box.innerHTML = (tr.truncated ? '<p class="notice warn">The transcript shows the conversation\'s first runs only.</p>' : '')
      + tr.turns.map((t, i) => `<section class="turn" data-trace-id="${esc(t.trace_id)}"><h3><a href="/runs/${esc(t.trace_id)}">Run ${i + 1}</a> <span class="muted">${esc(t.task)} · ${timeHTML(t.start)}</span>${t.status === 'error' ? ' <span class="pill error">failed</span>' : ''}</h3>${t.messages.length ? chatHTML(t.messages) : '<p class="muted">No messages captured in this run.</p>'}</section>`).join('');
  } catch (err) {
    box.innerHTML = errorHTML(err, 'transcript');
  }
}

// ---------------------------------------------------------------- conversations page

async function pageConversations() {
  const el = document.getElementById('conversations');
  const params = new URLSearchParams(location.search);
  let page;
  try {
    page = await api(`/api/v1/conversations?${copyParams(params, ['since', 'until', 'cursor', 'limit'])}`);
  } catch (err) {
    el.innerHTML = errorHTML(err, 'conversations');
    return;
  }
  const list = page.conversations || [];
  if (!list.length) {
    el.innerHTML = `<p class="empty" data-empty>${params.get('cursor') ? 'No more conversations.' : 'No conversations yet. Runs join a conversation through <code>gen_ai.conversation.id</code> (or its aliases, e.g. <code>session.id</code>).'}</p>`;
    return;
  }
  const cols = [
    { key: 'id', label: 'Conversation', html: (c) => `<a href="/conversations/${encodeURIComponent(c.conversation_id)}">${esc(c.conversation_id)}</a>` },
    { key: 'runs', label: 'Runs', num: true, html: (c) => num(c.runs) },
    { key: 'first', label: 'First run', html: (c) => timeHTML(c.first) },
    { key: 'last', label: 'Last activity', html: (c) => timeHTML(c.last) },
    { key: 'tokens', label: 'In / out', num: true, html: (c) => `${num(c.usage.input_tokens)} / ${num(c.usage.output_tokens)}` },
    { key: 'cost', label: 'Cost', num: true, html: (c) => moneyHTML(c.cost.total_usd) },
    { key: 'errors', label: 'Error spans', num: true, html: (c) => num(c.errors) },
  ];
  const next = page.next_cursor ? `<p><a href="/conversations?${copyParams(params, ['since', 'until', 'limit'], { cursor: page.next_cursor })}">Next page →</a></p>` : '';
  el.innerHTML = tableHTML(cols, list, null, { id: 'conv-list', rowAttrs: (c) => ` data-conversation-id="${esc(c.conversation_id)}"` }) + next;
}

// ---------------------------------------------------------------- charts

const PALETTE = ['#0969da', '#bc4c00', '#6f42c1', '#1a7f37', '#cf222e', '#9a6700', '#57606a'];

/** niceMax rounds up to 1, 2 or 5 × 10^n, for axis ticks. */
function niceStep(max, ticks = 4) {
  if (!(max > 0)) return 1;
  const raw = max / ticks;
  const p = 10 ** Math.floor(Math.log10(raw));
  const f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/**
 * stackedBars draws a time-series bar chart: buckets [{t (ms), parts:[{key, value}]}],
 * step (ms per bucket), fmt formats values, unit names the y axis.
 */
function stackedBars(buckets, { from, to, step, fmt, unit, keys }) {
  const W = 1200, H = 240, L = 64, R = 12, T = 12, B = 36;
  const totals = buckets.map((b) => b.parts.reduce((a, p) => a + p.value, 0));
  const ymax = Math.max(...totals, 0);
  const ystep = niceStep(ymax);
  const ytop = Math.max(ystep * Math.ceil(ymax / ystep), ystep);
  const x = (t) => L + ((t - from) / (to - from)) * (W - L - R);
  const y = (v) => H - B - (v / ytop) * (H - T - B);
  const bw = Math.max(((W - L - R) * step) / (to - from) - 1, 1);
  let g = '';
  for (let v = 0; v <= ytop + 1e-12; v += ystep) {
    g += `<g class="grid"><line x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}"/></g><text x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${esc(fmt(v))}</text>`;
  }
  const span = to - from;
  const nt = 6;
  for (let k = 0; k <= nt; k++) {
    const t = from + (span * k) / nt;
    const d = new Date(t);
    const label = span > 2 * 864e5 ? `${pad(d.getMonth() + 1)}-${pad(d.getDate())}${span < 8 * 864e5 ? ` ${pad(d.getHours())}:00` : ''}` : `${pad(d.getHours())}:${pad(d.getMinutes())}`;
    g += `<text x="${x(t)}" y="${H - B + 16}" text-anchor="${k === 0 ? 'start' : k === nt ? 'end' : 'middle'}">${label}</text>`;
  }
  let bars = '';
  buckets.forEach((b, i) => {
    let acc = 0;
    const detail = b.parts.filter((p) => p.value > 0).map((p) => `${p.key || '(none)'}: ${fmt(p.value)}`).join('\n');
    for (const p of b.parts) {
      if (!(p.value > 0)) continue;
      const y0 = y(acc), y1 = y(acc + p.value);
      acc += p.value;
      const color = PALETTE[Math.max(keys.indexOf(p.key), 0) % PALETTE.length];
      bars += `<rect class="bar" x="${x(b.t)}" y="${y1}" width="${bw}" height="${Math.max(y0 - y1, 0.5)}" style="fill:${color}"><title>${esc(localTime(b.t))} (${esc(new Date(b.t).toISOString())} UTC)\ntotal ${esc(fmt(totals[i]))}\n${esc(detail)}</title></rect>`;
    }
  });
  const axis = `<g class="axis"><line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"/><line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}"/></g>`;
  const ylabel = `<text x="12" y="${T + (H - T - B) / 2}" transform="rotate(-90 12 ${T + (H - T - B) / 2})" text-anchor="middle">${esc(unit)}</text>`;
  const legend = keys.map((k, i) => `<span><i style="background:${PALETTE[i % PALETTE.length]}"></i>${esc(k || '(none)')}</span>`).join('');
  return `<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(unit)} over time">${g}${axis}${ylabel}${bars}</svg><div class="legend" style="margin:0">${legend}</div>`;
}

/** hbars draws one horizontal bar per row with an optional threshold per row. */
function hbars(rows, { fmt, title, max }) {
  const W = 560, rowH = 20, L = 150, R = 70, T = 22;
  const H = T + rows.length * rowH + 8;
  const vmax = Math.max(max || 0, ...rows.map((r) => r.value), ...rows.map((r) => r.threshold || 0)) || 1;
  const x = (v) => L + (v / vmax) * (W - L - R);
  let out = `<text x="${L}" y="14" font-weight="600">${esc(title)}</text>`;
  rows.forEach((r, i) => {
    const yy = T + i * rowH;
    const over = r.threshold != null && r.value > r.threshold;
    out += `<text x="${L - 6}" y="${yy + 14}" text-anchor="end">${esc(r.label)}</text>`
      + `<rect class="hbar" x="${L}" y="${yy + 3}" width="${Math.max(x(r.value) - L, 1)}" height="${rowH - 6}" style="fill:${over ? 'var(--err)' : 'var(--tool)'}"><title>${esc(r.label)}: ${esc(fmt(r.value))}${r.threshold != null ? ` (alert threshold ${esc(fmt(r.threshold))})` : ''}</title></rect>`
      + `<text x="${x(r.value) + 4}" y="${yy + 14}">${esc(fmt(r.value))}</text>`;
    if (r.threshold != null) {
      out += `<line class="threshold" x1="${x(r.threshold)}" x2="${x(r.threshold)}" y1="${yy}" y2="${yy + rowH}"><title>alert threshold ${esc(fmt(r.threshold))}</title></line>`;
    }
  });
  out += `<g class="axis"><line x1="${L}" x2="${L}" y1="${T}" y2="${H - 8}"/></g>`;
  return `<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}">${out}</svg>`;
}

// ---------------------------------------------------------------- costs page

const BUCKET_MS = { minute: 6e4, hour: 36e5, day: 864e5 };

async function pageCosts() {
  const params = new URLSearchParams(location.search);
  setupRangeForm(document.getElementById('range'), params);
  const el = document.getElementById('costs');
  const { from, to } = parseRange(params.get('since'), params.get('until'), '24h');
  let bucket = params.get('bucket');
  if (!bucket) bucket = to - from <= 3 * 36e5 ? 'minute' : to - from <= 4 * 864e5 ? 'hour' : 'day';
  if (bucket === 'minute' && to - from > 864e5) bucket = 'hour';
  const base = copyParams(params, ['since', 'until', 'agent', 'service', 'user'], { since: '24h' });
  const q = (by, withBucket) => {
    const p = new URLSearchParams(base);
    p.set('by', by);
    p.set('compare', 'previous');
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
    el.innerHTML = errorHTML(err, 'Cost reports');
    return;
  }
  const agent = reports[0];
  document.getElementById('cost-range').textContent = rangeText(agent.since, agent.until);
  const t = agent.total;
  if (!t.spans) {
    el.innerHTML = `<p class="empty" data-empty>No spans in this time range. Widen the range, or send traces: see <a href="/runs">Runs</a> for how to point an OTel SDK at tally.</p>`;
    return;
  }
  const step = BUCKET_MS[agent.bucket || bucket];
  const keys = agent.groups.slice(0, PALETTE.length - 1).map((g) => g.key);
  const other = agent.groups.length > keys.length;
  const byTime = new Map();
  for (const g of agent.groups) {
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
  el.innerHTML = `
<dl class="stats">
  <div class="stat"><dt>Total spend</dt><dd class="bignum">${moneyHTML(t.cost.total_usd, 'cost-total')}</dd>${agent.previous ? `<dd id="cost-change" title="the same length just before: ${esc(rangeText(agent.previous.since, agent.previous.until))}">${changeHTML(t.cost.total_usd, agent.previous.total.cost.total_usd)} <small>vs ${usd(agent.previous.total.cost.total_usd)} before</small></dd>` : ''}</div>
  <div class="stat"><dt>LLM calls</dt><dd>${num(t.llm_calls)}</dd></div>
  <div class="stat"><dt>Input tokens</dt><dd>${num(t.usage.input_tokens)}</dd></div>
  <div class="stat"><dt>Cache read</dt><dd>${num(t.usage.cache_read_tokens)}</dd></div>
  <div class="stat"><dt>Cache hit ratio</dt><dd title="cache-read tokens / input tokens">${pct(t.usage.input_tokens ? t.usage.cache_read_tokens / t.usage.input_tokens : null)}</dd></div>
  <div class="stat"><dt>Output tokens</dt><dd>${num(t.usage.output_tokens)}</dd></div>
  <div class="stat"><dt title="cost of inference inside failed or retried tool-call attempts">Retry tax</dt><dd>${moneyHTML(t.retry_tax_usd)}</dd></div>
  <div class="stat"><dt>Unpriced spans</dt><dd>${t.unpriced_spans ? `<span class="pill warn">${num(t.unpriced_spans)}</span>` : '0'}</dd></div>
</dl>
${unmatched.length ? `<div class="notice warn" id="unmatched" role="status"><strong>${unmatched.length} model${unmatched.length === 1 ? '' : 's'} matched no price entry:</strong> their usage is counted but their cost is missing from these figures. Add them with <code>tally serve --prices prices.yaml</code>.
<ul>${unmatched.map((u) => `<li><code>${esc(u.provider)}/${esc(u.model)}</code>: ${num(u.spans)} spans, ${num(u.input_tokens)} input and ${num(u.output_tokens)} output tokens</li>`).join('')}</ul></div>` : ''}
<section class="panel" aria-labelledby="spend-h"><h2 id="spend-h">Spend per ${esc(agent.bucket || bucket)} by agent (USD)</h2>${stackedBars(buckets, { from, to, step, fmt: usd, unit: 'USD', keys: allKeys })}</section>
<section class="panel" aria-labelledby="top-h"><h2 id="top-h">Top runs by cost${params.get('user') ? ' <small class="muted">(the run list has no user filter: all users)</small>' : ''}</h2>${(top.runs || []).length ? tableHTML([
    { key: 'trace', label: 'Run', html: (r) => `<a class="mono" href="/runs/${esc(r.trace_id)}" title="${esc(r.trace_id)}">${shortID(r.trace_id)}</a>` },
    { key: 'task', label: 'Task', html: (r) => esc(r.task) },
    { key: 'agents', label: 'Agents', wrap: true, html: (r) => esc((r.agents || []).join(', ')) },
    { key: 'start', label: 'Started', html: (r) => timeHTML(r.start) },
    { key: 'cost', label: 'Cost', num: true, html: (r) => moneyHTML(r.cost.total_usd) },
  ], top.runs, null, { id: 'top-runs', rowAttrs: (r) => ` data-trace-id="${esc(r.trace_id)}"` }) + (top.next_cursor ? `<p><a href="/runs?${copyParams(params, ['since', 'until'], { sort: 'cost', dir: 'desc' })}">All runs by cost →</a></p>` : '') : '<p class="muted">No run started in this range.</p>'}</section>
<div class="grid2">
  ${DIMS.map((d, i) => costTable(d[0].toUpperCase() + d.slice(1), reports[i], d)).join('\n  ')}
</div>
<p class="muted">Figures: ${esc(agent.freshness?.rolled_up_hours ?? 0)} hour(s) from the hourly rollup, the rest live from spans.</p>`;
}

/** changeHTML is the change from before to now: "+25%", "−10%", "new" or "—". */
function changeHTML(now, before) {
  if (!before) return now ? '<span class="chg up" data-change="new">new</span>' : '<span class="muted">—</span>';
  const r = (now - before) / before;
  const cls = r > 0.005 ? 'up' : r < -0.005 ? 'down' : 'flat';
  return `<span class="chg ${cls}" data-change="${r.toFixed(4)}">${r > 0 ? '+' : r < 0 ? '−' : '±'}${Math.abs(r * 100).toFixed(Math.abs(r) < 0.1 ? 1 : 0)}%</span>`;
}

function costTable(label, report, by) {
  const total = report.total.cost.total_usd || 0;
  const prev = report.previous ? new Map(report.previous.groups.map((g) => [g.key, g.cost.total_usd])) : null;
  const link = (k) => (['agent', 'model', 'task', 'tool', 'service', 'conversation'].includes(by) ? `<a href="/runs?${new URLSearchParams({ [by]: k })}">${esc(k)}</a>` : esc(k));
  const cols = [
    { key: 'key', label, html: (g) => {
      if (!g.key) return '<span class="muted">(none)</span>';
      // A catalog model with the raw names the provider returned beneath it.
      const raw = g.models || [];
      if (raw.length > 1 || (raw.length === 1 && raw[0] !== g.key)) return `${esc(g.key)}<div class="muted raw-models">${raw.map(link).join(', ')}</div>`;
      return link(g.key);
    } },
    { key: 'cost', label: 'Cost', num: true, html: (g) => moneyHTML(g.cost.total_usd) + (g.unpriced_spans ? ' <span class="pill warn" title="spans without a price">+?</span>' : '') },
    { key: 'share', label: 'Share', num: true, html: (g) => { const s = total ? g.cost.total_usd / total : 0; return `<span class="share" style="width:${Math.round(s * 50)}px"></span>${pct(s)}`; } },
    ...(prev ? [{ key: 'change', label: 'vs before', title: 'change against the period of the same length just before', num: true, html: (g) => changeHTML(g.cost.total_usd, prev.get(g.key) || 0) }] : []),
    { key: 'llm', label: 'LLM calls', num: true, html: (g) => num(g.llm_calls) },
    { key: 'in', label: 'In', num: true, html: (g) => num(g.usage.input_tokens) },
    { key: 'cr', label: 'Cache read', num: true, html: (g) => num(g.usage.cache_read_tokens) },
    { key: 'out', label: 'Out', num: true, html: (g) => num(g.usage.output_tokens) },
  ];
  const foot = `<tr><th scope="row">Total</th><td class="num">${moneyHTML(total)}</td><td></td>${prev ? `<td class="num">${changeHTML(total, report.previous.total.cost.total_usd)}</td>` : ''}<td class="num">${num(report.total.llm_calls)}</td><td class="num">${num(report.total.usage.input_tokens)}</td><td class="num">${num(report.total.usage.cache_read_tokens)}</td><td class="num">${num(report.total.usage.output_tokens)}</td></tr>`;
  return `<section class="panel" aria-label="Cost by ${esc(by)}"><h2>By ${esc(by)}</h2>${tableHTML(cols, report.groups, null, { id: `cost-by-${by}`, rowHeader: true, foot })}</section>`;
}

// ---------------------------------------------------------------- tools page

/** thresholdsFrom reads per-subject alert thresholds of a kind from the alerts API's answer. */
function thresholdsFrom(alerts, kind, label) {
  const out = new Map();
  if (!alerts) return out;
  for (const r of alerts.rules || []) if (r.kind === kind && r.threshold != null) out.set('*', r.threshold);
  for (const a of listOf(alerts, 'alerts')) if (a.kind === kind && a.labels && a.labels[label]) out.set(a.labels[label], a.threshold);
  return out;
}

/** listOf accepts either a bare array or an object holding it under key. */
const listOf = (body, key) => (Array.isArray(body) ? body : (body && body[key]) || []);

async function pageTools() {
  const params = new URLSearchParams(location.search);
  setupRangeForm(document.getElementById('range'), params);
  const el = document.getElementById('tools');
  const qs = copyParams(params, ['since', 'until'], { since: '24h' });
  let body;
  try {
    body = await api(`/api/v1/tools?${qs}`);
  } catch (err) {
    el.innerHTML = errorHTML(err, 'Tool statistics');
    return;
  }
  let alerts = null;
  try { alerts = await api('/api/v1/alerts'); } catch { alerts = null; }
  const tools = listOf(body, 'tools');
  if (body && body.since) document.getElementById('tools-range').textContent = rangeText(body.since, body.until);
  if (!tools.length) {
    el.innerHTML = '<p class="empty" data-empty>No tool calls in this time range. Tool calls are spans with <code>gen_ai.operation.name = execute_tool</code> and <code>gen_ai.tool.name</code>.</p>';
    return;
  }
  const retryT = thresholdsFrom(alerts, 'tool_retry_rate', 'tool');
  const errT = thresholdsFrom(alerts, 'tool_error_rate', 'tool');
  const latT = thresholdsFrom(alerts, 'tool_latency_p95', 'tool');
  const th = (m, tool) => (m.has(tool) ? m.get(tool) : m.has('*') ? m.get('*') : null);
  const cols = [
    { key: 'tool', label: 'Tool', value: (t) => t.tool, html: (t) => `<button type="button" class="link" data-tool="${esc(t.tool)}" aria-expanded="false">${esc(t.tool)}</button>` },
    { key: 'calls', label: 'Calls', num: true, value: (t) => t.calls, html: (t) => num(t.calls) },
    { key: 'errors', label: 'Errors', num: true, value: (t) => t.errors, html: (t) => num(t.errors) },
    { key: 'error_rate', label: 'Error rate', num: true, value: (t) => t.error_rate, html: (t) => rateHTML(t.error_rate, th(errT, t.tool)) },
    { key: 'retries', label: 'Retries', num: true, value: (t) => t.retries, html: (t) => num(t.retries) },
    { key: 'retry_rate', label: 'Retry rate', num: true, value: (t) => t.retry_rate, html: (t) => rateHTML(t.retry_rate, th(retryT, t.tool)) },
    { key: 'repeats', label: 'Repeats', title: 'identical arguments after a success (loop signal)', num: true, value: (t) => t.repeats, html: (t) => num(t.repeats) },
    { key: 'p50', label: 'p50', num: true, value: (t) => t.p50_ms, html: (t) => fmtMs(t.p50_ms) },
    { key: 'p95', label: 'p95', num: true, value: (t) => t.p95_ms, html: (t) => { const x = th(latT, t.tool); return x != null && t.p95_ms > x ? `<span class="pill error" title="above the alert threshold ${fmtMs(x)}">${fmtMs(t.p95_ms)}</span>` : fmtMs(t.p95_ms); } },
    { key: 'p99', label: 'p99', num: true, value: (t) => t.p99_ms, html: (t) => fmtMs(t.p99_ms) },
  ];
  const state = { sort: 'calls', dir: 'desc' };
  const rows = tools.slice();
  const chartRows = (f, m) => rows.map((t) => ({ label: t.tool, value: f(t) || 0, threshold: th(m, t.tool) }));
  const render = () => {
    sortRows(rows, cols, state);
    el.innerHTML = `<div class="grid2">
<section class="panel">${hbars(chartRows((t) => t.retry_rate, retryT), { fmt: pct, title: 'Retry rate (dashed: alert threshold)' })}</section>
<section class="panel">${hbars(chartRows((t) => t.p95_ms, latT), { fmt: fmtMs, title: 'p95 latency (dashed: alert threshold)' })}</section>
</div>
${retryT.size || latT.size || errT.size ? '' : '<p class="muted">No tool alert rules reported by the alerts API: no thresholds to draw.</p>'}
${tableHTML(cols, rows, state, { id: 'tools-table', rowAttrs: (t) => ` data-tool="${esc(t.tool)}"` })}
<p class="muted">Select a tool to list example runs.${body.definitions && body.definitions.retry ? ` ${esc(body.definitions.retry)}` : ''}</p>
${modelsHTML(listOf(body, 'models'), thresholdsFrom(alerts, 'model_latency_p95', 'model'))}`;
  };
  render();
  wireSort(el, state, render);
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
    const links = (ids) => (ids || []).length ? ids.map((id) => `<a class="mono" href="/runs/${esc(id)}">${shortID(id)}</a>`).join(' ') : '<span class="muted">none</span>';
    const ex = document.createElement('tr');
    ex.className = 'examples';
    ex.innerHTML = `<td colspan="${cols.length}"><strong>Retried:</strong> ${links(t.retried_runs)} &nbsp; <strong>Failed:</strong> ${links(t.failed_runs)} &nbsp; <strong>Slowest:</strong> ${links(t.slowest_runs)}</td>`;
    tr.after(ex);
    b.setAttribute('aria-expanded', 'true');
  });
}

/** modelsHTML lists inference latency per model, with p95 alert thresholds. */
function modelsHTML(models, latT) {
  if (!models.length) return '';
  const th = (m) => (latT.has(m) ? latT.get(m) : latT.has('*') ? latT.get('*') : null);
  const slow = (v, x) => (x != null && v > x ? `<span class="pill error" title="above the alert threshold ${fmtMs(x)}">${fmtMs(v)}</span>` : fmtMs(v));
  return `<h2>Model latency</h2>${tableHTML([
    { key: 'model', label: 'Model', html: (m) => `<span class="mono">${esc(m.model)}</span>` },
    { key: 'calls', label: 'Calls', num: true, html: (m) => num(m.calls) },
    { key: 'p50', label: 'p50', num: true, html: (m) => fmtMs(m.p50_ms) },
    { key: 'p95', label: 'p95', num: true, html: (m) => slow(m.p95_ms, th(m.model)) },
    { key: 'p99', label: 'p99', num: true, html: (m) => fmtMs(m.p99_ms) },
    { key: 'ttfc', label: 'Streamed', title: 'calls that reported time to first chunk', num: true, html: (m) => num(m.ttfc_calls) },
    { key: 'ttfc50', label: 'TTFC p50', title: 'time to first chunk', num: true, html: (m) => (m.ttfc_calls ? fmtMs(m.ttfc_p50_ms) : '—') },
    { key: 'ttfc95', label: 'TTFC p95', num: true, html: (m) => (m.ttfc_calls ? fmtMs(m.ttfc_p95_ms) : '—') },
    { key: 'slow', label: 'Slowest runs', wrap: true, html: (m) => (m.slowest_runs || []).map((id) => `<a class="mono" href="/runs/${esc(id)}">${shortID(id)}</a>`).join(' ') },
  ], models, null, { id: 'models-table' })}`;
}

function rateHTML(rate, threshold) {
  if (threshold != null && rate > threshold) return `<span class="pill error" title="above the alert threshold ${pct(threshold)}">${pct(rate)}</span>`;
  return pct(rate);
}

// ---------------------------------------------------------------- cache page

async function pageCache() {
  const params = new URLSearchParams(location.search);
  setupRangeForm(document.getElementById('range'), params);
  const el = document.getElementById('cache');
  let rep;
  try {
    rep = await api(`/api/v1/cache?${copyParams(params, ['since', 'until'], { since: '24h' })}`);
  } catch (err) {
    el.innerHTML = errorHTML(err, 'Cache health');
    return;
  }
  if (rep.since) document.getElementById('cache-range').textContent = rangeText(rep.since, rep.until);
  const groups = rep.groups || [];
  if (!groups.length) {
    el.innerHTML = '<p class="empty" data-empty>No inference calls in this time range.</p>';
    return;
  }
  const runsLink = (g) => `/runs?${new URLSearchParams({ agent: g.agent, model: g.model, ...(params.get('since') ? { since: params.get('since') } : {}) })}`;
  const cols = [
    { key: 'agent', label: 'Agent', html: (g) => esc(g.agent) || '<span class="muted">(none)</span>' },
    { key: 'model', label: 'Model', html: (g) => `<span class="mono">${esc(g.model)}</span>` },
    { key: 'provider', label: 'Provider', html: (g) => esc(g.provider) },
    { key: 'verdict', label: 'Verdict', html: (g) => `<span class="pill ${esc(g.verdict)}">${esc(String(g.verdict).replace(/_/g, ' '))}</span>` },
    { key: 'hit', label: 'Hit ratio', title: 'eligible cache-read tokens / eligible input tokens', num: true, html: (g) => pct(g.hit_ratio) },
    { key: 'calls', label: 'Calls', num: true, html: (g) => num(g.calls) },
    { key: 'eligible', label: 'Cacheable', title: `calls whose prompt reaches the model's minimum cacheable prefix`, num: true, html: (g) => num(g.eligible_calls) },
    { key: 'prefix', label: 'Min prefix', num: true, html: (g) => `<span title="${esc(g.prefix_source)}">${num(g.min_prefix_tokens)}</span>` },
    { key: 'in', label: 'Input', num: true, html: (g) => num(g.input_tokens) },
    { key: 'cr', label: 'Cache read', num: true, html: (g) => num(g.cache_read_tokens) },
    { key: 'cw', label: 'Cache write', num: true, html: (g) => num(g.cache_write_tokens) },
    { key: 'runs', label: 'Runs', html: (g) => `<a href="${esc(runsLink(g))}"${g.verdict === 'never_hit' ? ' data-never-hit' : ''}>runs »</a>${g.never_hit_runs ? ` <span class="muted">${num(g.never_hit_runs)} never hit</span>` : ''}` },
  ];
  const never = rep.never_hit_runs || [];
  // Every never_hit group names its latest runs with cacheable calls, even
  // when each run makes too few calls to be judged on its own.
  const examples = groups.filter((g) => g.verdict === 'never_hit' && (g.example_run_ids || []).length);
  const examplesHTML = examples.length ? `<h2>Runs to open</h2><ul id="never-hit-examples">${examples.map((g) =>
    `<li data-agent="${esc(g.agent)}" data-model="${esc(g.model)}"><strong>${esc(g.agent) || '(none)'}</strong> on <span class="mono">${esc(g.model)}</span>, latest runs with cacheable calls and no cache read: ${
      g.example_run_ids.map((id) => `<a class="mono" href="/runs/${esc(id)}" data-trace-id="${esc(id)}">${shortID(id)}</a>`).join(' ')}</li>`).join('')}</ul>` : '';
  el.innerHTML = `${groups.some((g) => g.verdict === 'never_hit') ? '<p class="notice error" role="status"><strong>Silent cache misses:</strong> some agent × model pairs send cacheable prompts but never read from the cache — often a timestamp or id at the start of the prompt invalidates it.</p>' : ''}
${tableHTML(cols, groups, null, { id: 'cache-table', rowAttrs: (g) => ` data-verdict="${esc(g.verdict)}"` })}
<p class="muted">never_hit: at least ${num(rep.thresholds?.min_eligible_calls)} cacheable calls and zero cache reads. Default minimum prefix ${num(rep.thresholds?.default_min_prefix_tokens)} tokens.</p>
${examplesHTML}
${never.length ? `<h2>Runs that never hit the cache${rep.runs_truncated ? ' (first ones)' : ''}</h2>${tableHTML([
    { key: 'start', label: 'Start', html: (r) => `<a href="/runs/${esc(r.trace_id)}">${timeHTML(r.start)}</a>` },
    { key: 'task', label: 'Task', html: (r) => esc(r.task) },
    { key: 'agents', label: 'Agents', html: (r) => esc((r.agents || []).join(', ')) },
    { key: 'models', label: 'Models', html: (r) => esc((r.models || []).join(', ')) },
    { key: 'eligible', label: 'Cacheable calls', num: true, html: (r) => num(r.eligible_calls) },
    { key: 'in', label: 'Input', num: true, html: (r) => num(r.input_tokens) },
  ], never, null, { id: 'never-hit-runs' })}` : ''}`;
}

// ---------------------------------------------------------------- alerts page

function alertValue(kind, v) {
  if (v == null) return '—';
  if (/_rate$/.test(kind)) return pct(v);
  if (/latency/.test(kind)) return fmtMs(v);
  if (kind === 'run_cost') return usd(v);
  return num(Math.round(v * 100) / 100);
}

async function pageAlerts() {
  const params = new URLSearchParams(location.search);
  setupRangeForm(document.getElementById('range'), params);
  const el = document.getElementById('alerts');
  let body;
  try {
    body = await api('/api/v1/alerts');
  } catch (err) {
    el.innerHTML = errorHTML(err, 'Alerts');
    return;
  }
  const want = params.get('state');
  const all = listOf(body, 'alerts').filter((a) => a.state !== 'inactive' && (!want || a.state === want));
  // The loaded rules, with thresholds, severity and their alerts' states.
  let rules = [];
  try {
    rules = listOf(await api('/api/v1/alerts/rules'), 'rules');
  } catch { /* an older server: the alerts alone */ }
  const rulesHTML = rules.length ? `<h2>Rules (${rules.length})</h2>${tableHTML([
    { key: 'name', label: 'Rule', html: (r) => `${esc(r.name)} <span class="muted">${esc(r.kind)}</span>${r.description ? `<div class="muted">${esc(r.description)}</div>` : ''}` },
    { key: 'threshold', label: 'Threshold', num: true, html: (r) => (r.kind === 'cache_read_zero' ? '—' : alertValue(r.kind, r.threshold)) },
    { key: 'window', label: 'Window', html: (r) => esc(goDuration(r.window)) },
    { key: 'for', label: 'For', html: (r) => esc(goDuration(r['for'])) },
    { key: 'severity', label: 'Severity', html: (r) => esc(r.severity) },
    { key: 'state', label: 'Now', html: (r) => (r.firing ? `<span class="pill firing">${num(r.firing)} firing</span> ` : '') + (r.pending ? `<span class="pill pending">${num(r.pending)} pending</span>` : '') + (!r.firing && !r.pending ? '<span class="muted">ok</span>' : '') },
    { key: 'runbook', label: 'Runbook', html: (r) => (r.runbook_url ? `<a href="${esc(safeURL(r.runbook_url))}" rel="noopener">runbook</a>` : '<span class="muted">—</span>') },
  ], rules, null, { id: 'alert-rules', rowAttrs: (r) => ` data-rule="${esc(r.name)}"` })}` : '';
  if (!all.length) {
    el.innerHTML = `<p class="empty" data-empty>No ${want ? esc(want) + ' ' : ''}alerts. Alert rules (retry rate, latency, cache misses, run cost, repeat loops) are evaluated by <code>tally serve</code>; see <code>tally alerts check</code>.</p>${rulesHTML}`;
    return;
  }
  const order = ['firing', 'pending', 'resolved'];
  const subject = (a) => Object.entries(a.labels || {}).filter(([k]) => k !== 'alertname' && k !== 'severity').map(([k, v]) => `${k}=${v}`).join(' ');
  const when = (a) => (a.state === 'resolved' ? a.resolved_at : a.state === 'firing' ? a.fired_at || a.active_at : a.active_at);
  const cols = [
    { key: 'state', label: 'State', html: (a) => `<span class="pill ${esc(a.state)}">${esc(a.state)}</span>` },
    { key: 'rule', label: 'Rule', html: (a) => `${esc(a.rule)} <span class="muted">${esc(a.kind)}</span>` },
    { key: 'subject', label: 'Subject', wrap: true, html: (a) => `<span class="mono">${esc(subject(a))}</span>` },
    { key: 'value', label: 'Value', num: true, html: (a) => alertValue(a.kind, a.value) },
    { key: 'threshold', label: 'Threshold', num: true, html: (a) => (a.kind === 'cache_read_zero' ? '—' : alertValue(a.kind, a.threshold)) },
    { key: 'samples', label: 'Samples', num: true, html: (a) => num(a.samples) },
    { key: 'since', label: 'In state', title: 'how long since it resolved, fired or started pending', html: (a) => `${fmtMs(Date.now() - parseTime(when(a)))} <div class="muted">${timeHTML(when(a))}</div>` },
    { key: 'summary', label: 'Summary', wrap: true, html: (a) => esc((a.annotations || {}).summary || (a.annotations || {}).description || '') },
    { key: 'runs', label: 'Example runs', wrap: true, html: (a) => (a.example_run_ids || []).map((id) => `<a class="mono" href="/runs/${esc(id)}">${shortID(id)}</a>`).join(' ') + (a.generator_url ? ` <a class="all-runs" href="${esc(sameOriginPath(a.generator_url))}">all matching runs</a>` : '') },
  ];
  el.innerHTML = order.map((st) => {
    const list = all.filter((a) => a.state === st);
    if (!list.length) return '';
    return `<h2>${st[0].toUpperCase() + st.slice(1)} (${list.length})</h2>${tableHTML(cols, list, null, { id: `alerts-${st}` })}`;
  }).join('') + rulesHTML;
}

/** goDuration shortens Go's duration strings: "15m0s" → "15m", "0s" → "0". */
function goDuration(d) {
  if (!d || d === '0s') return '0';
  return String(d).replace(/(\d)m0s$/, '$1m').replace(/(\d)h0m$/, '$1h');
}

/** safeURL keeps http(s) links only (a rules file's runbook URL). */
function safeURL(u) {
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
function sameOriginPath(u) {
  try {
    const url = new URL(u, location.origin);
    return url.pathname + url.search;
  } catch { return '/runs'; }
}

/** navBadge marks the Alerts link with the number of firing alerts. */
async function navBadge() {
  const link = document.querySelector('header.top nav a[href="/alerts"]');
  if (!link) return;
  try {
    const n = listOf(await api('/api/v1/alerts?state=firing'), 'alerts').length;
    if (n > 0) link.insertAdjacentHTML('beforeend', ` <span class="nav-badge" id="nav-firing" title="${n} alert${n === 1 ? '' : 's'} firing">${n}</span>`);
  } catch { /* alerting off (501) or the API unreachable: no badge */ }
}

// ---------------------------------------------------------------- boot

const PAGES = { runs: pageRuns, run: pageRun, conversation: pageConversation, conversations: pageConversations, costs: pageCosts, tools: pageTools, cache: pageCache, alerts: pageAlerts };

// The number formats, for the console and for the tests that hold them
// equal to the CLI's.
window.tallyFormat = Object.freeze({ usd, num, fmtMs });

navBadge();
const run = PAGES[main.dataset.page];
if (run) {
  run().catch((err) => {
    main.insertAdjacentHTML('beforeend', `<div class="notice error" role="alert">The page failed: ${esc(err && err.stack ? err.stack : err)}</div>`);
  }).finally(() => { document.body.dataset.ready = '1'; });
} else {
  document.body.dataset.ready = '1';
}
