// Messages drawn as chat turns: text, tool calls and their results.

import { esc, html } from '../lib/html.js';
import { valueHTML } from '../lib/values.js';

/** chatViewHTML draws a span's chat (from the API's transcript reading): sent, then answered. */
export function chatViewHTML(chat) {
  const src = (s) => (s ? html` <span class="muted mono" title="read from">${esc(s)}</span>` : '');
  return html`<div class="chat" data-chat>${chat.input && chat.input.length ? html`<div class="chat-side"><div class="chat-head">Sent${src(chat.input_source)}</div>${chatHTML(chat.input)}</div>` : ''}${chat.output && chat.output.length ? html`<div class="chat-side"><div class="chat-head">Answered${src(chat.output_source)}</div>${chatHTML(chat.output)}</div>` : ''}</div>`;
}

/** chatHTML draws messages as turns: role, text, tool calls and their results. */
export function chatHTML(messages) {
  return messages.map((m) => html`<div class="msg role-${esc(m.role)}" data-role="${esc(m.role)}"><div class="msg-role">${esc(m.role)}${m.finish_reason ? html` <span class="muted">· ${esc(m.finish_reason)}</span>` : ''}</div>${(m.parts || []).map(partHTML)}</div>`);
}

/** partHTML draws one part of a message: text, a tool call, a tool result or reasoning. */
export function partHTML(p) {
  switch (p.type) {
    case 'text': return html`<div class="part-text">${esc(p.text)}</div>`;
    case 'tool_call': return html`<div class="part-call" data-part="tool_call"><span class="ck">→ ${esc(p.name || 'tool')}</span>${p.id ? html` <span class="muted mono">${esc(p.id)}</span>` : ''}${p.arguments ? valueHTML(p.arguments) : ''}</div>`;
    case 'tool_result': return html`<div class="part-result" data-part="tool_result"><span class="ck">← ${esc(p.name || 'result')}</span>${p.id ? html` <span class="muted mono">${esc(p.id)}</span>` : ''}${valueHTML(p.result || '')}</div>`;
    case 'reasoning': return html`<details class="part-reasoning"><summary>reasoning</summary><div class="part-text">${esc(p.text)}</div></details>`;
    default: return html`<div class="muted">${esc(p.text || p.type)}</div>`;
  }
}
