// Data tables with sortable columns.

import { esc, html } from './html.js';
import { num } from './format.js';

/**
 * tableHTML draws a table whose columns sort on click (see wireSort). cols:
 * {key, label, title, num, wrap, value(row) for sorting, html(row) for the
 * cell: text or an html value}. state: {sort, dir} or null. opts: id,
 * caption, rowHeader, foot (an html value), rowAttrs(row) (an html value of
 * attributes).
 */
export function tableHTML(cols, rows, state, opts = {}) {
  const head = cols.map((c) => {
    const cls = c.num ? html` class="num"` : '';
    const active = state && state.sort === c.key;
    const aria = active ? html` aria-sort="${state.dir === 'asc' ? 'ascending' : 'descending'}"` : '';
    const label = c.title ? html`<abbr title="${esc(c.title)}">${esc(c.label)}</abbr>` : esc(c.label);
    const inner = state && c.value ? html`<button type="button" class="sortbtn" data-sort="${c.key}" aria-pressed="${active}" data-arrow="${active && state.dir === 'asc' ? '▲' : '▼'}">${label}</button>` : label;
    return html`<th scope="col"${cls}${aria}>${inner}</th>`;
  });
  const body = rows.map((r, i) => {
    const attrs = opts.rowAttrs ? opts.rowAttrs(r, i) : '';
    return html`<tr${attrs}>${cols.map((c, j) => {
      const cls = c.num ? html` class="num"` : c.wrap ? html` class="wrap"` : '';
      return j === 0 && opts.rowHeader
        ? html`<th scope="row"${cls}>${c.html(r, i)}</th>`
        : html`<td${cls}>${c.html(r, i)}</td>`;
    })}</tr>`;
  });
  const foot = opts.foot ? html`<tfoot>${opts.foot}</tfoot>` : '';
  return html`<table class="data"${opts.id ? html` id="${opts.id}"` : ''}>${opts.caption ? html`<caption class="sr">${esc(opts.caption)}</caption>` : ''}<thead><tr>${head}</tr></thead><tbody>${body}</tbody>${foot}</table>`;
}

/** sortRows sorts rows by a column's value in place. */
export function sortRows(rows, cols, state) {
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
export function wireSort(container, state, rerender, onChange) {
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
