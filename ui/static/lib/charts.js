// SVG charts: stacked bars over time, horizontal bars with thresholds.

import { esc, html } from './html.js';
import { localTime, pad } from './format.js';

export const PALETTE = ['#0969da', '#bc4c00', '#6f42c1', '#1a7f37', '#cf222e', '#9a6700', '#57606a'];

/** niceMax rounds up to 1, 2 or 5 × 10^n, for axis ticks. */
export function niceStep(max, ticks = 4) {
  if (!(max > 0)) return 1;
  const raw = max / ticks;
  const p = 10 ** Math.floor(Math.log10(raw));
  const f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/**
 * gridHTML draws a time chart's horizontal grid lines with their values
 * (every ystep up to ytop) and seven time labels under the x axis: hours
 * and minutes up to two days, month-day (and the hour, up to eight days)
 * beyond.
 */
function gridHTML({ from, to, ytop, ystep, x, y, fmt, W, H, L, R, B }) {
  const g = [];
  for (let v = 0; v <= ytop + 1e-12; v += ystep) {
    g.push(html`<g class="grid"><line x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}"/></g><text x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${esc(fmt(v))}</text>`);
  }
  const span = to - from;
  const nt = 6;
  for (let k = 0; k <= nt; k++) {
    const t = from + (span * k) / nt;
    const d = new Date(t);
    const label = span > 2 * 864e5 ? `${pad(d.getMonth() + 1)}-${pad(d.getDate())}${span < 8 * 864e5 ? ` ${pad(d.getHours())}:00` : ''}` : `${pad(d.getHours())}:${pad(d.getMinutes())}`;
    g.push(html`<text x="${x(t)}" y="${H - B + 16}" text-anchor="${k === 0 ? 'start' : k === nt ? 'end' : 'middle'}">${label}</text>`);
  }
  return g;
}

/**
 * stackedBars draws a time-series bar chart: buckets [{t (ms), parts:[{key, value}]}],
 * step (ms per bucket), fmt formats values, unit names the y axis.
 */
export function stackedBars(buckets, { from, to, step, fmt, unit, keys }) {
  const W = 1200, H = 240, L = 64, R = 12, T = 12, B = 36;
  const totals = buckets.map((b) => b.parts.reduce((a, p) => a + p.value, 0));
  const ymax = Math.max(...totals, 0);
  const ystep = niceStep(ymax);
  const ytop = Math.max(ystep * Math.ceil(ymax / ystep), ystep);
  const x = (t) => L + ((t - from) / (to - from)) * (W - L - R);
  const y = (v) => H - B - (v / ytop) * (H - T - B);
  const bw = Math.max(((W - L - R) * step) / (to - from) - 1, 1);
  const g = gridHTML({ from, to, ytop, ystep, x, y, fmt, W, H, L, R, B });
  const bars = [];
  buckets.forEach((b, i) => {
    let acc = 0;
    const detail = b.parts.filter((p) => p.value > 0).map((p) => `${p.key || '(none)'}: ${fmt(p.value)}`).join('\n');
    for (const p of b.parts) {
      if (!(p.value > 0)) continue;
      const y0 = y(acc), y1 = y(acc + p.value);
      acc += p.value;
      const color = PALETTE[Math.max(keys.indexOf(p.key), 0) % PALETTE.length];
      bars.push(html`<rect class="bar" x="${x(b.t)}" y="${y1}" width="${bw}" height="${Math.max(y0 - y1, 0.5)}" style="fill:${color}"><title>${esc(localTime(b.t))} (${esc(new Date(b.t).toISOString())} UTC)\ntotal ${esc(fmt(totals[i]))}\n${esc(detail)}</title></rect>`);
    }
  });
  const axis = html`<g class="axis"><line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"/><line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}"/></g>`;
  const ylabel = html`<text x="12" y="${T + (H - T - B) / 2}" transform="rotate(-90 12 ${T + (H - T - B) / 2})" text-anchor="middle">${esc(unit)}</text>`;
  const legend = keys.map((k, i) => html`<span><i style="background:${PALETTE[i % PALETTE.length]}"></i>${esc(k || '(none)')}</span>`);
  return html`<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(unit)} over time">${g}${axis}${ylabel}${bars}</svg><div class="legend" style="margin:0">${legend}</div>`;
}

/** hbars draws one horizontal bar per row with an optional threshold per row. */
export function hbars(rows, { fmt, title, max }) {
  const W = 560, rowH = 20, L = 150, R = 70, T = 22;
  const H = T + rows.length * rowH + 8;
  const vmax = Math.max(max || 0, ...rows.map((r) => r.value), ...rows.map((r) => r.threshold || 0)) || 1;
  const x = (v) => L + (v / vmax) * (W - L - R);
  const out = [html`<text x="${L}" y="14" font-weight="600">${esc(title)}</text>`];
  rows.forEach((r, i) => {
    const yy = T + i * rowH;
    const over = r.threshold != null && r.value > r.threshold;
    out.push(html`<text x="${L - 6}" y="${yy + 14}" text-anchor="end">${esc(r.label)}</text>`,
      html`<rect class="hbar" x="${L}" y="${yy + 3}" width="${Math.max(x(r.value) - L, 1)}" height="${rowH - 6}" style="fill:${over ? 'var(--err)' : 'var(--tool)'}"><title>${esc(r.label)}: ${esc(fmt(r.value))}${r.threshold != null ? html` (alert threshold ${esc(fmt(r.threshold))})` : ''}</title></rect>`,
      html`<text x="${x(r.value) + 4}" y="${yy + 14}">${esc(fmt(r.value))}</text>`);
    if (r.threshold != null) {
      out.push(html`<line class="threshold" x1="${x(r.threshold)}" x2="${x(r.threshold)}" y1="${yy}" y2="${yy + rowH}"><title>alert threshold ${esc(fmt(r.threshold))}</title></line>`);
    }
  });
  out.push(html`<g class="axis"><line x1="${L}" x2="${L}" y1="${T}" y2="${H - 8}"/></g>`);
  return html`<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}">${out}</svg>`;
}

/**
 * lineChart draws series over time, one line each: series [{key, points:
 * [{t (ms), v}]}], a point for each step with data (a gap between steps
 * without data breaks the line), fmt formats values, unit names the y axis.
 */
export function lineChart(series, { from, to, step, fmt, unit }) {
  const W = 1200, H = 260, L = 64, R = 12, T = 12, B = 36;
  const all = series.flatMap((s) => s.points.map((p) => p.v)).filter((v) => Number.isFinite(v));
  const ymax = Math.max(...all, 0);
  const ystep = niceStep(ymax);
  const ytop = Math.max(ystep * Math.ceil(ymax / ystep), ystep);
  const x = (t) => L + ((t - from) / Math.max(to - from, 1)) * (W - L - R);
  const y = (v) => H - B - (v / ytop) * (H - T - B);
  const g = gridHTML({ from, to, ytop, ystep, x, y, fmt, W, H, L, R, B });
  const lines = series.map((s, i) => {
    const color = PALETTE[i % PALETTE.length];
    const segs = [];
    let seg = [];
    let prev = null;
    for (const p of s.points) {
      if (prev !== null && p.t - prev > step * 1.5 && seg.length) { segs.push(seg); seg = []; }
      seg.push(p);
      prev = p.t;
    }
    if (seg.length) segs.push(seg);
    const paths = segs.map((sg) => (sg.length === 1
      ? html`<circle cx="${x(sg[0].t + step / 2)}" cy="${y(sg[0].v)}" r="3" style="fill:${color}"/>`
      : html`<polyline fill="none" stroke-width="2" style="stroke:${color}" points="${sg.map((p) => `${x(p.t + step / 2).toFixed(1)},${y(p.v).toFixed(1)}`).join(' ')}"/>`));
    const dots = s.points.map((p) => html`<circle class="pt" cx="${x(p.t + step / 2)}" cy="${y(p.v)}" r="6" fill="transparent"><title>${esc(s.key)}\n${esc(localTime(p.t))}: ${esc(fmt(p.v))}</title></circle>`);
    return html`<g data-series="${esc(s.key)}">${paths}${dots}</g>`;
  });
  const axis = html`<g class="axis"><line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"/><line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}"/></g>`;
  const ylabel = html`<text x="12" y="${T + (H - T - B) / 2}" transform="rotate(-90 12 ${T + (H - T - B) / 2})" text-anchor="middle">${esc(unit)}</text>`;
  const legend = series.map((s, i) => html`<span><i style="background:${PALETTE[i % PALETTE.length]}"></i>${esc(s.key)}</span>`);
  return html`<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(unit)} over time">${g}${axis}${ylabel}${lines}</svg><div class="legend" style="margin:0">${legend}</div>`;
}
