package alerts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// scrape serves reg's /metrics over HTTP, fetches it and parses the text
// exposition format.
func scrape(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// metricValue is the value of the series of family name whose labels
// include want; it fails when there is no such series.
func metricValue(t *testing.T, families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	mf := families[name]
	if mf == nil {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no series %s%v", name, want)
	return 0
}

func TestMetrics(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	T := time.Date(2026, 11, 4, 8, 0, 0, 0, time.UTC)
	var rows []schema.Span
	// Tool a: 10 calls lasting 100, 200, …, 1000 ms at T-10m+i·2s, the first
	// 2 retried. Tools b (5 calls) and c (3 calls).
	for i := range 10 {
		s := toolSpan("a", fmt.Sprintf("a%d", i), T.Add(-10*time.Minute+time.Duration(i)*2*time.Second), time.Duration(i+1)*100*time.Millisecond)
		if i < 2 {
			s.Attempt = 2
		}
		rows = append(rows, s)
	}
	rows = append(rows, callsWithRetries("b", "b", 5, 0, T.Add(-10*time.Minute))...)
	rows = append(rows, callsWithRetries("c", "c", 3, 0, T.Add(-10*time.Minute))...)
	// Agent summ on model m1: 4 inference calls of 1 s, 100 cache-read
	// tokens and 0.25 USD each.
	for i := range 4 {
		s := toolSpan("", fmt.Sprintf("i%d", i), T.Add(-9*time.Minute+time.Duration(i)*time.Second), time.Second)
		s.SpanType, s.AgentName, s.Model = schema.TypeInference, "summ", "m1"
		s.UsageMode, s.InputTokens, s.CacheReadTokens, s.CostTotal = schema.UsageInclusive, 1000, 100, 0.25
		rows = append(rows, s)
	}
	if err := store.InsertSpans(ctx, rows); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	clk := &clock{T}
	ev := startEvaluator(t, alerts.Config{
		Rules:  mustRules(t, "rules:\n  - {name: R, kind: tool_retry_rate}\n"),
		Source: query.NewReader(store), Registerer: reg, Now: clk.now,
	})
	x, err := alerts.NewExporter(alerts.ExporterConfig{Source: query.NewReader(store), Registerer: reg, MaxLabelValues: 2, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	refresh := func() {
		t.Helper()
		evaluate(t, ev)
		if err := x.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	refresh()
	// A second refresh a minute later sees the same spans: counters must
	// not count them again.
	clk.t = T.Add(time.Minute)
	refresh()

	f := scrape(t, reg)
	pa := map[string]string{"project": "p", "tool": "a"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"tally_tool_calls_total", pa, 10},
		{"tally_tool_retries_total", pa, 2},
		{"tally_tool_errors_total", pa, 0},
		{"tally_tool_retry_ratio", pa, 0.2}, // 2 / 10
		{"tally_tool_calls_total", map[string]string{"tool": "b"}, 5},
		// The cap is 2 tool names: c (3 calls) is counted as __other__, and
		// the overflow counted once.
		{"tally_tool_calls_total", map[string]string{"tool": alerts.OtherLabel}, 3},
		{"tally_metric_label_overflow_total", map[string]string{"label": "tool"}, 1},
		// Sorted durations 100…1000 ms: p50 is position ⌊0.5·10⌋ = 5 → 600 ms,
		// p95 position 9 → 1000 ms.
		{"tally_tool_latency_seconds", map[string]string{"tool": "a", "quantile": "0.5"}, 0.6},
		{"tally_tool_latency_seconds", map[string]string{"tool": "a", "quantile": "0.95"}, 1.0},
		{"tally_model_latency_seconds", map[string]string{"model": "m1", "quantile": "0.95"}, 1.0},
		{"tally_cache_read_tokens_total", map[string]string{"agent": "summ", "model": "m1"}, 400}, // 4 × 100
		{"tally_cost_usd_total", map[string]string{"agent": "summ", "model": "m1"}, 1.0},          // 4 × 0.25
		{"tally_alert_evaluation_duration_seconds", nil, 2},                                       // 2 evaluations
	} {
		if got := metricValue(t, f, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// No latency gauge for the overflowed tool.
	for _, m := range f["tally_tool_latency_seconds"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "tool" && l.GetValue() == alerts.OtherLabel {
				t.Errorf("latency gauge for %s", alerts.OtherLabel)
			}
		}
	}

	// Late spans of an already counted minute are added once.
	if err := store.InsertSpans(ctx, callsWithRetries("a", "late", 5, 5, T.Add(-10*time.Minute+time.Second))); err != nil {
		t.Fatal(err)
	}
	clk.t = T.Add(2 * time.Minute)
	refresh()
	f = scrape(t, reg)
	if got := metricValue(t, f, "tally_tool_calls_total", pa); got != 15 {
		t.Errorf("calls after late spans = %v, want 10 + 5", got)
	}
	if got := metricValue(t, f, "tally_tool_retries_total", pa); got != 7 {
		t.Errorf("retries after late spans = %v, want 2 + 5", got)
	}
}

// failingThenOK answers 503 to the first failures requests, then records
// bodies and answers 200.
type failingThenOK struct {
	mu       sync.Mutex
	failures int
	requests int
	bodies   []alerts.WebhookPayload
}

func (f *failingThenOK) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if f.requests <= f.failures {
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	var p alerts.WebhookPayload
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.bodies = append(f.bodies, p)
}

func TestWebhookRetriesFailedDeliveries(t *testing.T) {
	store := openStore(t)
	T := time.Date(2026, 11, 5, 8, 0, 0, 0, time.UTC)
	if err := store.InsertSpans(context.Background(), callsWithRetries("flaky", "f", 100, 11, T.Add(-5*time.Minute))); err != nil {
		t.Fatal(err)
	}
	hook := &failingThenOK{failures: 2}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	reg := prometheus.NewRegistry()
	ev := startEvaluator(t, alerts.Config{
		Rules:  mustRules(t, "rules:\n  - {name: R, kind: tool_retry_rate}\n"),
		Source: query.NewReader(store), Registerer: reg, Now: func() time.Time { return T },
		Targets: []alerts.Target{alerts.NewWebhook(srv.URL, nil)}, RetryBackoff: 10 * time.Millisecond,
	})
	evaluate(t, ev)
	deadline := time.Now().Add(10 * time.Second)
	for {
		hook.mu.Lock()
		n := len(hook.bodies)
		hook.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("webhook never received the alert")
		}
		time.Sleep(20 * time.Millisecond)
	}
	hook.mu.Lock()
	body := hook.bodies[0]
	hook.mu.Unlock()
	if body.Source != "tally" || len(body.Alerts) != 1 {
		t.Fatalf("payload %+v", body)
	}
	a := body.Alerts[0]
	if a.Status != alerts.StateFiring || a.Labels["tool"] != "flaky" || a.Value != 0.11 || a.Threshold != 0.10 || a.Samples != 100 {
		t.Errorf("alert %+v", a)
	}
	f := scrape(t, reg)
	target := map[string]string{"target": srv.URL}
	if got := metricValue(t, f, "tally_alert_notification_failures_total", target); got != 2 {
		t.Errorf("failures %v, want 2", got)
	}
	if got := metricValue(t, f, "tally_alert_notifications_total", target); got != 1 {
		t.Errorf("delivered %v, want 1", got)
	}
}

// amWebhook is the body Alertmanager's webhook receiver posts.
type amWebhook struct {
	Status string `json:"status"`
	Alerts []struct {
		Status       string            `json:"status"`
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		StartsAt     time.Time         `json:"startsAt"`
		EndsAt       time.Time         `json:"endsAt"`
		GeneratorURL string            `json:"generatorURL"`
	} `json:"alerts"`
}

// amReceiver starts a webhook receiver for a real Alertmanager's
// notifications: its URL, and what it has received so far.
func amReceiver(t *testing.T) (url string, received func() []amWebhook) {
	t.Helper()
	var mu sync.Mutex
	var got []amWebhook
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m amWebhook
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []amWebhook {
		mu.Lock()
		defer mu.Unlock()
		return append([]amWebhook(nil), got...)
	}
}

func TestAlertmanagerEndToEnd(t *testing.T) {
	ctx := context.Background()
	hookURL, received := amReceiver(t)
	amURL := testenv.StartAlertmanager(t, testenv.AlertmanagerOptions{WebhookURL: hookURL})

	// Alertmanager judges endsAt by its own clock, so this test runs on the
	// real clock: spans from 5 minutes ago.
	store := openStore(t)
	start := time.Now().UTC().Add(-5 * time.Minute)
	if err := store.InsertSpans(ctx, callsWithRetries("fetch_url", "f", 100, 11, start)); err != nil {
		t.Fatal(err)
	}
	rules := mustRules(t, `
rules:
  - name: TallyToolRetryRateHigh
    kind: tool_retry_rate
    severity: page
    labels: {team: agents}
    runbook_url: https://runbooks.example/retries
`)
	ev := startEvaluator(t, alerts.Config{Rules: rules, Source: query.NewReader(store),
		Targets: []alerts.Target{alerts.NewAlertmanager(amURL, nil)}, ExternalURL: "http://tally.example",
		ResendInterval: time.Second, Projects: []string{"p"}})

	waitFor := func(what string, cond func([]amWebhook) bool) []amWebhook {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := received()
			if cond(got) {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; received %+v", what, got)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	count := func(got []amWebhook, status string) int {
		n := 0
		for _, m := range got {
			for _, a := range m.Alerts {
				if a.Status == status && a.Labels["alertname"] == "TallyToolRetryRateHigh" {
					n++
				}
			}
		}
		return n
	}

	evaluate(t, ev)
	got := waitFor("the firing notification", func(g []amWebhook) bool { return count(g, "firing") > 0 })
	a := got[0].Alerts[0]
	want := map[string]string{"alertname": "TallyToolRetryRateHigh", "project": "p", "tool": "fetch_url",
		"severity": "page", "team": "agents"}
	if !reflect.DeepEqual(a.Labels, want) {
		t.Errorf("labels %v, want %v", a.Labels, want)
	}
	if s := a.Annotations["summary"]; s != "tool fetch_url retry rate 11.0% > 10.0% (11 of 100 calls retried in 15m)" {
		t.Errorf("summary %q", s)
	}
	if a.Annotations["runbook_url"] != "https://runbooks.example/retries" || a.Annotations["description"] == "" ||
		!strings.HasPrefix(a.Annotations["example_runs"], fmt.Sprintf("%032s", "f10")) {
		t.Errorf("annotations %v", a.Annotations)
	}
	if u, err := url.Parse(a.GeneratorURL); err != nil || u.Host != "tally.example" || u.Path != "/runs" || u.Query().Get("tool") != "fetch_url" {
		t.Errorf("generatorURL %q", a.GeneratorURL)
	}

	// Re-send (the resend interval is 1 s): Alertmanager updates the alert's
	// endsAt and must not notify again.
	firstEnds := alertEndsAt(t, amURL)
	time.Sleep(1100 * time.Millisecond)
	evaluate(t, ev)
	deadline := time.Now().Add(20 * time.Second)
	for !alertEndsAt(t, amURL).After(firstEnds) {
		if time.Now().After(deadline) {
			t.Fatal("Alertmanager never received the re-sent alert")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Give Alertmanager three group intervals (1 s each) to notify anything.
	time.Sleep(3 * time.Second)

	// The rate drops to 11 of 200 = 5.5%: resolved.
	if err := store.InsertSpans(ctx, callsWithRetries("fetch_url", "g", 100, 0, start.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	evaluate(t, ev)
	got = waitFor("the resolution", func(g []amWebhook) bool { return count(g, "resolved") > 0 })
	if n := count(got, "firing"); n != 1 {
		t.Errorf("%d firing notifications for one incident, want 1", n)
	}
	if n := count(got, "resolved"); n != 1 {
		t.Errorf("%d resolved notifications, want 1", n)
	}
	last := got[len(got)-1].Alerts[0]
	if !reflect.DeepEqual(last.Labels, want) || !last.StartsAt.Equal(a.StartsAt) {
		t.Errorf("resolved alert %+v, want labels %v and startsAt %v", last, want, a.StartsAt)
	}
}

// alertEndsAt reads the endsAt of the one alert Alertmanager holds.
func alertEndsAt(t *testing.T, amURL string) time.Time {
	t.Helper()
	resp, err := http.Get(amURL + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct {
		EndsAt time.Time `json:"endsAt"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("Alertmanager holds %d alerts, want 1", len(list))
	}
	return list[0].EndsAt
}
