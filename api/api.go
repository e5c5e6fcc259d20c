// Package api serves tally's JSON API under /api/v1: runs, run trees, costs,
// tools, cache health, alerts and replay fixtures. Every handler reads the
// caller's project from the request context (set by authentication), never
// from a parameter, so project isolation is enforced in one place.
package api

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/query"
)

// Runs is what the API needs to read runs; *query.Reader implements it.
type Runs interface {
	Runs(ctx context.Context, f query.RunFilter) (query.RunPage, error)
	Run(ctx context.Context, project, traceID string) (*query.RunDetail, error)
}

// Explainer says how the usage and cost of a run's spans were derived;
// *query.Explainer implements it.
type Explainer interface {
	Explain(ctx context.Context, project, traceID, spanID string) ([]query.SpanExplanation, error)
}

// Handler serves the JSON API.
type Handler struct {
	runs    Runs
	alerts  AlertLister // nil: GET /alerts answers 501
	explain Explainer   // nil: the explain endpoints answer 501
	now    func() time.Time
}

// New returns the API over a reader.
func New(runs Runs) *Handler { return &Handler{runs: runs, now: time.Now} }

// ProjectKey is the gin context key under which authentication stores the
// caller's project.
const ProjectKey = "tally.project"

// Project returns the caller's project, set by the server's authentication
// middleware. A request that reached a handler without it is a wiring bug:
// it panics rather than read another project's data.
func Project(c *gin.Context) string {
	p := c.GetString(ProjectKey)
	if p == "" {
		panic("api: request without an authenticated project")
	}
	return p
}

// Register mounts the API routes on r (a group at /api/v1).
func (h *Handler) Register(r gin.IRoutes) {
	r.GET("/runs", h.listRuns)
	r.GET("/runs/:trace_id", h.getRun)
	r.GET("/runs/:trace_id/spans/:span_id", h.getSpanContent)
	r.GET("/runs/:trace_id/fixture", h.getFixture)
	r.GET("/runs/:trace_id/explain", h.getExplain)
	r.GET("/runs/:trace_id/spans/:span_id/explain", h.getExplain)
	h.registerConversations(r)
	h.registerCosts(r)
	h.registerTools(r)
	h.RegisterAlerts(r, h.alerts)
}

// SetExplainer turns on GET /api/v1/runs/{trace_id}/explain and
// /runs/{trace_id}/spans/{span_id}/explain. Call before Register.
func (h *Handler) SetExplainer(e Explainer) { h.explain = e }

// SetAlerts turns on GET /api/v1/alerts; *alerts.Evaluator implements
// AlertLister. Call before Register; without it the endpoint answers 501.
func (h *Handler) SetAlerts(a AlertLister) { h.alerts = a }

// Error is the body of every non-2xx API answer.
type Error struct {
	Error string `json:"error"`
}

func fail(c *gin.Context, code int, format string, args ...any) {
	c.AbortWithStatusJSON(code, Error{Error: fmt.Sprintf(format, args...)})
}

var traceIDRE = regexp.MustCompile(`^[0-9a-fA-F]{32}$`)

func (h *Handler) getRun(c *gin.Context) {
	id := c.Param("trace_id")
	if !traceIDRE.MatchString(id) {
		fail(c, http.StatusBadRequest, "trace id %q: want 32 hex characters", id)
		return
	}
	run, err := h.runs.Run(c.Request.Context(), Project(c), strings.ToLower(id))
	if errors.Is(err, query.ErrNotFound) {
		fail(c, http.StatusNotFound, "run %s not found", id)
		return
	}
	if err != nil {
		fail(c, http.StatusInternalServerError, "load run: %v", err)
		return
	}
	c.JSON(http.StatusOK, run)
}

