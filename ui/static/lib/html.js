// Escaping by default. Every piece of markup the UI draws is an html`…`
// value: its interpolations are escaped unless they are themselves html
// values (or arrays of them), so a string from the API can never become
// markup by being forgotten. Only this module writes innerHTML, and only
// from html values: show(el, 'a string') throws, and so does turning an
// html value into a string by accident ('' + html`…`), so a slip shows up
// at once rather than as escaped (or unescaped) markup.

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeText = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);

/** HTML is markup that is safe to insert: made only by html`…` and esc(). */
class HTML {
  #markup;
  constructor(markup) { this.#markup = markup; }
  /** markup is the HTML text, for show() and nested html values. */
  get markup() { return this.#markup; }
  toString() { throw new TypeError('an html value was turned into a string: nest it in html`…` instead'); }
}

/** part renders one interpolated value: html values as they are, arrays item by item, anything else escaped. */
function part(v) {
  if (v instanceof HTML) return v.markup;
  if (Array.isArray(v)) return v.map(part).join('');
  if (v == null) return '';
  return escapeText(v);
}

/** html is the template tag: html`<b>${name}</b>` escapes name; null and undefined draw nothing. */
export function html(strings, ...values) {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += part(values[i]) + strings[i + 1];
  return new HTML(out);
}

/** esc escapes text into an html value (for text built outside a template). */
export const esc = (s) => new HTML(escapeText(s ?? ''));

/** isHTML reports whether v is an html value. */
export const isHTML = (v) => v instanceof HTML;

/** markupOf is the markup of an html value or an array of them; anything else throws. */
function markupOf(v) {
  if (v instanceof HTML) return v.markup;
  if (Array.isArray(v) && v.every((x) => x instanceof HTML)) return v.map((x) => x.markup).join('');
  throw new TypeError(`show: want an html value, got ${typeof v}`);
}

/** show replaces el's content with an html value (or an array of them). */
export function show(el, v) { el.innerHTML = markupOf(v); }

/** append adds an html value at the end of el's content. */
export function append(el, v) { el.insertAdjacentHTML('beforeend', markupOf(v)); }

/** join joins html values (or text, escaped) with a separator into one html value. */
export const join = (list, sep = '') => new HTML(list.map(part).join(part(sep)));
