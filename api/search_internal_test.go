package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/query"
)

// boundedSearch answers every search with a ClickHouse exception of code:
// the bounds ClickHouse enforces for a search (max_rows_to_read,
// max_execution_time, the memory limit) cannot be reached on demand by a
// test's small data in the time a test has, so their answers are checked
// against the exceptions ClickHouse raises for them.
type boundedSearch struct{ code int32 }

func (b boundedSearch) Search(context.Context, query.SearchRequest) (query.SearchPage, error) {
	return query.SearchPage{}, &clickhouse.Exception{Code: b.code, Message: "bound hit"}
}

func (b boundedSearch) SearchMetrics(context.Context, query.SearchRequest, time.Duration) (query.MetricsResult, error) {
	return query.MetricsResult{}, &clickhouse.Exception{Code: b.code, Message: "bound hit"}
}

func (boundedSearch) SearchKeys(context.Context, string, time.Time, time.Time, query.SearchLimits) ([]query.SearchKey, error) {
	return nil, nil
}

func (boundedSearch) SearchValues(context.Context, string, string, time.Time, time.Time, query.SearchLimits) ([]query.SearchValue, error) {
	return nil, nil
}

// TestSearchBoundsAnswer503: a statement stopped by a bound is a 503
// naming the bound, for a search and for a metrics query alike; another
// ClickHouse error is a 500.
func TestSearchBoundsAnswer503(t *testing.T) {
	for _, tc := range []struct {
		code int32
		want int
		says string
	}{
		{chTooManyRows, http.StatusServiceUnavailable, "--search-max-rows"},
		{chTooManyRowsBytes, http.StatusServiceUnavailable, "--search-max-rows"},
		{chTimeoutExceeded, http.StatusServiceUnavailable, "--search-max-time"},
		{241, http.StatusServiceUnavailable, "more memory"}, // MEMORY_LIMIT_EXCEEDED
		{60, http.StatusInternalServerError, "internal error"},
	} {
		for _, q := range []string{"{ }", "{ } | rate()"} {
			gin.SetMode(gin.TestMode)
			r := gin.New()
			h := New(Options{Search: boundedSearch{tc.code}, Logger: slog.New(slog.DiscardHandler)})
			h.Register(r.Group("/api/v1", authenticated))
			w := serve(r, "/api/v1/search?q="+strings.ReplaceAll(strings.ReplaceAll(q, " ", "+"), "|", "%7C"))
			if w.Code != tc.want || !strings.Contains(w.Body.String(), tc.says) {
				t.Errorf("code %d, %s: %d %s, want %d saying %q", tc.code, q, w.Code, w.Body, tc.want, tc.says)
			}
		}
	}
}

// TestFailOutOfMemory: a read the store refused for its memory limit is
// a 503 with Retry-After that says so, not a 500; another failure
// wrapped the same way stays a 500.
func TestFailOutOfMemory(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for _, tc := range []struct {
		code int32
		want int
		says string
	}{
		{241, http.StatusServiceUnavailable, "--embedded-max-memory"},
		{60, http.StatusInternalServerError, "internal error"},
	} {
		r := gin.New()
		r.GET("/x", func(c *gin.Context) {
			fail(c, http.StatusInternalServerError, "signals: %v", fmt.Errorf("read: %w", &clickhouse.Exception{Code: tc.code, Message: "x"}))
		})
		w := serve(r, "/x")
		if w.Code != tc.want || !strings.Contains(w.Body.String(), tc.says) {
			t.Errorf("code %d: %d %s, want %d saying %q", tc.code, w.Code, w.Body, tc.want, tc.says)
		}
		if retry := w.Header().Get("Retry-After"); (tc.want == http.StatusServiceUnavailable) != (retry == "5") {
			t.Errorf("code %d: Retry-After %q", tc.code, retry)
		}
	}
}
