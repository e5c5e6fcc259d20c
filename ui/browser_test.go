package ui_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/tools/demo"
	"github.com/tallyhq/tally/ui"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// startTally runs a whole tally on the test ClickHouse with the UI mounted
// exactly as tally serve mounts it.
func startTally(t testing.TB) *tallytest.Instance {
	t.Helper()
	return tallytest.Start(t, func(o *tallytest.Config) {
		o.Server.UI = ui.Handler(ui.WithRuns(query.NewReader(o.Store), api.RequestProject))
	})
}

// newBrowser starts headless Chromium for the test (a fresh profile, no
// network besides tally) at a 1280 × 900 window. When the test fails, a
// full-page screenshot goes to artifacts/ui/<test>.png.
func newBrowser(t testing.TB) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(testenv.ChromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.Headless,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium makes its singleton socket's directory under TMPDIR
		// and leaves it behind when it is stopped: keep it in the test's.
		chromedp.Env("TMPDIR=" + t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			screenshot(t, ctx, "")
		}
		cancel()
		cancelAlloc()
	})
	return ctx
}

// screenshot writes a full-page PNG to artifacts/ui/<test><suffix>.png.
func screenshot(t testing.TB, ctx context.Context, suffix string) {
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	dir, err := artifactsDir()
	if err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + suffix + ".png"
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// artifactsDir is <module root>/artifacts/ui, created when missing.
func artifactsDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
	out := filepath.Join(dir, "artifacts", "ui")
	return out, os.MkdirAll(out, 0o755)
}

