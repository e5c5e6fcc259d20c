// The span waterfall: virtualized rows, collapse and expand, keyboard navigation.

import { esc, html, show } from '../lib/html.js';
import { fmtMs, num, usd } from '../lib/format.js';
import { TYPE_LABEL, spanFigures } from '../lib/spans.js';
import { SIGNAL_MARK } from '../lib/vocab.js';

/** ROW_H is the height of a waterfall row in pixels (see .wf-row in style.css). */
export const ROW_H = 22;

/** Waterfall draws the span rows, with collapse/expand, selection and keyboard navigation. */
export class Waterfall {
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
    // A "load more" row that is gone (its node loaded whole) hands the
    // focus to its node.
    const more = this.rows[this.focus] && this.rows[this.focus].more;
    this.focus = Math.max(at(focus), more ? at(more.span_id) : -1, 0);
    this.selected = selected ? at(selected) : -1;
    this.render();
  }

  /** moreHTML draws a "load more" row: what its node's subtree still hides. */
  moreHTML(i, r) {
    const n = r.more;
    const what = n._loading ? 'loading…' : n._error ? `could not load: ${n._error}`
      : `${num(n.hidden_spans)} more span${n.hidden_spans === 1 ? '' : 's'} (${num(n.hidden_children)} direct) — load`;
    return html`<div class="wf-row wf-more${i === this.focus ? ' focus' : ''}" role="treeitem" id="wf-${i}" data-i="${i}" data-more-of="${esc(n.span_id)}" aria-level="${r.depth + 1}" aria-selected="false"><div class="label" style="padding-left:${4 + r.depth * 14}px"><span class="tg leaf"></span><button type="button" class="more" tabindex="-1">⋯ ${esc(what)}</button></div><div class="lane"></div></div>`;
  }

  rowHTML(i) {
    const r = this.rows[i];
    if (r.more) return this.moreHTML(i, r);
    const n = r.n;
    const left = ((r.start - this.t0) / this.span) * 100;
    const width = Math.max(((r.stop - r.start) / this.span) * 100, 0.15);
    const isErr = n.status === 'error';
    const exp = r.kids.length ? html` aria-expanded="${this.collapsed[i] ? 'false' : 'true'}"` : '';
    const tg = r.kids.length
      ? html`<button type="button" class="tg" tabindex="-1" aria-hidden="true">${this.collapsed[i] ? '▶' : '▼'}</button>`
      : html`<span class="tg leaf"></span>`;
    const sigs = (this.signals && this.signals.get(n.span_id)) || [];
    const marks = html`${isErr ? html`<span class="mark err" title="${n.status_message || n.error_type || 'error'}">ERR</span>` : ''}${r.retry ? html`<span class="mark retry" title="retry${n.attempt ? ` (attempt ${n.attempt})` : ''}">RETRY</span>` : ''}${sigs.map((s) => html`<span class="mark sig" data-signal="${s.kind}" title="${s.reason}">${SIGNAL_MARK[s.kind] || 'SIGNAL'}</span>`)}`;
    const hidden = this.collapsed[i] ? html` <span class="muted">(+${r.end - i - 1})</span>` : '';
    const figures = spanFigures(n);
    const cost = n.subtree_cost ? html`<span class="wcost" data-usd="${esc(n.subtree_cost.total_usd)}" title="${esc(figures)}">${usd(n.subtree_cost.total_usd)}</span>` : '';
    const end = left + width;
    const d = fmtMs(n.duration_ms);
    const dur = end < 82
      ? html`<span class="dur" style="left:calc(${end}% + 4px)">${d}</span>`
      : left > 18
        ? html`<span class="dur" style="right:calc(${100 - left}% + 4px)">${d}</span>`
        : html`<span class="dur in" style="right:calc(${100 - end}% + 4px)">${d}</span>`;
    return html`<div class="wf-row k-${esc(n.type)}${isErr ? ' is-err' : ''}${i === this.focus ? ' focus' : ''}" role="treeitem" id="wf-${i}" data-i="${i}" data-span-id="${esc(n.span_id)}" data-depth="${r.depth}" data-type="${esc(n.type)}" aria-level="${r.depth + 1}"${exp} aria-selected="${i === this.selected}"><div class="label" style="padding-left:${4 + r.depth * 14}px">${tg}<span class="kind">${TYPE_LABEL[n.type] || 'SPAN'}</span><span class="name" title="${esc(n.name)}">${esc(n.name)}</span>${marks}${hidden}${cost}</div><div class="lane"><div class="bar" style="left:${left}%;width:${width}%" title="${esc(n.name)}: ${fmtMs(n.duration_ms)} at +${fmtMs(r.start - this.t0)}${figures ? html`\n${esc(figures)}` : ''}"></div>${dur}</div></div>`;
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
      show(this.el, html`<div class="wf-spacer" role="presentation"><div class="wf-window" role="presentation"></div></div>`);
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
    show(this.win, parts);
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
