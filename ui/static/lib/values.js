// Captured values (attributes, tool arguments and results, message parts)
// drawn as text: JSON pretty-printed, long values collapsed.

import { esc, html } from './html.js';
import { num } from './format.js';

/** pretty pretty-prints JSON text; anything else is returned as is. */
export function pretty(v) {
  if (typeof v !== 'string') return JSON.stringify(v, null, 2);
  const t = v.trim();
  if (t.startsWith('{') || t.startsWith('[')) {
    try { return JSON.stringify(JSON.parse(t), null, 2); } catch { /* not JSON */ }
  }
  return v;
}

/** valueHTML shows a value, pretty-printed, collapsed when long. */
export function valueHTML(v, attrs = '') {
  const p = pretty(v);
  const lines = p.split('\n').length;
  if (p.length > 600 || lines > 16) {
    const head = p.replace(/\s+/g, ' ').slice(0, 80);
    return html`<details><summary><span class="mono">${esc(head)}…</span> <span class="muted">(${num(p.length)} chars)</span></summary><pre class="json"${attrs}>${esc(p)}</pre></details>`;
  }
  if (lines > 1 || attrs) return html`<pre class="json"${attrs}>${esc(p)}</pre>`;
  return esc(p);
}
