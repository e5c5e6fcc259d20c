// The query bar: TraceQL with autocomplete of intrinsics, attribute keys
// and their top values in the window, and a query's error underlined
// where it is. Used by the runs page and the explore page.

import { esc, html, show } from './html.js';
import { aborted, api } from './api.js';

/** tqlString writes v as a query's string constant. */
export const tqlString = (v) => JSON.stringify(String(v));

/** tqlField writes an attribute key as a field: span.key, quoted when it has to be. */
export function tqlField(scope, key) {
  return /^[^\s{}()=~!<>&|^,"]+$/.test(key) ? `${scope}.${key}` : `${scope}.${tqlString(key)}`;
}

/** searchHref is the runs page searching for query (within the since of params, if any). */
export function searchHref(query, params) {
  const q = new URLSearchParams();
  q.set('query', query);
  if (params && params.get('since')) q.set('since', params.get('since'));
  if (params && params.get('until')) q.set('until', params.get('until'));
  return `/runs?${q}`;
}

/**
 * filtersQuery writes a run list's filter boxes as a query: each box one
 * condition, joined with &&; '' when no box is filled.
 */
export function filtersQuery(params) {
  const conds = [];
  const str = (name, field) => { const v = params.get(name); if (v) conds.push(`{ ${field} = ${tqlString(v)} }`); };
  str('agent', 'agent');
  str('model', 'model');
  str('tool', 'tool');
  str('service', 'resource.service.name');
  str('task', 'trace:task');
  str('conversation', 'trace:conversation');
  if (params.get('status')) conds.push(`{ trace:status = ${params.get('status') === 'error' ? 'error' : 'ok'} }`);
  if (params.get('has_errors') === 'true') conds.push('{ status = error }');
  if (params.get('min_cost')) conds.push(`{ trace:cost >= ${Number(params.get('min_cost'))} }`);
  return conds.join(' && ');
}

/** errorAtHTML shows a query with the error's position underlined and the message. */
export function errorAtHTML(query, pos, message) {
  const at = Math.max(0, Math.min(pos, query.length));
  // Underline the token at the position (to the next space), or a caret past the end.
  let end = at;
  while (end < query.length && !/\s/.test(query[end])) end++;
  const bad = at < query.length ? query.slice(at, Math.max(end, at + 1)) : ' ';
  return html`<div class="notice error query-error" role="alert" data-position="${at}"><pre class="mono">${esc(query.slice(0, at))}<mark class="bad">${esc(bad)}</mark>${esc(query.slice(at + bad.length))}</pre>${esc(message)} <span class="muted">(at character ${at + 1})</span></div>`;
}

// The word under the caret: a field's spelling or a value after an operator.
const WORD = /[A-Za-z0-9_.:\-/@$#"]*$/;

/**
 * setupQueryBar wires the query input: as the user types, the key or value
 * under the caret is completed from /api/v1/search/keys and /values over
 * the window windowParams() gives. A request the user no longer wants (the
 * next keystroke, another key) is cancelled.
 */
export function setupQueryBar(input, list, windowParams) {
  let keys = null; // [{key, type, doc, spans}], once per page
  let keysLoad = null; // the request of them, shared by whoever waits for them
  const values = new Map(); // field → [{value, spans}]
  let valuesReq = null;
  let items = [];
  let active = -1;

  const close = () => { list.hidden = true; items = []; active = -1; input.setAttribute('aria-expanded', 'false'); };
  const render = () => {
    if (!items.length) { close(); return; }
    show(list, items.map((it, i) => html`<li role="option" id="qs-${i}" data-i="${i}"${i === active ? html` aria-selected="true"` : ''}><span class="mono">${esc(it.label)}</span>${it.note ? html` <span class="muted">${esc(it.note)}</span>` : ''}</li>`));
    list.hidden = false;
    input.setAttribute('aria-expanded', 'true');
    if (active >= 0) input.setAttribute('aria-activedescendant', `qs-${active}`);
  };
  // loadKeys resolves once the keys are here: a keystroke while the
  // request (started on focus) is in flight waits for it, not for nothing.
  const loadKeys = () => {
    if (!keysLoad) {
      keysLoad = api(`/api/v1/search/keys?${windowParams()}`)
        .then((body) => { keys = (body && body.keys) || []; })
        .catch(() => { keys = []; });
    }
    return keysLoad;
  };
  const loadValues = async (field) => {
    if (values.has(field)) return values.get(field);
    if (valuesReq) valuesReq.abort();
    const ctl = new AbortController();
    valuesReq = ctl;
    try {
      const p = new URLSearchParams(windowParams());
      p.set('key', field);
      const v = (await api(`/api/v1/search/values?${p}`, { signal: ctl.signal })).values || [];
      values.set(field, v);
      return v;
    } catch (err) {
      if (!aborted(err)) values.set(field, []);
      return null;
    } finally { if (valuesReq === ctl) valuesReq = null; }
  };

  // suggest completes the word before the caret: a value when it follows
  // "field =" (or !=, =~), else a field.
  const suggest = async () => {
    const caret = input.selectionStart ?? input.value.length;
    const before = input.value.slice(0, caret);
    const word = before.match(WORD)[0];
    const afterOp = before.slice(0, before.length - word.length).match(/([A-Za-z0-9_.:\-/@$#]+|"[^"]*")\s*(=|!=|=~|!~)\s*$/);
    if (afterOp) {
      const field = afterOp[1];
      const vals = await loadValues(field);
      if (!vals || input.value.slice(0, input.selectionStart ?? input.value.length) !== before) return; // typed on
      const typed = word.replace(/^"/, '').toLowerCase();
      items = vals.filter((v) => v.value.toLowerCase().startsWith(typed)).slice(0, 12)
        .map((v) => ({ label: v.value, note: v.spans ? `${v.spans} span${v.spans === 1 ? '' : 's'}` : '', insert: tqlString(v.value), word }));
    } else {
      if (!word || word.startsWith('"')) { close(); return; }
      await loadKeys();
      if (input.value.slice(0, input.selectionStart ?? input.value.length) !== before) return;
      items = (keys || []).filter((k) => k.key.startsWith(word) && k.key !== word).slice(0, 12)
        .map((k) => ({ label: k.key, note: k.doc ? `${k.type}: ${k.doc}` : `${k.spans} span${k.spans === 1 ? '' : 's'}`, insert: k.key, word }));
    }
    active = items.length ? 0 : -1;
    render();
  };
  const pick = (i) => {
    const it = items[i];
    if (!it) return;
    const caret = input.selectionStart ?? input.value.length;
    const start = caret - it.word.length;
    input.value = input.value.slice(0, start) + it.insert + input.value.slice(caret);
    const at = start + it.insert.length;
    input.setSelectionRange(at, at);
    close();
    input.focus();
  };
  input.setAttribute('role', 'combobox');
  input.setAttribute('aria-autocomplete', 'list');
  input.setAttribute('aria-controls', list.id);
  input.setAttribute('aria-expanded', 'false');
  input.addEventListener('input', () => { suggest(); });
  input.addEventListener('focus', () => { loadKeys(); });
  input.addEventListener('keydown', (ev) => {
    if (list.hidden) return;
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      ev.preventDefault();
      active = (active + (ev.key === 'ArrowDown' ? 1 : -1) + items.length) % items.length;
      render();
    } else if ((ev.key === 'Tab' || ev.key === 'Enter') && active >= 0) {
      ev.preventDefault();
      pick(active);
    } else if (ev.key === 'Escape') {
      close();
    }
  });
  list.addEventListener('mousedown', (ev) => {
    const li = ev.target.closest('li[data-i]');
    if (!li) return;
    ev.preventDefault();
    pick(Number(li.dataset.i));
  });
  input.addEventListener('blur', () => setTimeout(close, 0));
}

/**
 * setupSaved wires the saved-queries select and the save button: choosing
 * a saved query opens it (on page, '/runs' or '/explore'), Save keeps the
 * query bar's text under the name given (replacing a query of that name).
 * The project's saved queries come from /api/v1/search/saved.
 */
export async function setupSaved(input, page) {
  const select = document.getElementById('query-saved');
  const name = document.getElementById('query-name');
  const save = document.getElementById('query-save');
  const status = document.getElementById('query-saved-status');
  if (!select || !save) return;
  const fill = async () => {
    let saved = [];
    try {
      saved = (await api('/api/v1/search/saved')).saved || [];
    } catch (err) {
      status.textContent = `saved queries unavailable: ${err.message}`;
      return;
    }
    show(select, html`<option value="">Saved queries…</option>${saved.map((s) => html`<option value="${esc(s.query)}" data-name="${esc(s.name)}">${esc(s.name)}</option>`)}`);
  };
  select.addEventListener('change', () => {
    if (!select.value) return;
    const q = new URLSearchParams(location.search);
    q.set('query', select.value);
    q.delete('cursor');
    location.assign(`${page}?${q}`);
  });
  save.addEventListener('click', async () => {
    const n = name.value.trim();
    if (!n) { status.textContent = 'name the query to save it'; name.focus(); return; }
    try {
      const resp = await fetch('/api/v1/search/saved', {
        method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ name: n, query: input.value }),
      });
      const body = await resp.json().catch(() => ({}));
      if (!resp.ok) { status.textContent = `not saved: ${body.error || resp.statusText}`; return; }
      status.textContent = `saved as “${n}”`;
      name.value = '';
      await fill();
    } catch (err) {
      status.textContent = `not saved: ${err.message}`;
    }
  });
  await fill();
}

/** sqlHTML shows a compiled statement and its parameters, folded. */
export function sqlHTML(sql) {
  if (!sql) return '';
  return html`<details class="search-sql" id="search-sql"><summary>Show SQL</summary><pre class="mono">${esc(sql.statement)}</pre>
<p class="muted">Parameters, in order: ${sql.args.map((a, i) => html`${i ? ', ' : ''}<code>${esc(a)}</code>`)}</p></details>`;
}