// getExplain answers how a run's (or one span's) tokens and cost were
// derived: the instrumentation reading, each step, the price entry and the
// arithmetic, and whether each span counts in the run's totals.
func (h *Handler) getExplain(c *gin.Context) {
	id, spanID := c.Param("trace_id"), c.Param("span_id")
	if !traceIDRE.MatchString(id) {
		fail(c, http.StatusBadRequest, "trace id %q: want 32 hex characters", id)
		return
	}
	if spanID != "" && !spanIDRE.MatchString(spanID) {
		fail(c, http.StatusBadRequest, "span id %q: want 16 hex characters", spanID)
		return
	}
	if h.explain == nil {
		fail(c, http.StatusNotImplemented, "explanations need a price catalog")
		return
	}
	out, err := h.explain.Explain(c.Request.Context(), Project(c), strings.ToLower(id), strings.ToLower(spanID))
	if errors.Is(err, query.ErrNotFound) {
		if spanID != "" {
			fail(c, http.StatusNotFound, "span %s of run %s not found", spanID, id)
		} else {
			fail(c, http.StatusNotFound, "run %s not found", id)
		}
		return
	}
	if err != nil {
		fail(c, http.StatusInternalServerError, "explain: %v", err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"trace_id": strings.ToLower(id), "spans": out})
}

func (h *Handler) listRuns(c *gin.Context) {
	f := query.RunFilter{
		Project:      Project(c),
		Agent:        c.Query("agent"),
		Model:        c.Query("model"),
		Service:      c.Query("service"),
		Task:         c.Query("task"),
		Conversation: c.Query("conversation"),
		Tool:         c.Query("tool"),
		Status:       c.Query("status"),
		Search:       c.Query("q"),
		Cursor:       c.Query("cursor"),
	}
	var ok bool
	if f.Since, f.Until, f.Limit, ok = pageQuery(c, h.now()); !ok {
		return
	}
	if s := c.Query("min_cost"); s != "" {
		var err error
		if f.MinCost, err = strconv.ParseFloat(s, 64); err != nil || f.MinCost < 0 || math.IsNaN(f.MinCost) || math.IsInf(f.MinCost, 0) {
			fail(c, http.StatusBadRequest, "min_cost %q: want a non-negative number of USD", s)
			return
		}
	}
	if f.Status != "" && f.Status != "ok" && f.Status != "error" {
		fail(c, http.StatusBadRequest, "status %q: want ok or error", f.Status)
		return
	}
	page, err := h.runs.Runs(c.Request.Context(), f)
	if err != nil {
		failList(c, "list runs", err)
		return
	}
	c.JSON(http.StatusOK, page)
}

// queryRange parses the request's since and until (see TimeRange); on a bad
// value it answers 400 and returns ok false.
func queryRange(c *gin.Context, now time.Time) (since, until time.Time, ok bool) {
	since, until, err := TimeRange(c.Query("since"), c.Query("until"), now)
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return time.Time{}, time.Time{}, false
	}
	return since, until, true
}

// pageQuery parses the since, until and limit of a paged list request; limit
// is 0 when absent. On a bad value it answers 400 and returns ok false.
func pageQuery(c *gin.Context, now time.Time) (since, until time.Time, limit int, ok bool) {
	if since, until, ok = queryRange(c, now); !ok {
		return
	}
	if s := c.Query("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			fail(c, http.StatusBadRequest, "limit %q: want an integer from 1 to 1000", s)
			return time.Time{}, time.Time{}, 0, false
		}
		limit = n
	}
	return since, until, limit, true
}

// failList answers a failed page read: 400 for a bad cursor (the reader's
// "invalid cursor" error), 500 otherwise.
func failList(c *gin.Context, what string, err error) {
	if errors.Is(err, query.ErrInvalidCursor) {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	fail(c, http.StatusInternalServerError, "%s: %v", what, err)
}

// TimeRange parses since/until query values: RFC 3339 times, or durations
// relative to now ("24h", "30m", "7d"). Empty values leave the bound open.
func TimeRange(since, until string, now time.Time) (time.Time, time.Time, error) {
	s, err := ParseTime(since, now)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("since: %w", err)
	}
	u, err := ParseTime(until, now)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("until: %w", err)
	}
	if !s.IsZero() && !u.IsZero() && u.Before(s) {
		return time.Time{}, time.Time{}, fmt.Errorf("until %s is before since %s", u.Format(time.RFC3339), s.Format(time.RFC3339))
	}
	return s, u, nil
}

// ParseTime parses an RFC 3339 time or a duration before now ("24h", "7d").
func ParseTime(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	d, err := ParseDuration(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration like 24h or 7d", v)
	}
	return now.Add(-d).UTC(), nil
}

// ParseDuration is time.ParseDuration plus a "d" (24h) unit.
func ParseDuration(v string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		if err != nil || days < 0 {
			return 0, fmt.Errorf("invalid duration %q", v)
		}
		return time.Duration(days * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration %q", v)
	}
	return d, nil
}