// run runs one browser action with a bound, failing the test on error.
func run[T any](t testing.TB, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	actx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	v, err := chromedp.Run(actx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// open navigates to url and waits until the page script finished (data-ready).
func open(t testing.TB, ctx context.Context, url string) {
	t.Helper()
	run(t, ctx, "navigate "+url, chromedp.Steps(
		chromedp.Navigate(url),
		chromedp.WaitReady(chromedp.CSS("body[data-ready]")),
	))
}

// waitFor evaluates a JavaScript condition until it holds, across navigations.
func waitFor(t testing.TB, ctx context.Context, cond string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := chromedp.Run(ectx, chromedp.Evaluate[bool](cond))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: last error %v", cond, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The hand-computed cost of one run sent by tallytest.SendAgentRun:
//
//	claude-sonnet-4-5 ($3 in, $0.30 cache read, $15 out per M):
//	  200 × 3e-6 + 800 × 0.3e-6 + 100 × 15e-6 = 0.0006 + 0.00024 + 0.0015 = 0.00234
//	gpt-4o ($2.50 in, $1.25 cache read, $10 out per M):
//	  500 × 2.5e-6 + 1500 × 1.25e-6 + 200 × 10e-6 = 0.00125 + 0.001875 + 0.002 = 0.005125
//	total 0.00234 + 0.005125 = 0.007465
const runCostUSD = 0.007465

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// wfRow is one drawn waterfall row.
type wfRow struct {
	Name  string `json:"name"`
	Depth int    `json:"depth"`
	Type  string `json:"type"`
}

const readRows = `[...document.querySelectorAll('#wf-rows .wf-row')].map(r => ({
	name: r.querySelector('.name').textContent, depth: +r.dataset.depth, type: r.dataset.type}))`

func TestRunPageWaterfall(t *testing.T) {
	tally := startTally(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	id := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{RootAgent: "planner", SubAgent: "researcher", Conversation: "conv-1", Gzip: true, Base: base})
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/runs/"+id)
	run(t, ctx, "waterfall drawn", chromedp.WaitReady(chromedp.CSS("body[data-rendered]")))

	all := []wfRow{
		{"invoke_agent planner", 0, "agent"},
		{"chat claude-sonnet-4-5", 1, "inference"},
		{"execute_tool web_search", 1, "tool"},
		{"invoke_agent researcher", 1, "agent"},
		{"chat gpt-4o", 2, "inference"},
		{"execute_tool fetch_url", 2, "tool"},
	}
	if got := run(t, ctx, "read rows", chromedp.Evaluate[[]wfRow](readRows)); !reflect.DeepEqual(got, all) {
		t.Fatalf("waterfall rows\n got %+v\nwant %+v", got, all)
	}
	// The failed tool call is marked as an error.
	if n := run(t, ctx, "error marks", chromedp.Evaluate[int](`document.querySelectorAll('#wf-rows .wf-row.is-err .mark.err').length`)); n != 1 {
		t.Errorf("%d rows marked as errors, want 1 (fetch_url)", n)
	}
	if got := run(t, ctx, "run cost", chromedp.Evaluate[string](`document.getElementById('run-cost').dataset.usd`)); !nearString(got, runCostUSD) {
		t.Errorf("run cost %s, want %v", got, runCostUSD)
	}

	// Collapse the researcher with the mouse: its two children disappear.
	run(t, ctx, "collapse researcher", chromedp.Click(chromedp.CSS(`#wf-rows .wf-row[data-type="agent"][data-depth="1"] .tg`)))
	if got := run(t, ctx, "read rows", chromedp.Evaluate[[]wfRow](readRows)); !reflect.DeepEqual(got, all[:4]) {
		t.Fatalf("after collapsing the researcher\n got %+v\nwant %+v", got, all[:4])
	}
	// Expand it with the keyboard (the tree has focus on the researcher).
	run(t, ctx, "expand with →", chromedp.KeyEvent(kb.ArrowRight))
	if got := run(t, ctx, "read rows", chromedp.Evaluate[[]wfRow](readRows)); !reflect.DeepEqual(got, all) {
		t.Fatalf("after expanding with ArrowRight\n got %+v\nwant %+v", got, all)
	}
	// ← collapses again, ↑ moves to web_search, Enter selects it.
	run(t, ctx, "keys", chromedp.Steps(chromedp.KeyEvent(kb.ArrowLeft), chromedp.KeyEvent(kb.ArrowUp), chromedp.KeyEvent(kb.Enter)))
	if got := run(t, ctx, "read rows", chromedp.Evaluate[[]wfRow](readRows)); !reflect.DeepEqual(got, all[:4]) {
		t.Fatalf("after ArrowLeft\n got %+v\nwant %+v", got, all[:4])
	}
	name := run(t, ctx, "selected span", chromedp.Text(chromedp.CSS("#detail-name")))
	if name != "execute_tool web_search" {
		t.Errorf("keyboard selected %q, want execute_tool web_search", name)
	}

	// Selecting the tool span with the mouse shows its recorded arguments.
	run(t, ctx, "select planner", chromedp.Click(chromedp.CSS(`#wf-rows .wf-row[data-depth="0"] .name`)))
	run(t, ctx, "select web_search", chromedp.Click(chromedp.CSS(`#wf-rows .wf-row[data-type="tool"] .name`)))
	args := run(t, ctx, "tool arguments", chromedp.Text(chromedp.CSS(`#detail pre[data-kind="tool.arguments"]`)))
	var got map[string]any
	if err := json.Unmarshal([]byte(args), &got); err != nil {
		t.Fatalf("tool arguments %q: %v", args, err)
	}
	if want := map[string]any{"q": "otel", "limit": 3.0}; !reflect.DeepEqual(got, want) {
		t.Errorf("tool arguments %v, want %v", got, want)
	}
	if strings.Count(args, "\n") < 3 {
		t.Errorf("tool arguments not pretty-printed: %q", args)
	}
}

func nearString(s string, want float64) bool {
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		return false
	}
	return near(v, want)
}

func TestRunsListFilterByAgent(t *testing.T) {
	tally := startTally(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	research := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{RootAgent: "planner", SubAgent: "researcher", Conversation: "conv-a", Gzip: true, Base: base})
	code := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{RootAgent: "planner", SubAgent: "coder", Conversation: "conv-b", Gzip: true, Base: base.Add(10 * time.Second)})
	ctx := newBrowser(t)
	listed := func() []string {
		return run(t, ctx, "listed runs", chromedp.Evaluate[[]string](
			`[...document.querySelectorAll('#runs-table tbody tr')].map(r => r.dataset.traceId)`))
	}
	open(t, ctx, tally.URL+"/runs")
	if got, want := listed(), []string{code, research}; !reflect.DeepEqual(got, want) { // newest first
		t.Fatalf("unfiltered runs %v, want %v", got, want)
	}
	// Filter through the form, as a user would.
	run(t, ctx, "filter", chromedp.Steps(
		chromedp.SetValue(chromedp.CSS(`#filters input[name="agent"]`), "coder"),
		chromedp.Click(chromedp.CSS(`#filters button[type="submit"]`)),
	))
	waitFor(t, ctx, `location.search === '?agent=coder' && document.body.dataset.ready === '1'`)
	if got := listed(); !reflect.DeepEqual(got, []string{code}) {
		t.Errorf("runs with agent coder %v, want [%s]", got, code)
	}
	// The URL is shareable: loading it directly gives the same rows.
	open(t, ctx, tally.URL+"/runs?agent=researcher")
	if got := listed(); !reflect.DeepEqual(got, []string{research}) {
		t.Errorf("runs with agent researcher %v, want [%s]", got, research)
	}
	if v := run(t, ctx, "agent field", chromedp.Value(chromedp.CSS(`#filters input[name="agent"]`))); v != "researcher" {
		t.Errorf("agent field %q, want researcher", v)
	}
	// min_cost filters on each run's total (0.007465 each, see runCostUSD).
	open(t, ctx, tally.URL+"/runs?min_cost=0.007")
	if got := listed(); len(got) != 2 {
		t.Errorf("runs costing at least $0.007: %v, want both", got)
	}
	open(t, ctx, tally.URL+"/runs?min_cost=0.008")
	if got := listed(); len(got) != 0 {
		t.Errorf("runs costing at least $0.008: %v, want none", got)
	}
	// tool filters on the tools a run called: both runs call web_search and
	// fetch_url, neither vector_search. Through the form, then by URL (the
	// link an alert's generatorURL opens).
	open(t, ctx, tally.URL+"/runs")
	run(t, ctx, "filter by tool", chromedp.Steps(
		chromedp.SetValue(chromedp.CSS(`#filters input[name="tool"]`), "vector_search"),
		chromedp.Click(chromedp.CSS(`#filters button[type="submit"]`)),
	))
	waitFor(t, ctx, `location.search === '?tool=vector_search' && document.body.dataset.ready === '1'`)
	if got := listed(); len(got) != 0 {
		t.Errorf("runs that called vector_search: %v, want none", got)
	}
	open(t, ctx, tally.URL+"/runs?tool=fetch_url")
	if got, want := listed(), []string{code, research}; !reflect.DeepEqual(got, want) {
		t.Errorf("runs that called fetch_url: %v, want %v", got, want)
	}
	if v := run(t, ctx, "tool field", chromedp.Value(chromedp.CSS(`#filters input[name="tool"]`))); v != "fetch_url" {
		t.Errorf("tool field %q, want fetch_url", v)
	}
	// The conversation page lists its one run.
	open(t, ctx, tally.URL+"/conversations/conv-b")
	if got := run(t, ctx, "conversation runs", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#conv-runs tbody tr')].map(r => r.dataset.traceId)`)); !reflect.DeepEqual(got, []string{code}) {
		t.Errorf("conversation conv-b runs %v, want [%s]", got, code)
	}
}

func TestCostPageTotal(t *testing.T) {
	tally := startTally(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{RootAgent: "planner", SubAgent: "researcher", Conversation: "conv-1", Gzip: true, Base: base})
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{RootAgent: "planner", SubAgent: "coder", Conversation: "conv-2", Gzip: true, Base: base.Add(time.Minute)})
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/costs?since=3h")
	resp, err := http.Get(tally.URL + "/api/v1/costs?by=agent&since=3h")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		// This build has no cost reports: the page says so instead of failing.
		n := run(t, ctx, "unavailable notice", chromedp.Evaluate[int](`document.querySelectorAll('[data-unavailable]').length`))
		if n != 1 {
			t.Errorf("costs page without /api/v1/costs shows %d 'not available' notices, want 1", n)
		}
		return
	}
	// Two identical runs: 2 × 0.007465 = 0.01493.
	got := run(t, ctx, "total", chromedp.Evaluate[string](`document.getElementById('cost-total')?.dataset.usd ?? document.getElementById('costs').innerText`))
	if !nearString(got, 2*runCostUSD) {
		t.Errorf("cost page total %q, want %v", got, 2*runCostUSD)
	}
	if txt := run(t, ctx, "total text", chromedp.Text(chromedp.CSS("#cost-total"))); txt != "$0.0149" {
		t.Errorf("cost page total shown as %q, want $0.0149", txt)
	}
}

