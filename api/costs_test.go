package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/query"
)

// fakeCosts records the filters it was asked for and answers fixed reports.
type fakeCosts struct {
	costFilter  query.CostFilter
	cacheFilter query.CacheFilter
	runFilter   query.RunFilter
}

func (f *fakeCosts) Runs(_ context.Context, filter query.RunFilter) (query.RunPage, error) {
	f.runFilter = filter
	return query.RunPage{}, nil
}

func (f *fakeCosts) RunTree(context.Context, string, string, query.TreeOptions) (*query.RunDetail, error) {
	return nil, query.ErrNotFound
}

func (f *fakeCosts) Costs(_ context.Context, filter query.CostFilter) (query.CostReport, error) {
	f.costFilter = filter
	return query.CostReport{By: filter.By, Groups: []query.CostGroup{{Key: "planner",
		CostTotals: query.CostTotals{Spans: 3, Cost: attribution.Cost{Total: 0.5}, RetryTaxUSD: 0.25}}}}, nil
}

func (f *fakeCosts) Cache(_ context.Context, filter query.CacheFilter) (query.CacheReport, error) {
	f.cacheFilter = filter
	return query.CacheReport{Groups: []attribution.CacheGroup{{Agent: "looper", Model: "m",
		CacheStats:    attribution.CacheStats{Calls: 6, EligibleCalls: 6, Verdict: attribution.VerdictNeverHit},
		ExampleRunIDs: []string{"t2", "t1"}}}}, nil
}

func costsRouter(fake any) *gin.Engine {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	h := New(over(fake, Options{}))
	h.now = func() time.Time { return time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC) }
	h.registerCosts(r.Group("/api/v1", authenticated))
	return r
}

// authenticated stands in for the server's authentication: project "p1".
func authenticated(c *gin.Context) { c.Request = WithProject(c.Request, "p1") }

func serve(r *gin.Engine, url string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, url, nil))
	return w
}

func TestCostsEndpoint(t *testing.T) {
	fake := &fakeCosts{}
	r := costsRouter(fake)
	cases := []struct {
		name, url string
		code      int
	}{
		{"default by agent", "/api/v1/costs", http.StatusOK},
		{"by model hourly", "/api/v1/costs?by=model&since=7d&bucket=hour", http.StatusOK},
		{"bad by", "/api/v1/costs?by=colour", http.StatusBadRequest},
		{"bad bucket", "/api/v1/costs?by=agent&bucket=week", http.StatusBadRequest},
		{"minute over 24h", "/api/v1/costs?by=agent&bucket=minute&since=48h", http.StatusBadRequest},
		{"minute within 24h", "/api/v1/costs?by=agent&bucket=minute&since=6h", http.StatusOK},
		{"bad since", "/api/v1/costs?since=yesterday", http.StatusBadRequest},
		{"limit 1", "/api/v1/costs?limit=1", http.StatusOK},
		{"limit at its bound", "/api/v1/costs?limit=100000", http.StatusOK},
		{"limit over its bound", "/api/v1/costs?limit=100001", http.StatusBadRequest},
		{"limit 0", "/api/v1/costs?limit=0", http.StatusBadRequest},
		{"limit not a number", "/api/v1/costs?limit=all", http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := serve(r, tc.url)
			if w.Code != tc.code {
				t.Fatalf("%s: %d %s, want %d", tc.url, w.Code, w.Body, tc.code)
			}
			if tc.code != http.StatusOK {
				var e Error
				if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" {
					t.Errorf("error body %s: want {\"error\": …}", w.Body)
				}
			}
		})
	}
	serve(r, "/api/v1/costs?by=model&since=7d&bucket=hour&limit=7")
	// since=7d at 2026-01-10T12:00Z is 2026-01-03T12:00Z; until defaults to now.
	want := query.CostFilter{Project: "p1", By: "model", Bucket: "hour", Limit: 7,
		Since: time.Date(2026, 1, 3, 12, 0, 0, 0, time.UTC), Until: time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)}
	if fake.costFilter != want {
		t.Errorf("filter %+v, want %+v", fake.costFilter, want)
	}
	var body map[string]any
	if err := json.Unmarshal(serve(r, "/api/v1/costs").Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	group := body["groups"].([]any)[0].(map[string]any)
	if group["key"] != "planner" || group["spans"] != 3.0 || group["retry_tax_usd"] != 0.25 ||
		group["cost"].(map[string]any)["total_usd"] != 0.5 {
		t.Errorf("group JSON %v: want key, spans, retry_tax_usd and cost.total_usd inline", group)
	}
}

func TestCacheEndpoint(t *testing.T) {
	fake := &fakeCosts{}
	r := costsRouter(fake)
	w := serve(r, "/api/v1/cache?since=24h&agent=looper&min_eligible_calls=3")
	if w.Code != http.StatusOK {
		t.Fatalf("cache: %d %s", w.Code, w.Body)
	}
	if fake.cacheFilter.Agent != "looper" || fake.cacheFilter.Thresholds.MinEligibleCalls != 3 {
		t.Errorf("filter %+v, want agent looper and min_eligible_calls 3", fake.cacheFilter)
	}
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	g := body["groups"].([]any)[0].(map[string]any)
	if g["verdict"] != attribution.VerdictNeverHit || g["eligible_calls"] != 6.0 {
		t.Errorf("group JSON %v", g)
	}
	if ids, _ := g["example_run_ids"].([]any); len(ids) != 2 || ids[0] != "t2" || ids[1] != "t1" {
		t.Errorf("group example_run_ids %v, want [t2 t1]", g["example_run_ids"])
	}
	if w := serve(r, "/api/v1/cache?min_eligible_calls=zero"); w.Code != http.StatusBadRequest {
		t.Errorf("bad threshold: %d, want 400", w.Code)
	}
}

func TestCostsNotConfigured(t *testing.T) {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	New(over(runsOnly{}, Options{})).registerCosts(r.Group("/api/v1", authenticated))
	if w := serve(r, "/api/v1/costs"); w.Code != http.StatusNotImplemented {
		t.Errorf("costs without a cost reader: %d, want 501", w.Code)
	}
}

type runsOnly struct{}

func (runsOnly) Runs(context.Context, query.RunFilter) (query.RunPage, error) {
	return query.RunPage{}, nil
}

func (runsOnly) RunTree(context.Context, string, string, query.TreeOptions) (*query.RunDetail, error) {
	return nil, query.ErrNotFound
}

func TestRunsToolFilter(t *testing.T) {
	fake := &fakeCosts{}
	gin.SetMode(gin.TestMode)
	r := gin.New()
	New(over(fake, Options{})).Register(r.Group("/api/v1", authenticated))
	w := serve(r, "/api/v1/runs?tool=fetch_url&since=2026-01-10T00:00:00Z")
	if w.Code != http.StatusOK {
		t.Fatalf("runs: %d %s", w.Code, w.Body)
	}
	if fake.runFilter.Tool != "fetch_url" || fake.runFilter.Project != "p1" {
		t.Errorf("filter %+v, want tool fetch_url in project p1", fake.runFilter)
	}
}
