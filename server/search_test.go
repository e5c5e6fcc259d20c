package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/query/traceql"
	"github.com/tallyhq/tally/safety"
)

// searchRuns sends three runs through the OTel Go SDK, each named by its
// root span:
//
//	refunds (50 min ago): agent "support"; a chat (gpt-4o, temperature
//	  1.2, 12 000 input tokens, no cache read) asked "Please cancel my
//	  order 1234"; refund_payment twice (1 s, then 2 s) with the same
//	  arguments {"amount":700,"order":"1234"}.
//	docs (40 min ago): a chat (temperature 0.2, 500 input tokens) asked
//	  "Пожалуйста, ОТМЕНИТЬ ЗАКАЗ"; search_docs failed (1 s), then
//	  search_docs again with other arguments, ok (1.5 s).
//	research (30 min ago, root ended in error): agent "support"; a chat
//	  (15 000 input tokens, 8 000 of them cache reads) asked "Η ΠΕΡΙΟΔΟΣ
//	  ΕΛΕΓΧΟΥ" (a capital sigma that ends a word), with web_search
//	  under it (a grandchild of the root); refund_payment {"amount":100}.
//	  Every other span lasts 1 s.
func searchRuns(t *testing.T, endpoint string) map[string]string {
	t.Helper()
	// Runs start on 5-minute marks, so that a run's first seconds are
	// one step of a 5-minute metrics query.
	now := time.Now().Truncate(5 * time.Minute).UTC()
	str, num, flt := attribute.String, attribute.Int, attribute.Float64
	agent := func(name string) tallytest.Span {
		return tallytest.Span{Key: "root", Name: name, Start: 0, End: 60_000,
			Attrs: []attribute.KeyValue{str("gen_ai.operation.name", "invoke_agent"), str("gen_ai.agent.name", "support")}}
	}
	chat := func(key, parent string, temp float64, in, cached int, message string) tallytest.Span {
		s := tallytest.Chat(key, parent, "gpt-4o", 1000, 5000, "", in, 10)
		s.Attrs = append(s.Attrs, flt("gen_ai.request.temperature", temp))
		if cached > 0 {
			s.Attrs = append(s.Attrs, num("gen_ai.usage.cache_read.input_tokens", cached))
		}
		if message != "" {
			s.Attrs = append(s.Attrs, str("gen_ai.input.messages",
				`[{"role":"user","parts":[{"type":"text","content":"`+message+`"}]}]`))
		}
		return s
	}
	args := func(v string) attribute.KeyValue { return str("gen_ai.tool.call.arguments", v) }
	ids := map[string]string{}
	docs := agent("docs")
	docs.Attrs = docs.Attrs[:1]
	research := agent("research")
	research.Error = "gave up"
	for _, run := range []struct {
		at    time.Duration
		spans []tallytest.Span
	}{
		{50 * time.Minute, []tallytest.Span{agent("refunds"),
			chat("c", "root", 1.2, 12000, 0, "Please cancel my order 1234"),
			tallytest.Tool("r1", "root", "refund_payment", 6000, 7000, args(`{"amount":700,"order":"1234"}`)),
			tallytest.Tool("r2", "root", "refund_payment", 8000, 10000, args(`{"order":"1234","amount":700}`)),
		}},
		{40 * time.Minute, []tallytest.Span{docs,
			chat("c", "root", 0.2, 500, 0, "Пожалуйста, ОТМЕНИТЬ ЗАКАЗ"),
			func() tallytest.Span {
				s := tallytest.Tool("d1", "root", "search_docs", 6000, 7000, args(`{"q":"cancel"}`))
				s.Error = "timeout"
				return s
			}(),
			tallytest.Tool("d2", "root", "search_docs", 8000, 9500, args(`{"q":"cancel order"}`)),
		}},
		{30 * time.Minute, []tallytest.Span{research,
			chat("c", "root", 1.0, 15000, 8000, "Η ΠΕΡΙΟΔΟΣ ΕΛΕΓΧΟΥ"),
			tallytest.Tool("w", "c", "web_search", 2000, 3000, args(`{"q":"x"}`)),
			tallytest.Tool("r", "root", "refund_payment", 6000, 7000, args(`{"amount":100}`)),
		}},
	} {
		id, _ := tallytest.SendSpans(t, endpoint, "shop", now.Add(-run.at), run.spans)
		ids[run.spans[0].Name] = id
	}
	return ids
}

