package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/params"
)

// Outcomes is what the outcome and task endpoints read;
// query.OutcomeReader implements it.
type Outcomes interface {
	RunExtent(ctx context.Context, project, traceID string) (first, last time.Time, err error)
	Outcomes(ctx context.Context, project string, traceIDs []string, lo, hi time.Time) (map[string][]query.Outcome, error)
	Tasks(ctx context.Context, f query.TaskFilter) (*query.TasksReport, error)
	Versions(ctx context.Context, f query.VersionFilter) ([]query.TaskVersions, error)
	Compare(ctx context.Context, s query.CompareSpec) (*query.Comparison, error)
}

// OutcomeStore stores posted outcomes; *schema.Store implements it.
type OutcomeStore interface {
	InsertOutcomes(ctx context.Context, rows []schema.Outcome) error
}

// Limits of POST /runs/{trace_id}/outcomes, each answered 400 (413 for the body).
const (
	MaxOutcomeBody        = 1 << 20 // bytes of one request body
	MaxOutcomesPerRequest = 100
	MaxOutcomeField       = 200  // bytes of name, source and label
	MaxOutcomeExplanation = 4096 // bytes of an explanation
)

// OutcomeIn is one outcome as posted: a name and at least one of passed,
// score and label.
type OutcomeIn struct {
	Name        string   `json:"name"`
	Score       *float64 `json:"score"`
	Label       string   `json:"label"`
	Passed      *bool    `json:"passed"`
	Explanation string   `json:"explanation"`
	Source      string   `json:"source"`  // who judged: default "api"
	SpanID      string   `json:"span_id"` // the span judged; empty: the run
}

// OutcomesReport is the body of GET /runs/{trace_id}/outcomes and of a
// successful POST.
type OutcomesReport struct {
	TraceID  string          `json:"trace_id"`
	Outcomes []query.Outcome `json:"outcomes"`
	// Total is how many outcomes the run has, NextOffset the offset of
	// the next page (0 when this page is the last; GET only).
	Total      int `json:"total"`
	NextOffset int `json:"next_offset,omitempty"`
}

// DefaultOutcomesPage and MaxOutcomesPage bound one GET of a run's
// outcomes (limit=; offset= pages on).
const (
	DefaultOutcomesPage = 1000
	MaxOutcomesPage     = 10000
)

// registerOutcomes mounts the reads: GET /runs/{trace_id}/outcomes and
// GET /tasks.
func (h *Handler) registerOutcomes(r gin.IRoutes, spans gin.HandlerFunc) {
	r.GET("/runs/:trace_id/outcomes", spans, h.getOutcomes)
	r.GET("/tasks", spans, h.getTasks)
	r.GET("/versions", spans, h.getVersions)
	r.GET("/compare", spans, h.getCompare)
	r.GET("/signals", spans, h.getSignals)
	r.GET("/caps", spans, h.getCaps)
}

// RegisterWrites mounts the routes that write (POST
// /runs/{trace_id}/outcomes) on r, which the server guards with the ingest
// scope: an evaluator posts with the key it sends traces with.
func (h *Handler) RegisterWrites(r gin.IRoutes) {
	r.Use(func(c *gin.Context) { c.Set(loggerKey, h.log) }) // as checkRange does for the reads
	r.POST("/runs/:trace_id/outcomes", h.postOutcomes)
}

func (h *Handler) outcomeReader(c *gin.Context) (Outcomes, bool) {
	o := h.opts.Outcomes
	ok := o != nil
	if !ok {
		fail(c, http.StatusNotImplemented, "outcomes are not available in this build")
	}
	return o, ok
}

