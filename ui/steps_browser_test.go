package ui_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/internal/tallytest"
)

// TestRunPageStepCosts: every waterfall row shows its subtree's cost, the
// hover text gives the span's own and inclusive tokens and cost, and the
// toolbar jumps to the most expensive step and to the first error. The run
// is tallytest.SendAgentRun's, with its hand-computed costs:
//
//	planner (root)     $0.00234 + $0.005125 = $0.007465 (its aggregated 3000/300 is not counted)
//	├── claude          $0.00234   200 + 800 cache read = 1,000 in / 100 out
//	├── web_search      nothing
//	└── researcher      $0.005125  (gpt-4o below it)
//	    ├── gpt-4o      $0.005125  2,000 in / 200 out: the most expensive step
//	    └── fetch_url   nothing; the run's only error
func TestRunPageStepCosts(t *testing.T) {
	tally := startTally(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	id := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: base})
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/runs/"+id)
	run(t, ctx, "waterfall drawn", chromedp.WaitReady(chromedp.CSS("body[data-rendered]")))

	type row struct {
		Name  string `json:"name"`
		USD   string `json:"usd"`
		Hover string `json:"hover"`
	}
	rows := run(t, ctx, "read rows", chromedp.Evaluate[[]row](`[...document.querySelectorAll('#wf-rows .wf-row')].map(r => ({
		name: r.querySelector('.name').textContent,
		usd: r.querySelector('.wcost') ? r.querySelector('.wcost').dataset.usd : '',
		hover: r.querySelector('.bar').title}))`))
	want := []struct {
		name  string
		usd   float64 // 0: no cost below this span
		hover []string
	}{
		{"invoke_agent planner", 0.007465, []string{"this span: 3,000 in / 300 out", "(not counted: repeats usage counted elsewhere)", "with everything below: 3,000 in / 300 out"}},
		{"chat claude-sonnet-4-5", 0.00234, []string{"this span: 1,000 in / 100 out", "with everything below: 1,000 in / 100 out"}},
		{"execute_tool web_search", 0, nil},
		{"invoke_agent researcher", 0.005125, []string{"with everything below: 2,000 in / 200 out"}},
		{"chat gpt-4o", 0.005125, []string{"this span: 2,000 in / 200 out"}},
		{"execute_tool fetch_url", 0, nil},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows drawn, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		r := rows[i]
		if r.Name != w.name {
			t.Fatalf("row %d is %q, want %q", i, r.Name, w.name)
		}
		if w.usd == 0 {
			if r.USD != "" || strings.Contains(r.Hover, "this span") {
				t.Errorf("%s: shows cost %q / hover %q, want none", r.Name, r.USD, r.Hover)
			}
			continue
		}
		if v, err := strconv.ParseFloat(r.USD, 64); err != nil || !near(v, w.usd) {
			t.Errorf("%s: subtree cost %q, want %v", r.Name, r.USD, w.usd)
		}
		for _, h := range w.hover {
			if !strings.Contains(r.Hover, h) {
				t.Errorf("%s: hover %q lacks %q", r.Name, r.Hover, h)
			}
		}
	}

	// The researcher's detail shows what it and its children cost together.
	run(t, ctx, "select researcher", chromedp.Click(chromedp.CSS(`#wf-rows .wf-row[data-type="agent"][data-depth="1"] .name`)))
	sub := run(t, ctx, "subtree figures", chromedp.Text(chromedp.CSS("#detail-subtree")))
	if !strings.Contains(sub, "2,000 in / 200 out") {
		t.Errorf("researcher's subtree figures %q lack 2,000 in / 200 out", sub)
	}
	if v := run(t, ctx, "subtree cost", chromedp.Evaluate[string](`document.querySelector('#detail-subtree .money').dataset.usd`)); !nearString(v, 0.005125) {
		t.Errorf("researcher's subtree cost %s, want 0.005125", v)
	}

	run(t, ctx, "most expensive step", chromedp.Click(chromedp.CSS("#wf-costliest")))
	if name := run(t, ctx, "selected", chromedp.Text(chromedp.CSS("#detail-name"))); name != "chat gpt-4o" {
		t.Errorf("most expensive step selected %q, want chat gpt-4o ($0.005125 > claude's $0.00234)", name)
	}
	// Collapse everything, then jump to the first error: its ancestors open.
	run(t, ctx, "collapse all", chromedp.Click(chromedp.CSS("#wf-collapse")))
	run(t, ctx, "first error", chromedp.Click(chromedp.CSS("#wf-first-error")))
	if name := run(t, ctx, "selected", chromedp.Text(chromedp.CSS("#detail-name"))); name != "execute_tool fetch_url" {
		t.Errorf("first error selected %q, want execute_tool fetch_url", name)
	}
	if sel := run(t, ctx, "selected row", chromedp.Evaluate[string](`document.querySelector('#wf-rows .wf-row[aria-selected="true"] .name').textContent`)); sel != "execute_tool fetch_url" {
		t.Errorf("the selected row drawn is %q, want fetch_url revealed", sel)
	}
}
