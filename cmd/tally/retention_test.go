package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/retention"
	"github.com/tallyhq/tally/schema"
)

// TestRetentionCLI: a span 40 days old under --retention 30d: tally
// retention shows what is kept and that the next
// run drops the 40-day-old partition of spans, 1 row; a read from 60
// days back carries the Tally-Retention header, one from 10 days back
// does not.
func TestRetentionCLI(t *testing.T) {
	policy := retention.Policy{Spans: 30 * 24 * time.Hour, Content: 7 * 24 * time.Hour, Rollups: 400 * 24 * time.Hour}
	var job *retention.Job
	tally := tallytest.Start(t, func(o *tallytest.Config) {
		var err error
		if job, err = retention.NewJob(o.Store, retention.Config{Policy: policy}); err != nil {
			t.Fatal(err)
		}
		o.API.Storage = &retention.Storage{Job: job}
		o.API.KeptFrom = policy.KeptFrom
	})
	start := time.Now().UTC().Add(-40 * 24 * time.Hour).Truncate(time.Second)
	if err := tally.Store.InsertSpans(context.Background(), []schema.Span{{Project: "default", TraceID: strings.Repeat("ab", 16),
		SpanID: strings.Repeat("cd", 8), Start: start, StartNs: uint64(start.UnixNano()), EndNs: uint64(start.UnixNano()) + 1e6,
		DurationNs: 1e6, Name: "old", SpanType: schema.TypeOther}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runCLI(context.Background(), &out, "retention", "--server", tally.URL); err != nil {
		t.Fatalf("retention: %v\n%s", err, out.String())
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{"Kept: spans 30d, content 7d, rollups 400d", "NEXT RUN TABLE WHAT ROWS ON DISK",
		"drop spans partition " + start.Format("20060102") + " 1 "} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	for since, want := range map[string]bool{"60d": true, "10d": false} {
		resp, err := http.Get(tally.URL + "/api/v1/runs?since=" + since)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get(api.RetentionHeader) != ""; got != want || resp.StatusCode != http.StatusOK {
			t.Errorf("since=%s: %d, header %q, want present %v", since, resp.StatusCode, resp.Header.Get(api.RetentionHeader), want)
		}
	}
	// The run drops it; the next has nothing to do.
	if rep, err := job.RunOnce(context.Background()); err != nil || rep.Dropped < 1 {
		t.Fatalf("run: %+v %v", rep, err)
	}
	out.Reset()
	if err := runCLI(context.Background(), &out, "retention", "--server", tally.URL); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Next run: nothing to drop") || !strings.Contains(out.String(), "Last run ") {
		t.Errorf("after the run:\n%s", out.String())
	}
}
