package ui_test

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/tallyhq/tally/internal/tallytest"
)

// TestSearchFromTheRunsPage: the runs page answers a query with the runs
// it matched and the spans that matched; a bad query is underlined where
// it fails; the query bar completes fields and values; a metrics query
// draws on the explore page; a span's attribute offers a search for it.
// tallytest.SendAgentRun's run calls web_search once and fetch_url once
// (which fails with error.type timeout).
func TestSearchFromTheRunsPage(t *testing.T) {
	tally := startTally(t)
	id := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: time.Now().Add(-time.Hour)})
	ctx := newBrowser(t)

	open(t, ctx, tally.URL+"/runs?since=24h&query="+url.QueryEscape(`{ tool = "fetch_url" && span.error.type = "timeout" }`))
	if got := listedRuns(t, ctx); !reflect.DeepEqual(got, []string{id}) {
		t.Fatalf("runs %v, want [%s]", got, id)
	}
	matched := run(t, ctx, "matched", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#runs-table [data-match]')].map(a => a.textContent + ' ' + a.getAttribute('href'))`))
	if len(matched) != 1 || !strings.HasPrefix(matched[0], "execute_tool fetch_url /runs/"+id+"#span=") {
		t.Fatalf("matched spans %v", matched)
	}
	spanID := strings.TrimPrefix(matched[0], "execute_tool fetch_url /runs/"+id+"#span=")
	// The compiled statement is shown on demand, the project and window in it.
	if sql := run(t, ctx, "sql", chromedp.Evaluate[string](`document.querySelector('#search-sql pre').textContent`)); !strings.Contains(sql, "WHERE project = ? AND start >= ?") {
		t.Fatalf("show SQL: %q", sql)
	}
	// Saved under a name, the query comes back from the saved list.
	run(t, ctx, "save", chromedp.Steps(chromedp.SendKeys("#query-name", "fetch timeouts"), chromedp.Click("#query-save")))
	waitFor(t, ctx, `[...document.querySelectorAll('#query-saved option')].some(o => o.textContent === 'fetch timeouts')`)
	open(t, ctx, tally.URL+"/runs?since=24h")
	waitFor(t, ctx, `[...document.querySelectorAll('#query-saved option')].some(o => o.textContent === 'fetch timeouts')`)
	run(t, ctx, "choose", chromedp.Evaluate[bool](`(() => { const s = document.getElementById('query-saved');
		s.value = [...s.options].find(o => o.textContent === 'fetch timeouts').value; s.dispatchEvent(new Event('change')); return true; })()`))
	waitFor(t, ctx, `location.search.includes('query=') && document.body.dataset.ready === '1' && document.querySelectorAll('#runs-table tbody tr').length === 1`)
	if q := run(t, ctx, "query", chromedp.Evaluate[string](`document.getElementById('query').value`)); q != `{ tool = "fetch_url" && span.error.type = "timeout" }` {
		t.Fatalf("the saved query opened as %q", q)
	}

	// A query that does not parse: its position underlined, the message said.
	open(t, ctx, tally.URL+"/runs?query="+url.QueryEscape(`{ tool = }`))
	type bad struct{ Pos, Mark, Text string }
	got := run(t, ctx, "error", chromedp.Evaluate[bad](`(() => { const e = document.querySelector('.query-error');
		return e ? {pos: e.dataset.position, mark: e.querySelector('mark.bad').textContent, text: e.textContent} : {}; })()`))
	if got.Pos != "9" || got.Mark != "}" || !strings.Contains(got.Text, "expected a field or a value") {
		t.Fatalf("error shown %+v", got)
	}

	// Autocomplete: "{ to" offers tool; Tab takes it; "= " offers the
	// window's tools, the most frequent first (one call each: by name).
	open(t, ctx, tally.URL+"/runs?since=24h")
	run(t, ctx, "type", chromedp.Steps(chromedp.Click("#query"), chromedp.SendKeys("#query", "{ to")))
	waitFor(t, ctx, `[...document.querySelectorAll('#query-suggest li')].some(li => li.textContent.startsWith('tool '))`)
	// Move the selection to "tool" (suggestions are in the API's order), then take it.
	idx := run(t, ctx, "index", chromedp.Evaluate[int](`[...document.querySelectorAll('#query-suggest li')].findIndex(li => li.textContent.startsWith('tool '))`))
	for range idx {
		run(t, ctx, "down", chromedp.SendKeys("#query", kb.ArrowDown))
	}
	run(t, ctx, "tab", chromedp.SendKeys("#query", kb.Tab))
	waitFor(t, ctx, `document.getElementById('query').value === '{ tool'`)
	run(t, ctx, "eq", chromedp.SendKeys("#query", " = "))
	waitFor(t, ctx, `[...document.querySelectorAll('#query-suggest li')].map(li => li.querySelector('.mono').textContent).join(',') === 'fetch_url,web_search'`)
	run(t, ctx, "take", chromedp.SendKeys("#query", kb.Enter))
	waitFor(t, ctx, `document.getElementById('query').value === '{ tool = "fetch_url"'`)

	// A metrics query on the explore page: one series per tool, a call each.
	open(t, ctx, tally.URL+"/explore?since=24h&query="+url.QueryEscape(`{ tool != nil } | count_over_time() by (tool)`))
	series := run(t, ctx, "series", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#series-table tbody tr')].map(r => r.cells[0].textContent + ' ' + r.querySelector('[data-total]').dataset.total)`))
	if want := []string{"tool=fetch_url 1", "tool=web_search 1"}; !reflect.DeepEqual(series, want) {
		t.Fatalf("series %v, want %v", series, want)
	}
	if n := run(t, ctx, "lines", chromedp.Evaluate[int](`document.querySelectorAll('svg.chart [data-series]').length`)); n != 2 {
		t.Fatalf("%d lines drawn, want 2", n)
	}

	// The fetch_url span's error type (error.type, kept in a column)
	// offers its search.
	open(t, ctx, tally.URL+"/runs/"+id+"#span="+spanID)
	waitFor(t, ctx, `[...document.querySelectorAll('#detail a.qlink')].some(a => a.dataset.search === '{ span.error.type = "timeout" }')`)
}
