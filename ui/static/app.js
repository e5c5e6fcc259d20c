// tally UI: reads /api/v1 JSON and renders tables, the run waterfall and SVG
// charts. ES modules, no framework, no build step, no network access besides
// tally's API; every figure shown comes from the API, the modules only format
// and lay out. Markup is made with lib/html.js, which escapes by default.
// This module starts the page script main#main[data-page] names.

import { append, esc, html } from './lib/html.js';
import { fmtMs, num, usd } from './lib/format.js';
import { main } from './lib/page.js';
import { navBadge, pageAlerts } from './pages/alerts.js';
import { pageCache } from './pages/cache.js';
import { pageCompare } from './pages/compare.js';
import { pageConversation, pageConversations } from './pages/conversations.js';
import { pageCosts } from './pages/costs.js';
import { pageExplore } from './pages/explore.js';
import { pageRun } from './pages/run.js';
import { pageRuns } from './pages/runs.js';
import { pageTasks } from './pages/tasks.js';
import { pageReliability } from './pages/reliability.js';
import { pageTools } from './pages/tools.js';

const PAGES = { runs: pageRuns, run: pageRun, conversation: pageConversation, conversations: pageConversations, costs: pageCosts, tools: pageTools, cache: pageCache, tasks: pageTasks, compare: pageCompare, reliability: pageReliability, alerts: pageAlerts, explore: pageExplore };

// The number formats, for the console and for the tests that hold them
// equal to the CLI's.
window.tallyFormat = Object.freeze({ usd, num, fmtMs });

navBadge();

const run = PAGES[main.dataset.page];
if (run) {
  run().catch((err) => {
    append(main, html`<div class="notice error" role="alert">The page failed: ${esc(err && err.stack ? err.stack : err)}</div>`);
  }).finally(() => { document.body.dataset.ready = '1'; });
} else {
  document.body.dataset.ready = '1';
}
