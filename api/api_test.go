package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/query"
)

// rangeRouter serves the whole API over fake, as the server mounts it.
func rangeRouter(t *testing.T, fake any, maxRange time.Duration, log *slog.Logger) *gin.Engine {
	t.Helper()
	gin.SetMode(gin.TestMode)
	r := gin.New()
	h := New(over(fake, Options{MaxQueryRange: maxRange, Logger: log}))
	h.now = func() time.Time { return time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC) }
	h.Register(r.Group("/api/v1", authenticated))
	return r
}

func TestQueryRangeIsBounded(t *testing.T) {
	tests := []struct {
		name     string
		maxRange time.Duration // 0: the default
		url      string
		code     int
	}{
		{"default range", 0, "/api/v1/costs", http.StatusOK},
		{"400 days", 0, "/api/v1/costs?since=400d", http.StatusOK},
		{"400 days and a second", 0, "/api/v1/costs?since=400d&until=2026-01-10T12:00:01Z", http.StatusBadRequest},
		{"401 days", 0, "/api/v1/costs?since=401d", http.StatusBadRequest},
		{"2000 days", 0, "/api/v1/costs?since=2000d", http.StatusBadRequest},
		{"100000 days", 0, "/api/v1/costs?since=100000d", http.StatusBadRequest},
		{"1e308 days", 0, "/api/v1/costs?since=1e308d", http.StatusBadRequest},
		{"NaN days", 0, "/api/v1/costs?since=NaNd", http.StatusBadRequest},
		{"Inf days", 0, "/api/v1/costs?since=Infd", http.StatusBadRequest},
		{"until year 9999", 0, "/api/v1/costs?until=9999-12-31T23:59:59Z", http.StatusBadRequest},
		{"absolute range at the limit", 0,
			"/api/v1/costs?since=2025-01-01T00:00:00Z&until=2026-02-05T00:00:00Z", http.StatusOK},
		{"absolute range a second over", 0,
			"/api/v1/costs?since=2025-01-01T00:00:00Z&until=2026-02-05T00:00:01Z", http.StatusBadRequest},
		{"future until stretches the range", 0, "/api/v1/costs?since=1d&until=2027-06-01T00:00:00Z", http.StatusBadRequest},
		{"runs", 0, "/api/v1/runs?since=2000d", http.StatusBadRequest},
		{"cache", 0, "/api/v1/cache?since=2000d", http.StatusBadRequest},
		{"tools", 0, "/api/v1/tools?since=2000d", http.StatusBadRequest},
		{"configured 10 days", 10 * 24 * time.Hour, "/api/v1/costs?since=10d", http.StatusOK},
		{"configured 10 days, 11 asked", 10 * 24 * time.Hour, "/api/v1/costs?since=11d", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rangeRouter(t, &fakeCosts{}, tt.maxRange, nil)
			w := serve(r, tt.url)
			if w.Code != tt.code {
				t.Fatalf("%s: %d %s, want %d", tt.url, w.Code, w.Body, tt.code)
			}
		})
	}
}

// failingRuns fails every read with a database error naming internals.
type failingRuns struct{ fakeCosts }

var errDatabase = errors.New("code: 60, message: Table tally.spans_secret does not exist")

func (failingRuns) Runs(context.Context, query.RunFilter) (query.RunPage, error) {
	return query.RunPage{}, errDatabase
}

func (failingRuns) RunTree(context.Context, string, string, query.TreeOptions) (*query.RunDetail, error) {
	return nil, errDatabase
}

func (failingRuns) Costs(context.Context, query.CostFilter) (query.CostReport, error) {
	return query.CostReport{}, errDatabase
}

func TestInternalErrorsDoNotLeak(t *testing.T) {
	tests := []struct{ name, url string }{
		{"runs", "/api/v1/runs"},
		{"run", "/api/v1/runs/0123456789abcdef0123456789abcdef"},
		{"costs", "/api/v1/costs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logged bytes.Buffer
			r := rangeRouter(t, &failingRuns{}, 0, slog.New(slog.NewTextHandler(&logged, nil)))
			w := serve(r, tt.url)
			if w.Code != http.StatusInternalServerError {
				t.Fatalf("%d %s, want 500", w.Code, w.Body)
			}
			var e Error
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(e.Error, "spans_secret") || strings.Contains(e.Error, "code: 60") {
				t.Errorf("answer %q carries the database error", e.Error)
			}
			id := w.Header().Get("X-Request-Id")
			if id == "" || !strings.Contains(e.Error, id) {
				t.Errorf("answer %q, X-Request-Id %q: want the request id in both", e.Error, id)
			}
			if !strings.Contains(logged.String(), "spans_secret") || !strings.Contains(logged.String(), id) {
				t.Errorf("log %q: want the cause and the request id", logged.String())
			}
		})
	}
}

// over returns o with every capability the fake implements: a test
// double stands for several readers at once.
func over(fake any, o Options) Options {
	o.Runs, _ = fake.(RunLister)
	o.Trees, _ = fake.(TreeReader)
	if t, ok := fake.(treeOnly); ok && o.Trees == nil {
		o.Trees = noChildren{t}
	}
	o.Traces, _ = fake.(TraceResolver)
	o.Content, _ = fake.(ContentReader)
	o.Chat, _ = fake.(ChatReader)
	o.Conversations, _ = fake.(Conversations)
	o.Costs, _ = fake.(Costs)
	o.Tools, _ = fake.(ToolStatsReader)
	o.Signals, _ = fake.(SignalReader)
	o.Caps, _ = fake.(CapsReader)
	o.Outcomes, _ = fake.(Outcomes)
	o.Fixtures, _ = fake.(Fixtures)
	return o
}

// treeOnly is a fake that reads run trees and no span children.
type treeOnly interface {
	RunTree(ctx context.Context, project, traceID string, o query.TreeOptions) (*query.RunDetail, error)
}

// noChildren completes a treeOnly fake as a TreeReader: no span has
// children to read.
type noChildren struct{ treeOnly }

func (noChildren) Children(context.Context, string, string, string, query.ChildrenOptions) (*query.ChildrenPart, error) {
	return nil, query.ErrNotFound
}
