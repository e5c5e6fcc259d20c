package ui_test

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/schema"
)

// uiSpan is a span of project "default" starting at base+at and lasting
// dur; parent "" makes a root.
func uiSpan(base time.Time, trace, id, parent, typ string, at, dur time.Duration, status string) schema.Span {
	start := base.Add(at)
	if parent != "" {
		parent = fmt.Sprintf("%016s", parent)
	}
	return schema.Span{
		Project: "default", TraceID: fmt.Sprintf("%032s", trace), SpanID: fmt.Sprintf("%016s", id),
		ParentSpanID: parent, Start: start.Truncate(time.Second), StartNs: uint64(start.UnixNano()),
		EndNs: uint64(start.Add(dur).UnixNano()), DurationNs: uint64(dur), Name: typ + " " + id,
		SpanType: typ, Status: status, IngestedAt: start, Version: 1,
	}
}

// listedRuns reads the runs table's trace ids, top to bottom.
func listedRuns(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return run(t, ctx, "listed runs", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#runs-table tbody tr')].map(r => r.dataset.traceId)`))
}

// TestRunsPageStatusAndWindow: the runs page lists the runs that started in
// its window, marks as failed only the runs whose root failed, and shows a
// recovered run's errors as recovered. Minutes from base (an hour ago):
//
//	ea:   root −20–10 ok, tool 5–6 ok       started before base
//	fa11: root 0–1 error, tool 0–1 error    failed, 2 error spans
//	bec0: root 2–3 ok, tool 2–2.5 error, tool 2.5–3 ok   ok, 1 recovered
func TestRunsPageStatusAndWindow(t *testing.T) {
	tally := startTally(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Minute).UTC()
	m, s := time.Minute, 30*time.Second
	spans := []schema.Span{
		uiSpan(base, "ea", "e0", "", schema.TypeAgent, -20*m, 30*m, "ok"),
		uiSpan(base, "ea", "e1", "e0", schema.TypeTool, 5*m, m, "ok"),
		uiSpan(base, "fa11", "f0", "", schema.TypeAgent, 0, m, "error"),
		uiSpan(base, "fa11", "f1", "f0", schema.TypeTool, 0, m, "error"),
		uiSpan(base, "bec0", "b0", "", schema.TypeAgent, 2*m, m, "ok"),
		uiSpan(base, "bec0", "b1", "b0", schema.TypeTool, 2*m, s, "error"),
		uiSpan(base, "bec0", "b2", "b0", schema.TypeTool, 2*m+s, s, "ok"),
	}
	if err := tally.Store.InsertSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	id := func(s string) string { return fmt.Sprintf("%032s", s) }
	ctx := newBrowser(t)

	open(t, ctx, tally.URL+"/runs?since="+url.QueryEscape(base.Format(time.RFC3339)))
	if got, want := listedRuns(t, ctx), []string{id("bec0"), id("fa11")}; !reflect.DeepEqual(got, want) {
		t.Fatalf("runs since base %v, want %v (ea started before it)", got, want)
	}
	type row struct {
		Err    bool   `json:"err"`
		Errors string `json:"errors"`
		Kind   string `json:"kind"`
	}
	rows := run(t, ctx, "rows", chromedp.Evaluate[[]row](`[...document.querySelectorAll('#runs-table tbody tr')].map(r => {
		const cell = r.querySelector('[data-errors]');
		return {err: r.classList.contains('err'), errors: cell ? cell.textContent : '', kind: cell ? cell.dataset.errors : ''};
	})`))
	if want := []row{{false, "1 recovered", "recovered"}, {true, "2", "failed"}}; !reflect.DeepEqual(rows, want) {
		t.Errorf("rows %+v, want %+v", rows, want)
	}
	open(t, ctx, tally.URL+"/runs?since="+url.QueryEscape(base.Add(-time.Hour).Format(time.RFC3339))+"&status=error")
	if got, want := listedRuns(t, ctx), []string{id("fa11")}; !reflect.DeepEqual(got, want) {
		t.Errorf("failed runs %v, want %v", got, want)
	}
	open(t, ctx, tally.URL+"/runs?since="+url.QueryEscape(base.Add(-time.Hour).Format(time.RFC3339))+"&has_errors=false")
	if got, want := listedRuns(t, ctx), []string{id("ea")}; !reflect.DeepEqual(got, want) {
		t.Errorf("runs without error spans %v, want %v", got, want)
	}

	open(t, ctx, tally.URL+"/runs/"+id("bec0"))
	run(t, ctx, "run drawn", chromedp.WaitReady(chromedp.CSS("body[data-rendered]")))
	status := run(t, ctx, "status", chromedp.Evaluate[string](`document.getElementById('run-status').textContent`))
	errs := run(t, ctx, "errors", chromedp.Evaluate[string](`document.getElementById('run-errors').textContent`))
	if status != "ok" || errs != "1 error span, recovered" {
		t.Errorf("run bec0 shows %q, %q; want ok, 1 error span, recovered", status, errs)
	}
}

// TestRunsPageSortsAcrossPages: the runs page asks the API for its order,
// so the second page continues the first. Four runs (start in minutes from
// an hour ago, cost): a1 0 $0.002, b2 1 $0.005, c3 2 $0, d4 3 $0.003. By
// cost, highest first, two a page: b2 d4 | a1 c3; the Cost header then asks
// for lowest first from the first page: c3 a1.
func TestRunsPageSortsAcrossPages(t *testing.T) {
	tally := startTally(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Minute).UTC()
	var spans []schema.Span
	for i, r := range []struct {
		id   string
		cost float64
	}{{"a1", 0.002}, {"b2", 0.005}, {"c3", 0}, {"d4", 0.003}} {
		root := uiSpan(base, r.id, r.id+"0", "", schema.TypeAgent, time.Duration(i)*time.Minute, 30*time.Second, "ok")
		chat := uiSpan(base, r.id, r.id+"1", r.id+"0", schema.TypeInference, time.Duration(i)*time.Minute, time.Second, "ok")
		chat.UsageMode, chat.InputTokens, chat.OutputTokens = schema.UsageInclusive, 100, 10
		chat.CostTotal, chat.CostInput, chat.CostSource = r.cost, r.cost, schema.CostCatalog
		spans = append(spans, root, chat)
	}
	if err := tally.Store.InsertSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	id := func(s string) string { return fmt.Sprintf("%032s", s) }
	ctx := newBrowser(t)
	since := url.QueryEscape(base.Add(-time.Minute).Format(time.RFC3339))

	open(t, ctx, tally.URL+"/runs?since="+since+"&sort=cost&limit=2")
	if got, want := listedRuns(t, ctx), []string{id("b2"), id("d4")}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first page by cost %v, want %v", got, want)
	}
	order := run(t, ctx, "order", chromedp.Evaluate[string](`document.getElementById('runs-order').textContent`))
	if order != "2 runs on this page, by cost, highest first" {
		t.Errorf("pager says %q", order)
	}
	run(t, ctx, "next page", chromedp.Click(chromedp.CSS(`a[rel="next"]`)))
	waitFor(t, ctx, `location.search.includes('cursor=') && document.body.dataset.ready === '1'`)
	if got, want := listedRuns(t, ctx), []string{id("a1"), id("c3")}; !reflect.DeepEqual(got, want) {
		t.Fatalf("second page by cost %v, want %v", got, want)
	}
	if n := run(t, ctx, "next link", chromedp.Evaluate[int](`document.querySelectorAll('a[rel="next"]').length`)); n != 0 {
		t.Errorf("last page has %d next links", n)
	}
	run(t, ctx, "sort by cost ascending", chromedp.Click(chromedp.CSS(`#runs-table button.sortbtn[data-sort="cost"]`)))
	waitFor(t, ctx, `location.search.includes('dir=asc') && !location.search.includes('cursor=') && document.body.dataset.ready === '1'`)
	if got, want := listedRuns(t, ctx), []string{id("c3"), id("a1")}; !reflect.DeepEqual(got, want) {
		t.Errorf("first page by cost, lowest first %v, want %v", got, want)
	}
	if v := run(t, ctx, "sort field", chromedp.Value(chromedp.CSS(`#filters select[name="sort"]`))); v != "cost" {
		t.Errorf("sort field %q, want cost", v)
	}
}