// Every page renders the demo's realistic traffic without an error; with
// UI_SCREENSHOTS=1 each page's screenshot is written to artifacts/ui.
func TestPagesRenderDemoData(t *testing.T) {
	tally := startTally(t)
	sum, err := demo.Send(context.Background(), demo.Config{Endpoint: tally.URL, Runs: 40, Seed: 7})
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	ctx := newBrowser(t)
	pages := []string{"/runs", "/runs/" + sum.TraceIDs[len(sum.TraceIDs)-1], "/conversations", "/costs", "/tools", "/cache", "/tasks", "/alerts", "/runs?status=error"}
	for i, p := range pages {
		open(t, ctx, tally.URL+p)
		if p == pages[1] {
			run(t, ctx, "select a span", chromedp.Click(chromedp.CSS(`#wf-rows .wf-row[data-type="tool"] .name`)))
			waitFor(t, ctx, `!document.querySelector('#detail-content .loading')`)
		}
		if p == "/cache" {
			checkCacheExamples(t, ctx, tally.URL)
		}
		alerts := run(t, ctx, "error notices", chromedp.Evaluate[[]string](`[...document.querySelectorAll('[role=alert]')].map(e => e.innerText)`))
		if len(alerts) > 0 {
			t.Errorf("%s shows errors: %q", p, alerts)
		}
		if os.Getenv("UI_SCREENSHOTS") != "" {
			screenshot(t, ctx, fmt.Sprintf("_%d", i))
		}
	}
}