// postOutcomes stores outcomes for a run: one object or a list of them.
// Posting an outcome again (same name, source and span) replaces it.
func (h *Handler) postOutcomes(c *gin.Context) {
	id, ok := h.traceParam(c)
	if !ok {
		return
	}
	reader, ok := h.outcomeReader(c)
	if !ok {
		return
	}
	if h.opts.OutcomeStore == nil {
		fail(c, http.StatusNotImplemented, "this server stores no outcomes")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxOutcomeBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			fail(c, http.StatusRequestEntityTooLarge, "outcomes body over %d bytes", MaxOutcomeBody)
			return
		}
		fail(c, http.StatusBadRequest, "read body: %v", err)
		return
	}
	ins, err := decodeOutcomes(body)
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	project := Project(c)
	start, _, ok := runExtent(c, reader, project, id)
	if !ok {
		return
	}
	var spanIDs []string
	for _, in := range ins {
		if in.SpanID != "" {
			spanIDs = append(spanIDs, in.SpanID)
		}
	}
	if len(spanIDs) > 0 {
		// The outcomes' spans must be the run's (Options.Content tells).
		if h.opts.Content == nil {
			fail(c, http.StatusNotImplemented, "outcomes on spans need the span reader")
			return
		}
		missing, err := h.opts.Content.MissingSpans(c.Request.Context(), project, id, spanIDs)
		if err != nil {
			fail(c, http.StatusInternalServerError, "look up spans: %v", err)
			return
		}
		if len(missing) > 0 {
			fail(c, http.StatusBadRequest, "span %s is not a span of run %s", strings.Join(missing, ", "), id)
			return
		}
	}
	now := h.now().UTC()
	rows := make([]schema.Outcome, len(ins))
	for i, in := range ins {
		row := schema.Outcome{Project: project, TraceID: id, SpanID: in.SpanID, Name: in.Name, Source: in.Source,
			Label: in.Label, Passed: schema.VerdictNone, Explanation: in.Explanation, RunStart: start,
			CreatedAt: now.Truncate(time.Second), Version: uint64(now.UnixNano()) + uint64(i)}
		if in.Score != nil {
			row.Score, row.HasScore = *in.Score, 1
		}
		if in.Passed != nil {
			row.Passed = schema.VerdictFailed
			if *in.Passed {
				row.Passed = schema.VerdictPassed
			}
		}
		rows[i] = row
	}
	if err := h.opts.OutcomeStore.InsertOutcomes(c.Request.Context(), rows); err != nil {
		fail(c, http.StatusServiceUnavailable, "store outcomes: %v", err)
		return
	}
	out := OutcomesReport{TraceID: id, Outcomes: make([]query.Outcome, len(ins))}
	for i, in := range ins {
		out.Outcomes[i] = query.Outcome{TraceID: id, SpanID: in.SpanID, Name: in.Name, Source: in.Source, Score: in.Score,
			Label: in.Label, Passed: in.Passed, Explanation: in.Explanation, Origin: "api", CreatedAt: now.Truncate(time.Second)}
	}
	c.JSON(http.StatusOK, out)
}

// runExtent finds when a run's spans start, or answers 404 (outcomes
// attach to runs tally has) or 500 and returns false.
func runExtent(c *gin.Context, reader Outcomes, project, id string) (first, last time.Time, ok bool) {
	first, last, err := reader.RunExtent(c.Request.Context(), project, id)
	if errors.Is(err, query.ErrNotFound) {
		fail(c, http.StatusNotFound, "run %s not found: outcomes attach to a run tally has", id)
		return first, last, false
	}
	if err != nil {
		fail(c, http.StatusInternalServerError, "find run: %v", err)
		return first, last, false
	}
	return first, last, true
}

