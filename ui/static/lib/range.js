// Time-range filters: parsing since/until and the filter forms.

import { localTime, pad, parseTime } from './format.js';

/** parseRange turns since/until parameters (RFC 3339 or 24h/7d) into epoch ms bounds. */
export function parseRange(since, until, defaultSince) {
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
export function toLocalInput(ms) {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/**
 * setupRangeForm wires a filter form's time preset select with its custom
 * from/to inputs, and submits only the non-empty fields (clean, shareable URLs).
 */
export function setupRangeForm(form, params) {
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
export function copyParams(params, names, extra = {}) {
  const out = new URLSearchParams();
  for (const n of names) if (params.get(n)) out.set(n, params.get(n));
  for (const [k, v] of Object.entries(extra)) if (v != null && v !== '' && !out.has(k)) out.set(k, v);
  return out;
}

/** rangeText describes the shown range. */
export function rangeText(since, until) {
  const s = parseTime(since), u = parseTime(until);
  if (!Number.isFinite(s) || !Number.isFinite(u)) return '';
  return `${localTime(s)} – ${localTime(u)} (local time)`;
}
