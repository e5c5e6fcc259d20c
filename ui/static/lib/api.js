// Reading tally's JSON API, and saying why a read failed.

import { esc, html } from './html.js';

/** ApiError is a non-2xx answer from the API, with its message. */
export class ApiError extends Error {
  constructor(status, message, path, position = null) {
    super(message);
    this.status = status;
    this.path = path;
    // position is where a query's error is (a search's 400), else null.
    this.position = position;
  }
}

/**
 * api fetches a JSON document from tally's API and throws ApiError on
 * failure. With opts.signal the request is cancelled when the signal aborts,
 * and the caller gets the AbortError as is (see aborted), not an ApiError.
 */
export async function api(path, opts = {}) {
  let resp;
  try {
    resp = await fetch(path, { headers: { Accept: 'application/json' }, credentials: 'same-origin', signal: opts.signal });
  } catch (e) {
    if (aborted(e)) throw e;
    throw new ApiError(0, `tally did not answer (${e.message})`, path);
  }
  let body = null;
  const text = await resp.text();
  try { body = text ? JSON.parse(text) : null; } catch { body = null; }
  if (!resp.ok) {
    throw new ApiError(resp.status, (body && body.error) || text.slice(0, 300) || resp.statusText, path,
      body && typeof body.position === 'number' ? body.position : null);
  }
  return body;
}

/** aborted reports whether err is a request its caller cancelled. */
export function aborted(err) {
  return err instanceof DOMException && err.name === 'AbortError';
}

/**
 * errorHTML explains a failed API call. A 404 or 501 from a feature's endpoint
 * means this build (or this server's configuration) lacks the feature.
 */
export function errorHTML(err, feature) {
  if (err instanceof ApiError && (err.status === 404 || err.status === 501) && feature) {
    const why = err.status === 501 ? `the server says: ${err.message}` : html`<code>${esc(err.path)}</code> answered 404`;
    return html`<p class="notice warn" role="status" data-unavailable="${esc(feature)}">Not available in this build of tally: ${esc(feature)} (${err.status === 501 ? esc(why) : why}).</p>`;
  }
  const status = err instanceof ApiError && err.status ? ` (HTTP ${err.status})` : '';
  return html`<div class="notice error" role="alert"><strong>Could not load ${esc(feature || 'data')}${status}:</strong> ${esc(err.message)}${err.path ? html` <code>${esc(err.path)}</code>` : ''}</div>`;
}

export const SEND_HELP = html`<div class="empty" data-empty>
<h2>No runs yet</h2>
<p>tally shows what your agents send it over OTLP/HTTP. Point any OpenTelemetry SDK at this server:</p>
<pre>export OTEL_EXPORTER_OTLP_ENDPOINT=http://${esc(location.hostname || 'localhost')}:${esc(location.port || '4318')}
export OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf
# with API keys configured: export OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer &lt;ingest key&gt;"</pre>
<p>Record spans with the GenAI semantic conventions (<code>gen_ai.operation.name</code>, <code>gen_ai.request.model</code>,
<code>gen_ai.usage.*</code>, <code>gen_ai.tool.name</code>…). To try it with realistic traffic, run <code>tally demo</code>.</p>
</div>`;

/** listOf accepts either a bare array or an object holding it under key. */
export const listOf = (body, key) => (Array.isArray(body) ? body : (body && body[key]) || []);