// decodeOutcomes parses and checks a POST body: an object or a list.
func decodeOutcomes(body []byte) ([]OutcomeIn, error) {
	var list []OutcomeIn
	if err := json.Unmarshal(body, &list); err != nil {
		var one OutcomeIn
		if err2 := json.Unmarshal(body, &one); err2 != nil {
			return nil, fmt.Errorf("body: want an outcome object or a list of them: %v", err2)
		}
		list = []OutcomeIn{one}
	}
	if len(list) == 0 || len(list) > MaxOutcomesPerRequest {
		return nil, fmt.Errorf("body: %d outcomes, want 1 to %d", len(list), MaxOutcomesPerRequest)
	}
	for i := range list {
		o := &list[i]
		if o.Source == "" {
			o.Source = "api"
		}
		switch {
		case o.Name == "":
			return nil, fmt.Errorf("outcome %d: name is required", i)
		case len(o.Name) > MaxOutcomeField || len(o.Source) > MaxOutcomeField || len(o.Label) > MaxOutcomeField:
			return nil, fmt.Errorf("outcome %d: name, source and label hold at most %d bytes", i, MaxOutcomeField)
		case len(o.Explanation) > MaxOutcomeExplanation:
			return nil, fmt.Errorf("outcome %d: explanation over %d bytes", i, MaxOutcomeExplanation)
		case o.Passed == nil && o.Score == nil && o.Label == "":
			return nil, fmt.Errorf("outcome %d (%s): give passed, score or label", i, o.Name)
		case o.Score != nil && (math.IsNaN(*o.Score) || math.IsInf(*o.Score, 0)):
			return nil, fmt.Errorf("outcome %d (%s): score must be a finite number", i, o.Name)
		}
		if o.SpanID != "" {
			sid, err := params.SpanID(o.SpanID)
			if err != nil {
				return nil, fmt.Errorf("outcome %d (%s): %v", i, o.Name, err)
			}
			o.SpanID = sid
		}
		if o.Passed == nil {
			o.Passed = query.VerdictOfLabel(o.Label)
		}
	}
	return list, nil
}

// getOutcomes answers a run's outcomes: posted and carried by its spans.
func (h *Handler) getOutcomes(c *gin.Context) {
	id, ok := h.traceParam(c)
	if !ok {
		return
	}
	reader, ok := h.outcomeReader(c)
	if !ok {
		return
	}
	limit, err := nonNegative("limit", c.Query("limit"), DefaultOutcomesPage)
	if err != nil || limit == 0 || limit > MaxOutcomesPage {
		fail(c, http.StatusBadRequest, "limit %q: want an integer from 1 to %d", c.Query("limit"), MaxOutcomesPage)
		return
	}
	offset, err := nonNegative("offset", c.Query("offset"), 0)
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	project := Project(c)
	first, last, ok := runExtent(c, reader, project, id)
	if !ok {
		return
	}
	all, err := reader.Outcomes(c.Request.Context(), project, []string{id}, first, last)
	if err != nil {
		fail(c, http.StatusInternalServerError, "read outcomes: %v", err)
		return
	}
	list := all[id]
	out := OutcomesReport{TraceID: id, Total: len(list), Outcomes: list[min(offset, len(list)):min(offset+limit, len(list))]}
	if offset+limit < len(list) {
		out.NextOffset = offset + limit
	}
	if out.Outcomes == nil {
		out.Outcomes = []query.Outcome{}
	}
	c.JSON(http.StatusOK, out)
}

// getTasks answers GET /tasks: consistency per task (or agent) over the
// runs that started in since..until (default the last 7 days).
func (h *Handler) getTasks(c *gin.Context) {
	reader, ok := h.outcomeReader(c)
	if !ok {
		return
	}
	since, until, err := params.TimeRange(c.DefaultQuery("since", "7d"), c.Query("until"), h.now())
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	f := query.TaskFilter{Project: Project(c), Since: since, Until: until, Task: c.Query("task"), Agent: c.Query("agent"),
		By: c.Query("by"), Outcome: c.Query("outcome")}
	if v := c.Query("k"); v != "" {
		if f.MaxK, err = strconv.Atoi(v); err != nil || f.MaxK < 1 || f.MaxK > query.MaxMaxK {
			fail(c, http.StatusBadRequest, "k %q: want an integer from 1 to %d", v, query.MaxMaxK)
			return
		}
	}
	if v := c.Query("budget_multiple"); v != "" {
		if f.BudgetMultiple, err = strconv.ParseFloat(v, 64); err != nil || !(f.BudgetMultiple > 0) || math.IsInf(f.BudgetMultiple, 0) {
			fail(c, http.StatusBadRequest, "budget_multiple %q: want a number above 0", v)
			return
		}
	}
	if f.By != "" && f.By != "task" && f.By != "agent" && f.By != "case" {
		fail(c, http.StatusBadRequest, "by %q: want task, agent or case", f.By)
		return
	}
	rep, err := reader.Tasks(c.Request.Context(), f)
	if err != nil {
		fail(c, http.StatusInternalServerError, "tasks: %v", err)
		return
	}
	c.JSON(http.StatusOK, rep)
}

