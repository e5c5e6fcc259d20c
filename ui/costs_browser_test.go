package ui_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/internal/tallytest"
)

// TestCostPageForTeamLead: the costs page compares with the previous
// period of the same length, shows every dimension the API groups by and
// lists the top runs by cost across all pages. One SendAgentRun run 90
// minutes ago and two 30 minutes ago, $0.007465 each (runCostUSD): over
// the last hour $0.01493 against $0.007465 the hour before, +100%.
func TestCostPageForTeamLead(t *testing.T) {
	tally := startTally(t)
	now := time.Now().Truncate(time.Millisecond)
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: now.Add(-90 * time.Minute)})
	a := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: now.Add(-30 * time.Minute)})
	b := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: now.Add(-29 * time.Minute)})
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/costs?since=1h")
	waitFor(t, ctx, `!!document.querySelector('#cost-total')`)

	if got := run(t, ctx, "total", chromedp.Evaluate[string](`document.getElementById('cost-total').dataset.usd`)); !nearString(got, 2*runCostUSD) {
		t.Errorf("total %s, want %v", got, 2*runCostUSD)
	}
	change := run(t, ctx, "change", chromedp.Evaluate[string](`document.querySelector('#cost-change .chg').dataset.change`))
	if v, err := strconv.ParseFloat(change, 64); err != nil || v < 0.9999 || v > 1.0001 {
		t.Errorf("change vs the previous hour %q, want 1.0000 (+100%%)", change)
	}
	for _, by := range []string{"agent", "model", "task", "provider", "tool", "service", "user", "conversation"} {
		if !run(t, ctx, "table "+by, chromedp.Evaluate[bool](`!!document.getElementById('cost-by-`+by+`')`)) {
			t.Errorf("no table by %s", by)
		}
	}
	type topRun struct {
		ID  string `json:"id"`
		USD string `json:"usd"`
	}
	top := run(t, ctx, "top runs", chromedp.Evaluate[[]topRun](`[...document.querySelectorAll('#top-runs tbody tr')].map(r => ({id: r.dataset.traceId, usd: r.querySelector('.money').dataset.usd}))`))
	if len(top) != 2 {
		t.Fatalf("top runs %+v, want the two runs of the last hour", top)
	}
	ids := map[string]bool{top[0].ID: true, top[1].ID: true}
	if !ids[a] || !ids[b] || !nearString(top[0].USD, runCostUSD) || !nearString(top[1].USD, runCostUSD) {
		t.Errorf("top runs %+v, want %s and %s at $%v", top, a, b, runCostUSD)
	}

	// One group a table (?limit=1): by agent the researcher's $0.005125 a
	// run, and one other agent, the rest of the total, on a row of its own.
	open(t, ctx, tally.URL+"/costs?since=1h&limit=1")
	waitFor(t, ctx, `!!document.querySelector('#cost-by-agent tr.others')`)
	type row struct {
		Rows   int    `json:"rows"`
		Others string `json:"others"`
		USD    string `json:"usd"`
	}
	agents := run(t, ctx, "agents with limit=1", chromedp.Evaluate[row](`(() => { const t = document.getElementById('cost-by-agent'); const o = t.querySelector('tr.others');
		return {rows: t.querySelectorAll('tbody tr').length, others: o.dataset.others, usd: o.querySelector('.money').dataset.usd}; })()`))
	if agents.Rows != 1 || agents.Others != "1" || !nearString(agents.USD, 2*(runCostUSD-0.005125)) {
		t.Errorf("by agent with limit=1: %+v, want 1 row and 1 other of $%v", agents, 2*(runCostUSD-0.005125))
	}

	// The agent filter: the researcher's gpt-4o calls only, $0.005125 a run.
	open(t, ctx, tally.URL+"/costs?since=1h&agent=researcher")
	waitFor(t, ctx, `!!document.querySelector('#cost-total')`)
	if got := run(t, ctx, "researcher total", chromedp.Evaluate[string](`document.getElementById('cost-total').dataset.usd`)); !nearString(got, 2*0.005125) {
		t.Errorf("total with agent=researcher %s, want %v", got, 2*0.005125)
	}
	if v := run(t, ctx, "agent field", chromedp.Evaluate[string](`document.querySelector('#range input[name=agent]').value`)); v != "researcher" {
		t.Errorf("agent field %q, want researcher", v)
	}
}
