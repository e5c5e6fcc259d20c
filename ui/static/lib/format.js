// Number, money, duration and time formats, the same as the CLI's.

import { esc, html } from './html.js';

/** parseTime turns an RFC 3339 time (nanoseconds allowed) into fractional epoch milliseconds. */
export function parseTime(iso) {
  if (!iso) return NaN;
  const m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(iso);
  if (!m) return Date.parse(iso);
  const base = Date.parse(m[1] + m[3]);
  return m[2] ? base + parseFloat('0' + m[2]) * 1000 : base;
}

export const pad = (n, w = 2) => String(n).padStart(w, '0');

/** localTime formats epoch ms in the viewer's zone, e.g. 2025-05-01 14:03:07. */
export function localTime(ms, withMs = false) {
  const d = new Date(ms);
  const s = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return withMs ? `${s}.${pad(d.getMilliseconds(), 3)}` : s;
}

/** timeHTML renders a time in the local zone with UTC on hover. */
export function timeHTML(iso, withMs = false) {
  const ms = parseTime(iso);
  if (!Number.isFinite(ms) || ms <= 0) return html`<span class="muted">—</span>`;
  return html`<time datetime="${esc(iso)}" title="${esc(iso)} (UTC)">${localTime(ms, withMs)}</time>`;
}

/** fmtMs formats a duration in milliseconds for humans: 0.42 ms, 87 ms, 1.2 s, 3 min 05 s. */
export function fmtMs(ms) {
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
export function usd(v) {
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
export const moneyHTML = (v, id) => html`<span class="money"${id ? html` id="${id}"` : ''} data-usd="${esc(v)}" title="${esc(v)} USD">${usd(v)}</span>`;

/** num formats an integer with thousands separators. */
export const num = (n) => (n == null ? '—' : Number(n).toLocaleString('en-US'));

/** pct formats a ratio (0.1 → 10.0%). */
export const pct = (r) => (r == null || !Number.isFinite(r) ? '—' : `${(r * 100).toFixed(r > 0 && r < 0.1 ? 2 : 1)}%`);

/** shortID shows the first 8 characters of an id. */
export const shortID = (id) => String(id).slice(0, 8);

/** goDuration shortens Go's duration strings: "15m0s" → "15m", "0s" → "0". */
export function goDuration(d) {
  if (!d || d === '0s') return '0';
  return String(d).replace(/(\d)m0s$/, '$1m').replace(/(\d)h0m$/, '$1h');
}