// VersionsReport is the body of GET /versions.
type VersionsReport struct {
	Since time.Time            `json:"since"`
	Until time.Time            `json:"until,omitzero"`
	Tasks []query.TaskVersions `json:"tasks"`
}

// getVersions answers GET /versions?task=&since=30d: each task's versions
// (configuration fingerprints) with first and last seen.
func (h *Handler) getVersions(c *gin.Context) {
	reader, ok := h.outcomeReader(c)
	if !ok {
		return
	}
	since, until, err := params.TimeRange(c.DefaultQuery("since", "30d"), c.Query("until"), h.now())
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	tasks, err := reader.Versions(c.Request.Context(), query.VersionFilter{Project: Project(c), Task: c.Query("task"),
		Since: since, Until: until, Outcome: c.Query("outcome")})
	if err != nil {
		fail(c, http.StatusInternalServerError, "versions: %v", err)
		return
	}
	c.JSON(http.StatusOK, VersionsReport{Since: since, Until: until, Tasks: tasks})
}

// getCompare answers GET /compare?task=&a=&b=: a and b are version
// fingerprints (looked for in since..until, default the last 30 days) or
// time ranges written SINCE..UNTIL (RFC 3339 times or durations ago:
// 14d..7d, 7d..).
func (h *Handler) getCompare(c *gin.Context) {
	reader, ok := h.outcomeReader(c)
	if !ok {
		return
	}
	now := h.now()
	since, until, err := params.TimeRange(c.DefaultQuery("since", "30d"), c.Query("until"), now)
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	spec := query.CompareSpec{Project: Project(c), Task: c.Query("task"), Since: since, Until: until, Outcome: c.Query("outcome")}
	if spec.Task == "" {
		fail(c, http.StatusBadRequest, "task is required")
		return
	}
	for _, side := range []struct {
		name        string
		fp          *string
		since, till *time.Time
	}{{"a", &spec.A, &spec.ASince, &spec.AUntil}, {"b", &spec.B, &spec.BSince, &spec.BUntil}} {
		v := c.Query(side.name)
		if from, to, ok := strings.Cut(v, ".."); ok {
			s, u, err := params.TimeRange(from, to, now)
			if err == nil && s.IsZero() {
				err = errors.New("SINCE is required")
			}
			if err != nil {
				fail(c, http.StatusBadRequest, "%s %q: want a range SINCE..UNTIL (e.g. 14d..7d): %v", side.name, v, err)
				return
			}
			if u.IsZero() {
				u = now
			}
			*side.since, *side.till = s, u
			continue
		}
		if !fingerprintRE.MatchString(v) {
			fail(c, http.StatusBadRequest, "%s %q: want a version fingerprint (12 hex digits, GET /versions) or a range SINCE..UNTIL", side.name, v)
			return
		}
		*side.fp = v
	}
	cmp, err := reader.Compare(c.Request.Context(), spec)
	if errors.Is(err, query.ErrNoRuns) {
		fail(c, http.StatusNotFound, "%v", err)
		return
	}
	if err != nil {
		fail(c, http.StatusInternalServerError, "compare: %v", err)
		return
	}
	c.JSON(http.StatusOK, cmp)
}

// fingerprintRE matches a version fingerprint (query.RunConfig).
var fingerprintRE = regexp.MustCompile(`^[0-9a-f]{12}$`)