// search asks GET /api/v1/search and decodes a 200's page; it returns the
// status and the raw body.
func search(t *testing.T, base, q string, page *query.SearchPage) (int, []byte) {
	t.Helper()
	return searchWith(t, base, url.Values{"q": {q}, "since": {"2h"}}, page)
}

// searchWith is search with the request's parameters as given.
func searchWith(t *testing.T, base string, params url.Values, page *query.SearchPage) (int, []byte) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/search?" + params.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if page != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, page); err != nil {
			t.Fatalf("decode: %v\n%s", err, body)
		}
	}
	return resp.StatusCode, body
}

// runNames names a page's runs by their root span, in order.
func runNames(p query.SearchPage) []string {
	var out []string
	for _, r := range p.Runs {
		out = append(out, r.Name)
	}
	return out
}

// searchCase is a query and the runs it finds, by root span name, newest
// first.
type searchCase struct {
	name, q string
	want    []string
}

// checkSearches asks each case's query and compares the runs found.
func checkSearches(t *testing.T, base string, cases []searchCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var page query.SearchPage
			// The runs are stored once the SDK's export returned, but a
			// run's spans settle in the background: the answer holds
			// whatever the state, so no wait is needed beyond the export.
			code, body := search(t, base, tc.q, &page)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			if got := runNames(page); !slices.Equal(got, tc.want) {
				t.Fatalf("runs %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSearchAnswersTheIssuesQuestions: every expected list is worked out
// from searchRuns' data by hand, newest run first.
func TestSearchAnswersTheIssuesQuestions(t *testing.T) {
	tally := tallytest.Start(t)
	searchRuns(t, tally.URL)
	tests := []searchCase{
		{"a tool by its intrinsic", `{ tool = "refund_payment" }`, []string{"research", "refunds"}},
		{"a tool by the attribute it was sent as", `{ span.gen_ai.tool.name = "refund_payment" }`, []string{"research", "refunds"}},
		{"called twice with the same arguments", `{ tool = "refund_payment" } | by(args) | count() >= 2`, []string{"refunds"}},
		{"temperature above 1", `{ span.gen_ai.request.temperature > 1 }`, []string{"refunds"}},
		{"no cache read with more than 10k input", `{ cache_read_tokens = 0 && input_tokens > 10000 }`, []string{"refunds"}},
		{"content, Latin", `{ content contains "cancel my order" }`, []string{"refunds"}},
		{"content, Cyrillic folded", `{ content contains "отменить заказ" }`, []string{"docs"}},
		// Σ ending a word lowers to ς in Greek, to σ code point by code point:
		// the two are one letter.
		{"content, Greek final sigma", `{ content contains "περιοδος" }`, []string{"research"}},
		{"failed, then the same tool again", `{ tool = "search_docs" && status = error } then { tool = "search_docs" && status != error }`, []string{"docs"}},
		// docs' second search_docs follows the failed first under the same
		// parent: a retry_after_error, with other arguments; refunds'
		// second refund_payment repeats a success with the same arguments.
		{"failed, then retried with other arguments", `{ retry_class = "retry_after_error" && retry_args = "changed" }`, []string{"docs"}},
		{"retries", `{ retry }`, []string{"docs"}},
		{"repeats", `{ retry_class = "repeat" }`, []string{"refunds"}},
		{"run-level status", `{ trace:status = error }`, []string{"research"}},
		{"descendant through a span no filter matched", `{ operation = "invoke_agent" } >> { tool = "web_search" }`, []string{"research"}},
		{"child only", `{ operation = "invoke_agent" } > { tool = "web_search" }`, nil},
		{"both in one run", `{ tool = "web_search" } && { tool = "refund_payment" }`, []string{"research"}},
		{"a resource attribute", `{ resource.service.name = "shop" && name = "docs" }`, []string{"docs"}},
		{"regex is anchored", `{ name =~ "re" }`, nil},
		{"regex", `{ name =~ "re.*" }`, []string{"research", "refunds"}},
		{"nil", `{ span.gen_ai.agent.name = nil && operation = "invoke_agent" }`, []string{"docs"}},
		// No run has a conversation id: != compares only a field that is there.
		{"a run-level field the runs lack", `{ trace:conversation != "x" && operation = "invoke_agent" }`, nil},
	}
	checkSearches(t, tally.URL, tests)
}

// TestSearchReviewIntrinsics: the fields the safety review, the
// configuration and the counting rule compute per run. Beside searchRuns'
// three runs (no signals; search_docs a read under the policy, the other
// tools unknown; each one chat of gpt-4o, so one configuration), the
// cashier run of tallytest.SendSafetyRun 20 minutes ago (the newest run:
// no model, so another configuration; duplicate_side_effect and
// unsafe_retry; charge_card irreversible; refund1 and search1 timed out,
// ambiguous) and a run "wrapped" 10 minutes ago whose chat "outer" wraps
// a chat "inner" of the same usage: only inner's usage counts.
func TestSearchReviewIntrinsics(t *testing.T) {
	policy, err := safety.ParsePolicy(tallytest.SafetyPolicy)
	if err != nil {
		t.Fatal(err)
	}
	tally := tallytest.Start(t, func(o *tallytest.Config) { o.Reader = query.NewReader(o.Store, query.WithToolEffects(policy)) })
	searchRuns(t, tally.URL)
	now := time.Now().Truncate(time.Millisecond)
	tallytest.SendSafetyRun(t, tally.URL, now.Add(-20*time.Minute))
	outer := tallytest.Chat("outer", "root", "gpt-4o", 1000, 5000, "", 300, 20)
	outer.Name = "outer"
	inner := tallytest.Chat("inner", "outer", "gpt-4o", 1500, 4500, "", 300, 20)
	inner.Name = "inner"
	tallytest.SendSpans(t, tally.URL, "shop", now.Add(-10*time.Minute), []tallytest.Span{
		{Key: "root", Name: "wrapped", End: 6000}, outer, inner})

	// The configuration fingerprint of refunds, as /versions lists it.
	resp, err := http.Get(tally.URL + "/api/v1/versions?since=2h")
	if err != nil {
		t.Fatal(err)
	}
	var versions api.VersionsReport
	err = json.NewDecoder(resp.Body).Decode(&versions)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var fp string
	for _, task := range versions.Tasks {
		if task.Task == "refunds" && len(task.Versions) == 1 {
			fp = task.Versions[0].Fingerprint
		}
	}
	if fp == "" {
		t.Fatalf("no version of refunds: %+v", versions)
	}
	const cashier = "invoke_agent cashier"
	tests := []searchCase{
		{"irreversible steps", `{ effect = "irreversible" }`, []string{cashier}},
		{"reads that ended ambiguous", `{ effect = "read" && step = "ambiguous" }`, []string{cashier, "docs"}},
		{"unknown tools that succeeded", `{ effect = "unknown" && step = "ok" }`, []string{"research", "refunds"}},
		{"a step nobody declared", `{ step = "escalated" }`, nil},
		{"an effect is a tool step's", `{ effect = nil && name = "wrapped" }`, []string{"wrapped"}},
		{"a signal", `{ trace:signal = "unsafe_retry" }`, []string{cashier}},
		{"a signal by pattern", `{ trace:signal =~ "duplicate.*" }`, []string{cashier}},
		{"runs without that signal", `{ trace:signal != "unsafe_retry" && operation = "invoke_agent" }`, []string{"research", "docs", "refunds"}},
		{"runs without signals", `{ trace:signal = nil && span:parentID = "" }`, []string{"wrapped", "research", "docs", "refunds"}},
		// wrapped's one model is gpt-4o too: the same configuration.
		{"a version", `{ trace:version = "` + fp + `" && span:parentID = "" }`, []string{"wrapped", "research", "docs", "refunds"}},
		{"another version", `{ trace:version != "` + fp + `" && span:parentID = "" }`, []string{cashier}},
		{"the wrapped call counts", `{ name = "inner" && counted }`, []string{"wrapped"}},
		{"its wrapper does not", `{ name = "outer" && counted }`, nil},
		{"its wrapper, not counted", `{ name = "outer" && counted = false }`, []string{"wrapped"}},
		{"counted chats", `{ counted && name = "chat gpt-4o" }`, []string{"research", "docs", "refunds"}},
	}
	checkSearches(t, tally.URL, tests)
	// The matches are the steps themselves: the two charges.
	var page query.SearchPage
	if code, body := search(t, tally.URL, `{ effect = "irreversible" } | select(step)`, &page); code != http.StatusOK || len(page.Runs) != 1 {
		t.Fatalf("%d %s", code, body)
	}
	if m := page.Runs[0].Matches; len(m) != 2 || m[0].Name != "execute_tool charge_card" || m[1].Name != "execute_tool charge_card" {
		t.Fatalf("matches %+v", m)
	}
	// Autocomplete offers the vocabulary of a field computed per run.
	var values struct{ Values []query.SearchValue }
	if code := getJSON(t, tally.URL+"/api/v1/search/values?since=2h&key=step", &values); code != http.StatusOK {
		t.Fatalf("values: %d", code)
	}
	var want []query.SearchValue
	for _, v := range []string{"ok", "retryable", "ambiguous", "denied", "escalated", "error"} { // docs/search.md's order
		want = append(want, query.SearchValue{Value: v})
	}
	if !slices.Equal(values.Values, want) {
		t.Fatalf("values of step: %+v, want %+v", values.Values, want)
	}
}

// TestSearchMatchesAndHighlights: a match lists the spans that matched,
// and a content match is highlighted where it is, folded case and all.
func TestSearchMatchesAndHighlights(t *testing.T) {
	tally := tallytest.Start(t)
	ids := searchRuns(t, tally.URL)
	var page query.SearchPage
	if code, body := search(t, tally.URL, `{ content contains "отменить заказ" }`, &page); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if len(page.Runs) != 1 || page.Runs[0].TraceID != ids["docs"] {
		t.Fatalf("runs %+v", page.Runs)
	}
	m := page.Runs[0].Matches
	if len(m) != 1 || m[0].Name != "chat gpt-4o" || len(m[0].Highlights) != 1 {
		t.Fatalf("matches %+v", m)
	}
	h := m[0].Highlights[0]
	if len(h.Ranges) != 1 || h.Text[h.Ranges[0][0]:h.Ranges[0][1]] != "ОТМЕНИТЬ ЗАКАЗ" {
		t.Fatalf("highlight %+v", h)
	}
	// select() adds the values of its fields to each matched span.
	page = query.SearchPage{}
	if code, body := search(t, tally.URL, `{ tool = "refund_payment" } | select(span.gen_ai.tool.name, duration)`, &page); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if len(page.Runs) != 2 || len(page.Runs[1].Matches) != 2 {
		t.Fatalf("runs %+v", page.Runs)
	}
	if v := page.Runs[1].Matches[0].Values; v["span.gen_ai.tool.name"] != "refund_payment" || v["duration"] != "1000000000" {
		t.Fatalf("values %v", v)
	}
}

// TestSearchPagesByCursor: a page full before its batch of candidate
// runs is goes on from its last run: the three runs of searchRuns, one a
// page, newest first.
func TestSearchPagesByCursor(t *testing.T) {
	tally := tallytest.Start(t)
	searchRuns(t, tally.URL)
	// A page full before its batch of candidates is: the cursor goes on
	// from its last run (the three runs fit in one batch of candidates).
	var seen []string
	cursor := ""
	for range 4 {
		var page query.SearchPage
		if code, body := searchWith(t, tally.URL, url.Values{"q": {`{ tool != nil }`}, "since": {"2h"}, "limit": {"1"}, "cursor": {cursor}}, &page); code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
		seen = append(seen, runNames(page)...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if want := []string{"research", "docs", "refunds"}; !slices.Equal(seen, want) {
		t.Fatalf("pages of one run found %v, want %v", seen, want)
	}
}

// TestSearchErrorsSayWhere: a query that does not parse or check is a 400
// naming the position of the offending text.
func TestSearchErrorsSayWhere(t *testing.T) {
	tally := tallytest.Start(t)
	for _, tc := range []struct {
		q    string
		pos  int
		text string
	}{
		{`{ status = }`, 11, "expected a field or a value"},
		{`{ duration > "slow" }`, 13, "duration"},
		{`{ span.x =~ "(" }`, 12, "regular expression"},
		{`{ tool = "a" } | count() >`, 26, "expected a field or a value"},
		{`{ effect = }`, 11, "expected a field or a value"},
	} {
		code, body := search(t, tally.URL, tc.q, nil)
		var e api.SearchError
		if err := json.Unmarshal(body, &e); err != nil || code != http.StatusBadRequest {
			t.Fatalf("%s: %d %s", tc.q, code, body)
		}
		if e.Position != tc.pos || !strings.Contains(e.Error, tc.text) {
			t.Errorf("%s: %+v, want position %d and %q", tc.q, e, tc.pos, tc.text)
		}
	}
	// POST takes the same query in a body.
	resp, err := http.Post(tally.URL+"/api/v1/search", "application/json", bytes.NewReader([]byte(`{"query":"{ status = error }","since":"1h"}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
}

// metrics asks GET /api/v1/search for a metrics query.
func metrics(t *testing.T, base, q, step string) query.MetricsAnswer {
	t.Helper()
	v := url.Values{"q": {q}, "since": {"2h"}}
	if step != "" {
		v.Set("step", step)
	}
	resp, err := http.Get(base + "/api/v1/search?" + v.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var a query.MetricsAnswer
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &a) != nil || a.Kind != "metrics" {
		t.Fatalf("%s: %d %s", q, resp.StatusCode, body)
	}
	return a
}

// seriesTotals is each series' labels and whole-window value, as text.
func seriesTotals(a query.MetricsAnswer) []string {
	var out []string
	for _, s := range a.Series {
		var labels []string
		for k, v := range s.Labels {
			labels = append(labels, k+"="+v)
		}
		slices.Sort(labels)
		out = append(out, strings.Join(labels, ",")+" "+strconv.FormatFloat(s.Total, 'g', 6, 64))
	}
	return out
}

// TestSearchMetrics: metrics queries answer series per step and a total
// per label set, worked out from searchRuns' data; a one-filter query is
// answered in SQL, the others in Go, and the two agree.
func TestSearchMetrics(t *testing.T) {
	tally := tallytest.Start(t)
	searchRuns(t, tally.URL)
	// Three refund_payment calls: two in refunds, one in research.
	a := metrics(t, tally.URL, `{ tool = "refund_payment" } | count_over_time() by (tool)`, "5m")
	if got := seriesTotals(a); !a.InSQL || !slices.Equal(got, []string{"tool=refund_payment 3"}) {
		t.Fatalf("count by tool: in SQL %v, %v", a.InSQL, got)
	}
	// refunds' two calls fall in one 5-minute step, research's in another.
	if pts := a.Series[0].Points; len(pts) != 2 || pts[0].V != 2 || pts[1].V != 1 || a.StepSeconds != 300 {
		t.Fatalf("points %+v step %v", pts, a.StepSeconds)
	}
	// web_search ran once, for 1 s: its p95 is 1 s.
	a = metrics(t, tally.URL, `{ tool = "web_search" } | quantile_over_time(duration, .95)`, "5m")
	if got := seriesTotals(a); !slices.Equal(got, []string{"p=0.95 1"}) || a.Unit != "s" {
		t.Fatalf("p95 of web_search: %v (%s)", got, a.Unit)
	}
	// Cost by model of the failed runs of task research: its chat read
	// 15 000 input tokens, 8 000 from the cache, and wrote 10 (gpt-4o:
	// $2.50/M input, $1.25/M cache reads, $10/M output):
	// 7 000·2.5e-6 + 8 000·1.25e-6 + 10·1e-5 = $0.0276. Its other spans
	// have no model and cost nothing.
	a = metrics(t, tally.URL, `{ trace:task = "research" && trace:status = error } | sum_over_time(cost) by (model)`, "")
	if got := seriesTotals(a); a.InSQL || !slices.Equal(got, []string{" 0", "model=gpt-4o 0.0276"}) || a.Unit != "USD" {
		t.Fatalf("cost by model: in SQL %v, %v", a.InSQL, got)
	}
	// A retry condition is decided in Go, so the query is evaluated over
	// the runs, not counted in SQL (where it narrows to tool spans only):
	// one retry (docs' second search_docs) of the six tool calls.
	a = metrics(t, tally.URL, `{ retry } | count_over_time()`, "")
	if got := seriesTotals(a); a.InSQL || !slices.Equal(got, []string{" 1"}) {
		t.Fatalf("retries: in SQL %v, %v", a.InSQL, got)
	}
	// The same question both ways. Durations by tool: refund_payment
	// 1, 2, 1 s; search_docs 1, 1.5 s; web_search 1 s. quantileExact
	// takes the sorted values' element ⌊q·n⌋: refund_payment's p50 is
	// [1 1 2][1] = 1, its p95 [1 1 2][2] = 2; search_docs' both [1 1.5][1].
	want := []string{"p=0.5,tool=refund_payment 1", "p=0.5,tool=search_docs 1.5", "p=0.5,tool=web_search 1",
		"p=0.95,tool=refund_payment 2", "p=0.95,tool=search_docs 1.5", "p=0.95,tool=web_search 1"}
	sql := metrics(t, tally.URL, `{ tool != nil } | quantile_over_time(duration, .5, .95) by (tool)`, "10m")
	goPath := metrics(t, tally.URL, `{ tool != nil } | coalesce() | quantile_over_time(duration, .5, .95) by (tool)`, "10m")
	if !sql.InSQL || goPath.InSQL {
		t.Fatalf("paths: %v %v", sql.InSQL, goPath.InSQL)
	}
	if a, b := seriesTotals(sql), seriesTotals(goPath); !slices.Equal(a, want) || !slices.Equal(b, want) {
		t.Fatalf("SQL %v\nGo  %v\nwant %v", a, b, want)
	}
	for i := range sql.Series {
		if !slices.Equal(sql.Series[i].Points, goPath.Series[i].Points) {
			t.Fatalf("series %v: SQL %v, Go %v", sql.Series[i].Labels, sql.Series[i].Points, goPath.Series[i].Points)
		}
	}
}

// TestSearchAutocomplete: the keys of the window's spans and a field's
// top values, counted by hand from searchRuns' data.
func TestSearchAutocomplete(t *testing.T) {
	tally := tallytest.Start(t)
	searchRuns(t, tally.URL)
	var keys struct{ Keys []query.SearchKey }
	if code := getJSON(t, tally.URL+"/api/v1/search/keys?since=2h", &keys); code != http.StatusOK {
		t.Fatalf("keys: %d", code)
	}
	found := map[string]query.SearchKey{}
	for _, k := range keys.Keys {
		found[k.Key] = k
	}
	// Three chats sent a temperature; the span's gen_ai.tool.name went to
	// a column, but the key is still offered as sent (once per tool span).
	for key, spans := range map[string]uint64{"span.gen_ai.request.temperature": 3, "resource.service.name": 12, "span.gen_ai.usage.input_tokens": 3} {
		if found[key].Spans != spans {
			t.Errorf("key %s: %+v, want %d spans", key, found[key], spans)
		}
	}
	if k := found["trace:cost"]; k.Type != "number" || k.Doc == "" {
		t.Errorf("intrinsic trace:cost: %+v", k)
	}
	var values struct{ Values []query.SearchValue }
	if code := getJSON(t, tally.URL+"/api/v1/search/values?since=2h&key=tool", &values); code != http.StatusOK {
		t.Fatalf("values: %d", code)
	}
	want := []query.SearchValue{{Value: "refund_payment", Spans: 3}, {Value: "search_docs", Spans: 2}, {Value: "web_search", Spans: 1}}
	if !slices.Equal(values.Values, want) {
		t.Errorf("values of tool: %+v, want %+v", values.Values, want)
	}
	if code := getJSON(t, tally.URL+"/api/v1/search/values?since=2h&key=span.gen_ai.request.temperature", &values); code != http.StatusOK ||
		len(values.Values) != 3 || values.Values[0].Spans != 1 {
		t.Errorf("values of the temperature: %d %+v", code, values.Values)
	}
	if code := getJSON(t, tally.URL+"/api/v1/search/values?since=2h&key=nope", nil); code != http.StatusBadRequest {
		t.Errorf("values of nope: %d, want 400", code)
	}
}

// TestSearchByOutcome: trace:outcome.<name> reads the outcomes posted
// to runs: a verdict, a label or a score.
func TestSearchByOutcome(t *testing.T) {
	tally := tallytest.Start(t)
	ids := searchRuns(t, tally.URL)
	post := func(id, body string) {
		t.Helper()
		resp, err := http.Post(tally.URL+"/api/v1/runs/"+id+"/outcomes", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
			t.Fatalf("post outcome: %d %s", resp.StatusCode, b)
		}
	}
	post(ids["refunds"], `{"name":"resolved","passed":false,"score":0.2}`)
	post(ids["docs"], `{"name":"resolved","label":"correct","score":0.9}`)
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{`{ trace:outcome.resolved = "fail" }`, []string{"refunds"}},
		{`{ trace:outcome.resolved = "correct" }`, []string{"docs"}},
		{`{ trace:outcome.resolved = true }`, []string{"docs"}},
		{`{ trace:outcome.resolved > 0.5 }`, []string{"docs"}},
		{`{ trace:outcome.resolved = nil && operation = "invoke_agent" }`, []string{"research"}},
	} {
		var page query.SearchPage
		if code, body := search(t, tally.URL, tc.q, &page); code != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.q, code, body)
		}
		if got := runNames(page); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.q, got, tc.want)
		}
	}
}

// TestSavedQueries: a project saves queries by name, saving a name again
// replaces its query, deleting it removes it; a query that does not parse
// is not saved; another project sees none of them.
func TestSavedQueries(t *testing.T) {
	tally := tallytest.Start(t)
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, tally.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	list := func() []string {
		t.Helper()
		var got struct{ Saved []query.SavedQuery }
		if code := getJSON(t, tally.URL+"/api/v1/search/saved", &got); code != http.StatusOK {
			t.Fatalf("list: %d", code)
		}
		var out []string
		for _, s := range got.Saved {
			out = append(out, s.Name+": "+s.Query)
		}
		return out
	}
	for _, b := range []string{`{"name":"failed refunds","query":"{ tool = \"refund_payment\" && status = error }"}`,
		`{"name":"slow","query":"{ duration > 5s }"}`, `{"name":"slow","query":"{ duration > 10s }"}`} {
		if code, body := do(http.MethodPost, "/api/v1/search/saved", b); code != http.StatusOK {
			t.Fatalf("save %s: %d %s", b, code, body)
		}
	}
	if got, want := list(), []string{`failed refunds: { tool = "refund_payment" && status = error }`, "slow: { duration > 10s }"}; !slices.Equal(got, want) {
		t.Fatalf("saved %v, want %v", got, want)
	}
	if code, body := do(http.MethodPost, "/api/v1/search/saved", `{"name":"bad","query":"{ tool = }"}`); code != http.StatusBadRequest || !strings.Contains(body, `"position":9`) {
		t.Fatalf("a bad query saved: %d %s", code, body)
	}
	if code, _ := do(http.MethodPost, "/api/v1/search/saved", `{"name":"`+strings.Repeat("n", 101)+`","query":"{ }"}`); code != http.StatusBadRequest {
		t.Fatalf("a 101-byte name: %d, want 400", code)
	}
	if code, _ := do(http.MethodPost, "/api/v1/search/saved", `{"name":"`+strings.Repeat("n", 100)+`","query":"{ }"}`); code != http.StatusOK {
		t.Fatalf("a 100-byte name: %d, want 200", code)
	}
	if code, _ := do(http.MethodDelete, "/api/v1/search/saved/"+url.PathEscape(strings.Repeat("n", 100)), ""); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if code, _ := do(http.MethodDelete, "/api/v1/search/saved/slow", ""); code != http.StatusNoContent {
		t.Fatalf("delete slow: %d", code)
	}
	if code, _ := do(http.MethodDelete, "/api/v1/search/saved/slow", ""); code != http.StatusNotFound {
		t.Fatalf("delete slow again: %d, want 404", code)
	}
	if got, want := list(), []string{`failed refunds: { tool = "refund_payment" && status = error }`}; !slices.Equal(got, want) {
		t.Fatalf("saved %v, want %v", got, want)
	}
}

// TestSearchBounds: each bound of a search answers, at its edge: a
// statement over the rows limit is a 503 saying so; the examined-runs
// limit answers the page so far with a cursor that goes on; a window over
// the range limit and a query over the length limit are 400s.
func TestSearchBounds(t *testing.T) {
	tally := tallytest.Start(t, func(o *tallytest.Config) {
		o.API.SearchLimits = query.SearchLimits{MaxExamined: 1, MaxRange: 3 * time.Hour, Query: traceql.Limits{MaxLength: 40}}
	})
	searchRuns(t, tally.URL)
	// The three runs each have a tool span: one run examined a request.
	var seen []string
	cursor := ""
	for range 4 {
		var page query.SearchPage
		if code, body := searchWith(t, tally.URL, url.Values{"q": {`{ tool != nil }`}, "since": {"2h"}, "cursor": {cursor}}, &page); code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
		if page.Examined != 1 && page.NextCursor != "" {
			t.Fatalf("examined %d runs, want 1", page.Examined)
		}
		seen = append(seen, runNames(page)...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
		if !page.Partial {
			t.Fatalf("a page stopped by the limit is not marked partial: %+v", page)
		}
	}
	if want := []string{"research", "docs", "refunds"}; !slices.Equal(seen, want) {
		t.Fatalf("pages found %v, want %v", seen, want)
	}
	for _, tc := range []struct {
		q, since string
		code     int
		want     string
	}{
		{`{ tool != nil }`, "3h", http.StatusOK, ""},
		{`{ tool != nil }`, "3h1m", http.StatusBadRequest, "longer than the limit of 3h0m0s"},
		{`{ name = "` + strings.Repeat("x", 27) + `" }`, "1h", http.StatusOK, ""}, // 40 bytes
		{`{ name = "` + strings.Repeat("x", 28) + `" }`, "1h", http.StatusBadRequest, "over the limit of 40"},
	} {
		code, body := searchSince(t, tally.URL, tc.q, tc.since)
		if code != tc.code || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s since %s: %d %s, want %d %q", tc.q, tc.since, code, body, tc.code, tc.want)
		}
	}

	rows := tallytest.Start(t, func(o *tallytest.Config) { o.API.SearchLimits = query.SearchLimits{MaxRowsToRead: 1} })
	searchRuns(t, rows.URL)
	if code, body := searchSince(t, rows.URL, `{ tool != nil }`, "2h"); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "--search-max-rows") {
		t.Fatalf("over the rows limit: %d %s", code, body)
	}
}

// searchSince asks GET /api/v1/search over since and returns the status
// and body.
func searchSince(t *testing.T, base, q, since string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/search?" + url.Values{"q": {q}, "since": {since}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}
