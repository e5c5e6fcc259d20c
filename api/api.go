// Package api serves tally's JSON API under /api/v1: runs, run trees, costs,
// tools, cache health, alerts and replay fixtures. Every handler reads the
// caller's project from the request context (set by authentication), never
// from a parameter, so project isolation is enforced in one place.
package api

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
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
	// RunWithin loads a run holding at most maxSpans spans (0: all).
	RunWithin(ctx context.Context, project, traceID string, maxSpans int) (*query.RunDetail, error)
}

// Explainer says how the usage and cost of a run's spans were derived;
// *query.Explainer implements it.
type Explainer interface {
	Explain(ctx context.Context, project, traceID, spanID string) ([]query.SpanExplanation, error)
}

// DefaultMaxQueryRange is the longest since..until a request may ask for
// unless SetMaxRange says otherwise: a cost report reads O(days) of the
// range, so the range bounds the work one request can cause.
const DefaultMaxQueryRange = 400 * 24 * time.Hour

// Handler serves the JSON API.
type Handler struct {
	runs     Runs
	alerts   AlertLister // nil: GET /alerts answers 501
	explain  Explainer   // nil: the explain endpoints answer 501
	maxRange time.Duration
	reads    RunReadLimits
	heavy    chan struct{} // one token per run read under way
	log      *slog.Logger
	now      func() time.Time
}

// New returns the API over a reader.
func New(runs Runs) *Handler {
	h := &Handler{runs: runs, maxRange: DefaultMaxQueryRange, log: slog.New(slog.DiscardHandler), now: time.Now}
	h.SetRunReadLimits(DefaultRunReadLimits())
	return h
}

// SetMaxRange bounds the since..until of every request (an open until is
// now): a longer range is answered 400. d <= 0 restores
// DefaultMaxQueryRange. Call before Register.
func (h *Handler) SetMaxRange(d time.Duration) {
	if d <= 0 {
		d = DefaultMaxQueryRange
	}
	h.maxRange = d
}

// SetLogger sets where the causes of 500 answers are logged (by default
// nowhere); the answers themselves carry only a request id. Call before
// Register.
func (h *Handler) SetLogger(l *slog.Logger) {
	if l != nil {
		h.log = l
	}
}

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

// Register mounts the API routes on r (a group at /api/v1). Every route
// first checks the request's since and until (see checkRange).
func (h *Handler) Register(r gin.IRoutes) {
	r.Use(h.checkRange)
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

// loggerKey is the gin context key of the logger fail logs 500s with.
const loggerKey = "tally.api.logger"

// fail answers code with the formatted message. A 500's message names what
// failed inside (often a ClickHouse error: table names, SQL), so it is
// logged with a fresh request id and the answer carries only the id (also
// in X-Request-Id).
func fail(c *gin.Context, code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if code == http.StatusInternalServerError {
		id := rand.Text()
		log, _ := c.Value(loggerKey).(*slog.Logger)
		if log == nil {
			log = slog.Default()
		}
		log.Error("api: request failed", "request_id", id, "method", c.Request.Method,
			"path", c.Request.URL.Path, "err", msg)
		c.Header("X-Request-Id", id)
		msg = "internal error; the server log has its cause under request id " + id
	}
	c.AbortWithStatusJSON(code, Error{Error: msg})
}

// checkRange runs before every API route: it gives fail the logger, and
// answers 400 when since or until is malformed or out of range (see
// TimeRange), or since..until is longer than the maximum (an open until
// counts as now; an open since is left to each route's default, which is
// short).
func (h *Handler) checkRange(c *gin.Context) {
	c.Set(loggerKey, h.log)
	sinceArg, untilArg := c.Query("since"), c.Query("until")
	if sinceArg == "" && untilArg == "" {
		return
	}
	now := h.now()
	since, until, err := TimeRange(sinceArg, untilArg, now)
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	if since.IsZero() {
		return
	}
	if until.IsZero() {
		until = now
	}
	if d := until.Sub(since); d > h.maxRange {
		fail(c, http.StatusBadRequest, "since %s to until %s covers %s, more than the longest range served, %s (--max-query-range)",
			since.Format(time.RFC3339), until.Format(time.RFC3339), formatDays(d), formatDays(h.maxRange))
	}
}

// formatDays writes d in days when it is a whole number of them.
func formatDays(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

var traceIDRE = regexp.MustCompile(`^[0-9a-fA-F]{32}$`)

func (h *Handler) getRun(c *gin.Context) {
	id := c.Param("trace_id")
	if !traceIDRE.MatchString(id) {
		fail(c, http.StatusBadRequest, "trace id %q: want 32 hex characters", id)
		return
	}
	release, ok := h.acquireRunRead(c)
	if !ok {
		return
	}
	defer release()
	run, err := h.runs.RunWithin(c.Request.Context(), Project(c), strings.ToLower(id), h.reads.MaxRunSpans)
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

// Times the API accepts: ClickHouse's DateTime holds 1970 to 2106, so
// anything outside [1970-01-01, 2100-01-01] is a mistake, not a query.
const (
	minUnix = 0
	maxUnix = 4102444800 // 2100-01-01T00:00:00Z
)

// TimeRange parses since/until query values: RFC 3339 times, or durations
// relative to now ("24h", "30m", "7d"). Empty values leave the bound open.
// Times before 1970 or after 2100, and until before since, are errors.
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
// The time must lie in 1970 to 2100 (an empty value is the zero time).
func ParseTime(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		d, derr := ParseDuration(v)
		if derr != nil {
			return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration like 24h or 7d", v)
		}
		t = now.Add(-d)
	}
	if t.Before(time.Unix(minUnix, 0)) || t.After(time.Unix(maxUnix, 0)) {
		return time.Time{}, fmt.Errorf("%q is %s, outside 1970 to 2100", v, t.UTC().Format(time.RFC3339))
	}
	return t.UTC(), nil
}

// maxDays is the most days a time.Duration holds.
const maxDays = int64(math.MaxInt64 / int64(24*time.Hour))

// ParseDuration is time.ParseDuration plus a "d" (24h) unit, written as
// decimal digits with an optional fraction ("7d", "1.5d"). Negative
// durations, and durations too long for a time.Duration, are errors.
func ParseDuration(v string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		// ParseFloat alone would take NaN, Inf, exponents and hex.
		whole, frac, _ := strings.Cut(n, ".")
		if whole+frac == "" || strings.Trim(whole+frac, "0123456789") != "" {
			return 0, fmt.Errorf("invalid duration %q: want days as decimal digits, like 7d or 1.5d", v)
		}
		days, err := strconv.ParseFloat(n, 64)
		if err != nil || days > float64(maxDays) {
			return 0, fmt.Errorf("invalid duration %q: at most %dd", v, maxDays)
		}
		return time.Duration(days * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration %q", v)
	}
	return d, nil
}