// checkCacheExamples checks that the cache page links every never_hit
// group's example runs, as the API lists them, and that the demo's
// never-caching summarizer is one of those groups.
func checkCacheExamples(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/cache?since=24h")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep struct {
		Groups []struct {
			Agent, Model, Verdict string
			ExampleRunIDs         []string `json:"example_run_ids"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, g := range rep.Groups {
		if g.Verdict == "never_hit" {
			want[g.Agent+" "+g.Model] = g.ExampleRunIDs
		}
	}
	summarizer := false
	for k, ids := range want {
		summarizer = summarizer || strings.HasPrefix(k, "summarizer ")
		if len(ids) == 0 {
			t.Errorf("never_hit group %s lists no example runs", k)
		}
	}
	if !summarizer {
		t.Errorf("never_hit groups %v, want the summarizer among them", want)
	}
	got := run(t, ctx, "cache example links", chromedp.Evaluate[map[string][]string](`Object.fromEntries(
		[...document.querySelectorAll('#never-hit-examples li')].map(li => [li.dataset.agent + ' ' + li.dataset.model,
			[...li.querySelectorAll('a[href^="/runs/"]')].map(a => a.dataset.traceId)]))`))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cache page example links %v, want the API's %v", got, want)
	}
}

// TestCostPageGroupsByCatalogModel: the agent run's Claude calls answer as
// claude-sonnet-4-5-20250929; the model table shows the catalog model with
// the raw name beneath it, linking to that name's runs.
func TestCostPageGroupsByCatalogModel(t *testing.T) {
	tally := startTally(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Gzip: true, Base: base})
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/costs?since=3h")
	waitFor(t, ctx, `!!document.querySelector('#cost-by-model .raw-models')`)
	row := run(t, ctx, "model row", chromedp.Evaluate[string](`[...document.querySelectorAll('#cost-by-model tbody tr')].map(r => r.querySelector('th, td').innerText).find(t => t.startsWith('claude-sonnet-4-5')) || ''`))
	if !strings.Contains(row, "claude-sonnet-4-5") || !strings.Contains(row, "claude-sonnet-4-5-20250929") {
		t.Errorf("model cell %q: want claude-sonnet-4-5 with claude-sonnet-4-5-20250929 beneath", row)
	}
	href := run(t, ctx, "raw model link", chromedp.Evaluate[string](`document.querySelector('#cost-by-model .raw-models a')?.getAttribute('href') || ''`))
	if href != "/runs?model=claude-sonnet-4-5-20250929" {
		t.Errorf("raw model link %q", href)
	}
}
