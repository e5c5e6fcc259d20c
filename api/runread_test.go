package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/query"
)

// blockingRuns answers a run read only when released, and records the span
// bound each read was given.
type blockingRuns struct {
	fakeCosts
	started chan int
	release chan struct{}
}

func (b *blockingRuns) RunTree(ctx context.Context, _, traceID string, o query.TreeOptions) (*query.RunDetail, error) {
	b.started <- o.MaxNodes
	<-b.release
	return &query.RunDetail{Summary: query.RunSummary{TraceID: traceID}}, nil
}

// TestRunReadsAreBounded: each run read is given the node bound, and past
// MaxConcurrent reads at once a request waits, then gets 503 with
// Retry-After instead of piling more runs into memory.
func TestRunReadsAreBounded(t *testing.T) {
	gin.SetMode(gin.TestMode)
	runs := &blockingRuns{started: make(chan int, 4), release: make(chan struct{})}
	h := New(over(runs, Options{RunReads: RunReadLimits{MaxRunSpans: 500, MaxConcurrent: 1, Wait: 50 * time.Millisecond}}))
	r := gin.New()
	h.Register(r.Group("/api/v1", authenticated))
	url := "/api/v1/runs/0123456789abcdef0123456789abcdef"

	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- serve(r, url) }()
	if got := <-runs.started; got != 500 {
		t.Errorf("read bound %d spans, want 500", got)
	}
	w := serve(r, url) // the only slot is taken
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("second read: %d (Retry-After %q), want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	close(runs.release)
	if w := <-first; w.Code != http.StatusOK {
		t.Errorf("first read: %d %s", w.Code, w.Body)
	}
	// The slot is free again.
	if w := serve(r, url); w.Code != http.StatusOK {
		t.Errorf("third read: %d %s", w.Code, w.Body)
	}
}
