// The conversations list and one conversation with its transcript.

import { esc, html, join, show } from '../lib/html.js';
import { api, errorHTML } from '../lib/api.js';
import { fmtMs, moneyHTML, num, parseTime, timeHTML } from '../lib/format.js';
import { main } from '../lib/page.js';
import { copyParams } from '../lib/range.js';
import { tableHTML } from '../lib/table.js';
import { chatHTML } from './chat.js';
import { RUN_COLS } from './runs.js';

export async function pageConversation() {
  const el = document.getElementById('conversation');
  const id = main.dataset.id;
  let page;
  try {
    page = await api(`/api/v1/runs?${new URLSearchParams({ conversation: id, limit: '1000' })}`);
  } catch (err) {
    show(el, errorHTML(err, 'conversation'));
    return;
  }
  const runs = page.runs.slice().sort((a, b) => parseTime(a.start) - parseTime(b.start));
  if (!runs.length) {
    show(el, html`<p class="empty" data-empty>No runs carry conversation id <code>${esc(id)}</code>. Runs join a conversation through <code>gen_ai.conversation.id</code> (or its aliases, e.g. <code>session.id</code>).</p>`);
    return;
  }
  const sum = (f) => runs.reduce((a, r) => a + f(r), 0);
  const first = parseTime(runs[0].start);
  const last = Math.max(...runs.map((r) => parseTime(r.end)));
  const cols = [{ key: 'n', label: '#', num: true, html: (r, i) => String(i + 1) }, ...RUN_COLS];
  show(el, html`
<dl class="stats">
  <div class="stat"><dt>Runs</dt><dd>${num(runs.length)}${page.next_cursor ? html` <small>(first 1000)</small>` : ''}</dd></div>
  <div class="stat"><dt>Cost</dt><dd>${moneyHTML(sum((r) => r.cost.total_usd), 'conv-cost')}</dd></div>
  <div class="stat"><dt>Elapsed</dt><dd>${fmtMs(last - first)}</dd></div>
  <div class="stat"><dt>Run time</dt><dd>${fmtMs(sum((r) => r.duration_ms))}</dd></div>
  <div class="stat"><dt>Input / cache read</dt><dd>${num(sum((r) => r.usage.input_tokens))} <small>/ ${num(sum((r) => r.usage.cache_read_tokens))}</small></dd></div>
  <div class="stat"><dt>Output tokens</dt><dd>${num(sum((r) => r.usage.output_tokens))}</dd></div>
  <div class="stat"><dt>LLM / tool calls</dt><dd>${num(sum((r) => r.llm_calls))} <small>/</small> ${num(sum((r) => r.tool_calls))}</dd></div>
  <div class="stat"><dt>Errors</dt><dd>${num(sum((r) => r.errors))}</dd></div>
</dl>
<p class="muted">Started ${timeHTML(runs[0].start)}; user ${esc(runs.find((r) => r.user_id)?.user_id || '—')}. Runs in the order they started.</p>
${tableHTML(cols, runs, null, { id: 'conv-runs', rowAttrs: (r) => html` data-trace-id="${esc(r.trace_id)}"${r.status === 'error' ? html` class="err"` : ''}` })}
<h2>Transcript</h2><div id="conv-transcript"><p class="loading">Loading the transcript…</p></div>`);
  const box = document.getElementById('conv-transcript');
  try {
    const tr = await api(`/api/v1/conversations/${encodeURIComponent(id)}/transcript`);
    show(box, html`${tr.truncated ? html`<p class="notice warn">The transcript shows the conversation's first runs only.</p>` : ''}${tr.turns.map((t, i) => html`<section class="turn" data-trace-id="${esc(t.trace_id)}"><h3><a href="/runs/${esc(t.trace_id)}">Run ${i + 1}</a> <span class="muted">${esc(t.task)} · ${timeHTML(t.start)}</span>${t.status === 'error' ? html` <span class="pill error">failed</span>` : ''}</h3>${t.messages.length ? chatHTML(t.messages) : html`<p class="muted">No messages captured in this run.</p>`}</section>`)}`);
  } catch (err) {
    show(box, errorHTML(err, 'transcript'));
  }
}

export async function pageConversations() {
  const el = document.getElementById('conversations');
  const params = new URLSearchParams(location.search);
  let page;
  try {
    page = await api(`/api/v1/conversations?${copyParams(params, ['since', 'until', 'cursor', 'limit'])}`);
  } catch (err) {
    show(el, errorHTML(err, 'conversations'));
    return;
  }
  const list = page.conversations || [];
  if (!list.length) {
    show(el, html`<p class="empty" data-empty>${params.get('cursor') ? 'No more conversations.' : html`No conversations yet. Runs join a conversation through <code>gen_ai.conversation.id</code> (or its aliases, e.g. <code>session.id</code>).`}</p>`);
    return;
  }
  const cols = [
    { key: 'id', label: 'Conversation', html: (c) => html`<a href="/conversations/${encodeURIComponent(c.conversation_id)}">${esc(c.conversation_id)}</a>` },
    { key: 'runs', label: 'Runs', num: true, html: (c) => num(c.runs) },
    { key: 'first', label: 'First run', html: (c) => timeHTML(c.first) },
    { key: 'last', label: 'Last activity', html: (c) => timeHTML(c.last) },
    { key: 'tokens', label: 'In / out', num: true, html: (c) => `${num(c.usage.input_tokens)} / ${num(c.usage.output_tokens)}` },
    { key: 'cost', label: 'Cost', num: true, html: (c) => moneyHTML(c.cost.total_usd) },
    { key: 'errors', label: 'Error spans', num: true, html: (c) => num(c.errors) },
  ];
  const next = page.next_cursor ? html`<p><a href="/conversations?${copyParams(params, ['since', 'until', 'limit'], { cursor: page.next_cursor })}">Next page →</a></p>` : '';
  show(el, html`${tableHTML(cols, list, null, { id: 'conv-list', rowAttrs: (c) => html` data-conversation-id="${esc(c.conversation_id)}"` })}${next}`);
}
