package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/tools/demo"
)

// getRun reads a run answer from the API.
func getRun(t *testing.T, url string) query.RunDetail {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var d query.RunDetail
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &d) != nil {
		t.Fatalf("GET %s: %d %.300s", url, resp.StatusCode, body)
	}
	return d
}

// TestBigRunOpensInParts: a demo run of 5,000 spans opens with the 2,000
// spans the page asks for (RUN_PART), says so, and counts them; a "load
// more" row brings its node's hidden children, and the loaded count grows
// by exactly what that row said it hid less what it still hides. A deep
// link to a span outside the first part selects it (the page focuses it);
// "Most expensive step" selects the span the server names.
func TestBigRunOpensInParts(t *testing.T) {
	tally := startTally(t)
	sum, err := demo.Send(context.Background(), demo.Config{Endpoint: tally.URL, Runs: 1, Seed: 11, Spans: 5000})
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	id := sum.TraceIDs[0]
	whole := getRun(t, tally.URL+"/api/v1/runs/"+id)
	part := getRun(t, tally.URL+"/api/v1/runs/"+id+"?max_nodes=2000")
	inPart := map[string]bool{}
	var walk func([]*query.SpanNode, func(*query.SpanNode))
	walk = func(ns []*query.SpanNode, f func(*query.SpanNode)) {
		for _, n := range ns {
			f(n)
			walk(n.Children, f)
		}
	}
	walk(part.Roots, func(n *query.SpanNode) { inPart[n.SpanID] = true })
	var outside *query.SpanNode
	walk(whole.Roots, func(n *query.SpanNode) {
		if outside == nil && !inPart[n.SpanID] {
			outside = n
		}
	})
	if len(inPart) != 2000 || outside == nil {
		t.Fatalf("the API's first part holds %d spans, want 2000 with some left out", len(inPart))
	}

	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/runs/"+id)
	run(t, ctx, "waterfall drawn", chromedp.WaitReady(chromedp.CSS("body[data-rendered]")))
	notice := run(t, ctx, "partial notice", chromedp.Text(chromedp.CSS("#run-partial")))
	if !strings.Contains(notice, "5,000 spans") || !strings.Contains(notice, "2,000 are loaded") {
		t.Errorf("notice %q, want 5,000 spans and 2,000 loaded", notice)
	}
	loaded := func() int {
		text := run(t, ctx, "count", chromedp.Text(chromedp.CSS("#wf-count")))
		m := regexp.MustCompile(`of ([0-9,]+) spans shown`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("count %q", text)
		}
		n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		return n
	}
	if n := loaded(); n != 2000 {
		t.Errorf("%d spans loaded, want 2000", n)
	}

	// Expand everything, scroll to the last row: a "load more" row.
	run(t, ctx, "expand all", chromedp.Click(chromedp.CSS("#wf-expand")))
	run(t, ctx, "scroll to the end", chromedp.Evaluate[any](`(() => { const w = document.getElementById('wf-rows'); w.scrollTop = w.scrollHeight; })()`))
	waitFor(t, ctx, `!!document.querySelector('#wf-rows .wf-more')`)
	hidden := func(text string) int {
		m := regexp.MustCompile(`([0-9,]+) more spans?`).FindStringSubmatch(text)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		return n
	}
	of := run(t, ctx, "more row", chromedp.Evaluate[string](`[...document.querySelectorAll('#wf-rows .wf-more')].pop().dataset.moreOf`))
	sel := fmt.Sprintf(`#wf-rows .wf-more[data-more-of="%s"]`, of)
	before := hidden(run(t, ctx, "more text", chromedp.Text(chromedp.CSS(sel))))
	if before == 0 {
		t.Fatalf("the load-more row of %s says nothing is hidden", of)
	}
	run(t, ctx, "load more", chromedp.Click(chromedp.CSS(sel+" .more")))
	waitFor(t, ctx, fmt.Sprintf(`[...document.querySelectorAll('#wf-rows .wf-row')].every(r => !r.textContent.includes('loading')) && document.getElementById('wf-count').textContent.indexOf('of 2,000 spans') < 0`))
	after := 0
	if ok := run(t, ctx, "more row left", chromedp.Evaluate[bool](fmt.Sprintf(`!!document.querySelector('%s')`, sel))); ok {
		after = hidden(run(t, ctx, "more text", chromedp.Text(chromedp.CSS(sel))))
	}
	// What the load should have brought, from the API itself: the page of
	// children the row asks for (offset 0, 1,000 nodes), less what the
	// first part already held.
	resp, err := http.Get(fmt.Sprintf("%s/api/v1/runs/%s/spans/%s/children?offset=0&max_nodes=1000", tally.URL, id, of))
	if err != nil {
		t.Fatal(err)
	}
	var page query.ChildrenPart
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	walk(page.Children, func(n *query.SpanNode) {
		if !inPart[n.SpanID] {
			added++
		}
	})
	var hiddenBefore int
	walk(part.Roots, func(n *query.SpanNode) {
		if n.SpanID == of {
			hiddenBefore = n.HiddenSpans
		}
	})
	if added == 0 || before != hiddenBefore {
		t.Fatalf("load-more row of %s: says %d hidden, the API %d; the page brings %d new spans", of, before, hiddenBefore, added)
	}
	if n := loaded(); n != 2000+added {
		t.Errorf("after loading: %d spans loaded, want 2000 + the %d the children page adds", n, added)
	}
	if after != 0 && after != hiddenBefore-added {
		t.Errorf("after loading the row says %d hidden, want %d − %d", after, hiddenBefore, added)
	}

	// A deep link to a span outside the first part selects it (from another
	// page: a change of hash alone would not reload this one).
	open(t, ctx, tally.URL+"/runs")
	open(t, ctx, tally.URL+"/runs/"+id+"#span="+outside.SpanID)
	run(t, ctx, "waterfall drawn", chromedp.WaitReady(chromedp.CSS("body[data-rendered]")))
	waitFor(t, ctx, `!!document.getElementById('detail-name')`)
	if got := run(t, ctx, "selected", chromedp.Evaluate[string](`document.querySelector('#wf-rows .wf-row[aria-selected="true"]').dataset.spanId`)); got != outside.SpanID {
		t.Errorf("deep link to %s selected %s", outside.SpanID, got)
	}
	// The costliest step, as the server names it.
	run(t, ctx, "most expensive step", chromedp.Click(chromedp.CSS("#wf-costliest")))
	waitFor(t, ctx, fmt.Sprintf(`location.hash === '#span=%s'`, whole.CostliestSpanID))
}
