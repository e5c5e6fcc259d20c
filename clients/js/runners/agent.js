// The agent under test in the runner examples (runners/vitest, runners/jest):
// the agent loop of examples/agent.test.js, driven by a scripted model that
// asks for the tool calls of the `tally demo` run recorded in
// replay/testdata/demo_fixture.json.
import { RecordedToolError, FaultError } from '@tallyhq/replay';

const topic = 'cannot reset password after SSO migration';

/** The tool calls the production model asked for, one per turn. */
export function productionRequests() {
  return [
    { tool: 'web_search', args: { query: `${topic} official documentation`, max_results: 5 } },
    { tool: 'web_search', args: { query: topic, max_results: 5 } },
    { tool: 'fetch_url', args: { url: 'https://en.wikipedia.org/cannot-reset-password-after-sso-migration-376', timeout_s: 3 } },
    { tool: 'web_search', args: { query: topic, max_results: 5 } }, // the model retries the rate-limited search
    { tool: 'fetch_url', args: { url: 'https://github.com/cannot-reset-password-after-sso-migration-643', timeout_s: 3 } },
  ];
}

/** Stands in for the LLM: hands out requests one per turn. */
export function scriptedModel(requests = productionRequests()) {
  const queue = [...requests];
  return { next: () => queue.shift() };
}

/** What the agent logs for the production run, replayed clean. */
export const productionLog = [
  'web_search: 3 results',
  'web_search failed: web_search: rate_limited after 86 ms',
  'fetch_url: HTTP 200',
  'web_search: 3 results',
  'fetch_url failed: fetch_url: timeout after 3065 ms',
];

/**
 * The agent code under test: runs each tool call the model asks for and
 * hands the result, or the tool's error, back to the model; retries a call
 * that timed out (a read: safe to retry) up to twice. Like most agent loops
 * it never throws on a tool error, so a call the fixture does not hold is
 * only caught by the replay report checked when the test ends.
 */
export async function researchStep(model, tools, log) {
  for (let req = model.next(); req; req = model.next()) {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await tools.call(req.tool, req.args);
        log.push(`${req.tool}: ${req.tool === 'web_search' ? `${result.results.length} results` : `HTTP ${result.status}`}`);
        break;
      } catch (err) {
        if (err instanceof FaultError && err.timeout && attempt < 3) {
          log.push(`${req.tool}: timed out, retrying (attempt ${attempt + 1})`);
          continue;
        }
        log.push(`${req.tool} failed: ${err instanceof RecordedToolError ? err.errorMessage : err.message}`);
        break;
      }
    }
  }
}
