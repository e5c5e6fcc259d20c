package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/query"
)

// fakeAlerts lists fixed alerts per project.
type fakeAlerts map[string][]alerts.Status

func (f fakeAlerts) Alerts(project string) []alerts.Status { return f[project] }

func (f fakeAlerts) History(string, string, time.Time, time.Time) []alerts.Episode { return nil }

// Rules and Check are exercised against a real evaluator in
// cmd/tally's TestAlertsThroughAPI; the fake only lists.
func (f fakeAlerts) Rules() []alerts.Rule { return nil }

func (f fakeAlerts) Check(context.Context, time.Duration, []string) ([]alerts.CheckResult, error) {
	return nil, nil
}

// fakeTools records the filter it was asked for and answers fixed stats.
type fakeTools struct {
	got query.ToolFilter
}

func (f *fakeTools) Tools(_ context.Context, filter query.ToolFilter) ([]query.ToolStats, error) {
	f.got = filter
	return []query.ToolStats{{Tool: "fetch_url", Calls: 40, Retries: 6, RetryRate: 0.15, P95Ms: 3000}}, nil
}

func (f *fakeTools) Models(context.Context, query.Window) ([]query.ModelStats, error) {
	return []query.ModelStats{{Model: "gpt-4o", Calls: 3}}, nil
}

func serve(t *testing.T, register func(h *api.Handler, r gin.IRoutes), project, target string) *httptest.ResponseRecorder {
	t.Helper()
	gin.SetMode(gin.TestMode)
	engine := gin.New()
	engine.Use(func(c *gin.Context) { c.Request = api.WithProject(c.Request, project) })
	register(api.New(api.Options{}), engine.Group("/api/v1"))
	rec := httptest.NewRecorder()
	engine.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec
}

func TestAlertsEndpoint(t *testing.T) {
	list := fakeAlerts{
		"p": {{Rule: "R", State: alerts.StateFiring, Value: 0.11, ExampleRunIDs: []string{"t1"}},
			{Rule: "S", State: alerts.StateResolved}},
		"q": {{Rule: "Q", State: alerts.StateFiring}},
	}
	reg := func(h *api.Handler, r gin.IRoutes) { h.RegisterAlerts(r, list) }
	for _, c := range []struct {
		target string
		code   int
		rules  []string
	}{
		{"/api/v1/alerts", 200, []string{"R", "S"}},
		{"/api/v1/alerts?state=firing", 200, []string{"R"}},
		{"/api/v1/alerts?state=pending", 200, []string{}},
		{"/api/v1/alerts?state=bogus", 400, nil},
	} {
		rec := serve(t, reg, "p", c.target)
		if rec.Code != c.code {
			t.Fatalf("%s: %d %s", c.target, rec.Code, rec.Body)
		}
		if c.code != 200 {
			continue
		}
		var body api.AlertsReport
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for _, a := range body.Alerts {
			got = append(got, a.Rule)
		}
		if len(got) != len(c.rules) || (len(got) > 0 && got[0] != c.rules[0]) {
			t.Errorf("%s: rules %v, want %v", c.target, got, c.rules)
		}
	}
}

func TestToolsEndpoint(t *testing.T) {
	tools := &fakeTools{}
	reg := func(h *api.Handler, r gin.IRoutes) { h.RegisterTools(r, tools) }
	rec := serve(t, reg, "p", "/api/v1/tools?since=2026-11-02T09:00:00Z&until=2026-11-02T10:00:00Z&tool=fetch_url")
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var body api.ToolsReport
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	want := query.ToolFilter{Window: query.Window{Project: "p", Since: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC),
		Until: time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)}, Tool: "fetch_url"}
	if tools.got != want {
		t.Errorf("filter %+v, want %+v", tools.got, want)
	}
	if len(body.Tools) != 1 || body.Tools[0].RetryRate != 0.15 || len(body.Models) != 1 || body.Definitions["retry"] == "" {
		t.Errorf("body %+v", body)
	}
	if rec := serve(t, reg, "p", "/api/v1/tools?since=yesterday"); rec.Code != 400 {
		t.Errorf("bad since: %d", rec.Code)
	}
}

// historyArgs records what GET /alerts/history asked the lister for.
type historyArgs struct {
	fakeAlerts
	project, rule string
	since, until  time.Time
}

func (h *historyArgs) History(project, rule string, since, until time.Time) []alerts.Episode {
	h.project, h.rule, h.since, h.until = project, rule, since, until
	return nil
}

// TestAlertHistoryRange: the history's range is checked like every other
// since/until (a bad one is 400); without one it is the last 7 days; the
// caller's project, the rule and the range reach the lister.
func TestAlertHistoryRange(t *testing.T) {
	list := &historyArgs{}
	reg := func(h *api.Handler, r gin.IRoutes) { h.RegisterAlerts(r, list) }
	for _, c := range []struct {
		target string
		code   int
		rule   string
		days   float64 // until − since
	}{
		{"/api/v1/alerts/history", 200, "", 7},
		{"/api/v1/alerts/history?since=30d&rule=R", 200, "R", 30},
		{"/api/v1/alerts/history?since=bogus", 400, "", 0},
		{"/api/v1/alerts/history?since=1h&until=2h", 400, "", 0},
	} {
		*list = historyArgs{}
		rec := serve(t, reg, "p", c.target)
		if rec.Code != c.code {
			t.Errorf("%s: %d %s, want %d", c.target, rec.Code, rec.Body, c.code)
			continue
		}
		if c.code != 200 {
			continue
		}
		var body api.AlertHistoryReport
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Episodes == nil {
			t.Errorf("%s: %v %s (want an episodes list)", c.target, err, rec.Body)
		}
		d := list.until.Sub(list.since).Hours() / 24
		if list.project != "p" || list.rule != c.rule || d < c.days-0.001 || d > c.days+0.001 || !body.Since.Equal(list.since) {
			t.Errorf("%s: the lister got project %q rule %q range %.3f days, want p, %q, %v days", c.target, list.project, list.rule, d, c.rule, c.days)
		}
	}
}
