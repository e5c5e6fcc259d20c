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
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/params"
)

// RunLister answers the run list; query.RunReader implements it.
type RunLister interface {
	Runs(ctx context.Context, f query.RunFilter) (query.RunPage, error)
}

// TreeReader reads one run: its summary and tree within the options'
// bounds, and one span's children of a run answered in part;
// query.TreeReader implements it.
type TreeReader interface {
	RunTree(ctx context.Context, project, traceID string, o query.TreeOptions) (*query.RunDetail, error)
	Children(ctx context.Context, project, traceID, spanID string, o query.ChildrenOptions) (*query.ChildrenPart, error)
}

// Explainer says how the usage and cost of a run's spans were derived;
// *query.Explainer implements it.
type Explainer interface {
	Explain(ctx context.Context, project, traceID, spanID string) ([]query.SpanExplanation, error)
}

// DefaultMaxQueryRange is the longest since..until a request may ask for
// unless Options.MaxQueryRange says otherwise: a cost report reads O(days) of the
// range, so the range bounds the work one request can cause.
const DefaultMaxQueryRange = 400 * 24 * time.Hour

// Handler serves the JSON API.
type Handler struct {
	opts  Options
	reads RunReadLimits
	heavy chan struct{} // one token per run read under way
	log   *slog.Logger
	now   func() time.Time
}

// Options are the API's readers, one typed field per capability, and its
// limits. A nil reader turns its endpoints into 501 answers (a server
// without a price catalog has no Costs): that is a choice made where the
// API is assembled, never a method that went missing, which is a compile
// error here. Zero limits take the defaults given.
type Options struct {
	// Runs answers GET /runs (required).
	Runs RunLister
	// Trees answers GET /runs/{id} and …/spans/{id}/children.
	Trees TreeReader
	// Traces resolves a trace id prefix (the short ids the UI shows); nil:
	// only whole trace ids are taken.
	Traces TraceResolver
	// Content answers GET /runs/{id}/spans/{id}; Chat adds the span's
	// messages in one shape to it.
	Content ContentReader
	Chat    ChatReader
	// Conversations answers GET /conversations and /conversations/{id}.
	Conversations Conversations
	// Costs answers GET /costs and /cache (*query.CostReader: it needs the
	// price catalog).
	Costs Costs
	// Tools answers GET /tools.
	Tools ToolStatsReader
	// Signals answers GET /signals; Caps GET /caps.
	Signals SignalReader
	Caps    CapsReader
	// Outcomes reads outcomes, tasks, versions and comparisons; OutcomeStore
	// stores posted outcomes (*schema.Store).
	Outcomes     Outcomes
	OutcomeStore OutcomeStore
	// Search answers GET and POST /search (TraceQL), under SearchLimits.
	Search       Searcher
	SearchLimits query.SearchLimits
	// Saved keeps the projects' saved queries (GET, POST /search/saved,
	// DELETE /search/saved/{name}; api.SavedQueries).
	Saved SavedQueryStore
	// Fixtures answers GET /runs/{id}/fixture.
	Fixtures Fixtures
	// Explain explains spans' usage and cost (*query.Explainer).
	Explain Explainer
	// Alerts lists the server's alerts (*alerts.Evaluator).
	Alerts AlertLister
	// Storage reports disk use, the free-space floor and retention (GET
	// /storage; *retention.Storage).
	Storage StorageReporter
	// MaxQueryRange bounds the since..until of every request (an open until
	// is now): a longer range is answered 400 (DefaultMaxQueryRange).
	MaxQueryRange time.Duration
	// RunReads bound run and fixture reads (DefaultRunReadLimits).
	RunReads RunReadLimits
	// Logger receives the causes of 500 answers (by default nowhere); the
	// answers themselves carry only a request id.
	Logger *slog.Logger
	// KeptFrom is the oldest span start a project's data is kept from (its
	// retention, zero: forever): a read of spans whose since is older gets a
	// Tally-Retention header saying the answer holds only what is kept.
	KeptFrom func(project string, now time.Time) (time.Time, time.Duration)
}

// StorageReporter reports what is stored and kept.
type StorageReporter interface {
	Storage(ctx context.Context) (any, error)
}

// New returns the API over the readers in opts.
func New(opts Options) *Handler {
	if opts.MaxQueryRange <= 0 {
		opts.MaxQueryRange = DefaultMaxQueryRange
	}
	h := &Handler{opts: opts, log: opts.Logger, now: time.Now}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.setRunReadLimits(opts.RunReads)
	return h
}

// projectKey is the request-context key under which authentication stores
// the caller's project: the one place it travels, for the API and the UI.
type projectKey struct{}

// WithProject returns r carrying project as its caller's, for the handlers
// behind authentication (the server's middleware calls it).
func WithProject(r *http.Request, project string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), projectKey{}, project))
}

// RequestProject returns the authenticated project of a request, "" when
// authentication did not set one (the UI uses it to scope its lookups).
func RequestProject(r *http.Request) string {
	p, _ := r.Context().Value(projectKey{}).(string)
	return p
}

// Project returns the caller's project, set by the server's authentication
// middleware. A request that reached a handler without it is a wiring bug:
// it panics rather than read another project's data.
func Project(c *gin.Context) string {
	p := RequestProject(c.Request)
	if p == "" {
		panic("api: request without an authenticated project")
	}
	return p
}

// Register mounts the API routes on r (a group at /api/v1). Every route
// first checks the request's since and until (see checkRange).
func (h *Handler) Register(r gin.IRoutes) {
	r.Use(h.checkRange)
	spans := h.noteRetention // before each route that reads spans
	r.GET("/runs", spans, h.listRuns)
	r.GET("/runs/:trace_id", spans, h.getRun)
	r.GET("/runs/:trace_id/spans/:span_id", spans, h.getSpanContent)
	r.GET("/runs/:trace_id/fixture", spans, h.getFixture)
	r.GET("/runs/:trace_id/explain", spans, h.getExplain)
	r.GET("/runs/:trace_id/spans/:span_id/explain", spans, h.getExplain)
	r.GET("/runs/:trace_id/spans/:span_id/children", spans, h.getChildren)
	h.registerConversations(r, spans)
	h.registerSearch(r, spans)
	h.registerCosts(r)
	h.RegisterTools(r, h.opts.Tools, spans)
	h.registerOutcomes(r, spans)
	// Alert history is tally's own state: it holds the whole range.
	h.RegisterAlerts(r, h.opts.Alerts)
}

// TraceResolver finds the runs whose trace id starts with a prefix, so the
// API takes the short ids the UI shows; query.RunReader implements it.
type TraceResolver interface {
	TraceIDsWithPrefix(ctx context.Context, project, prefix string, limit int) ([]string, error)
}

// maxPrefixMatches is how many runs an ambiguous prefix's error lists.
const maxPrefixMatches = 10

// traceParam reads the route's trace id: 32 hex characters, or a prefix of
// at least params.MinTracePrefix that names exactly one run of the
// caller's project (none: 404; several: 400 listing them).
func (h *Handler) traceParam(c *gin.Context) (string, bool) {
	id, prefix, err := params.TraceIDOrPrefix(c.Param("trace_id"))
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return "", false
	}
	if !prefix {
		return id, true
	}
	res := h.opts.Traces
	if res == nil {
		fail(c, http.StatusBadRequest, "trace id %q: want 32 hex characters", id)
		return "", false
	}
	ids, err := res.TraceIDsWithPrefix(c.Request.Context(), Project(c), id, maxPrefixMatches+1)
	if err != nil {
		fail(c, http.StatusInternalServerError, "%v", err)
		return "", false
	}
	switch {
	case len(ids) == 0:
		fail(c, http.StatusNotFound, "no run's trace id starts with %s", id)
		return "", false
	case len(ids) > 1:
		list := strings.Join(ids[:min(len(ids), maxPrefixMatches)], ", ")
		if len(ids) > maxPrefixMatches {
			list += ", …"
		}
		fail(c, http.StatusBadRequest, "trace id prefix %s is ambiguous: it starts %s; give more characters", id, list)
		return "", false
	}
	return ids[0], true
}

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
	if code == http.StatusInternalServerError && slices.ContainsFunc(args, func(a any) bool { err, ok := a.(error); return ok && schema.OutOfMemory(err) }) {
		// Not tally's fault: the store refused the read for its memory.
		c.Header("Retry-After", "5")
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, Error{Error: "the store refused the read for lack of memory (on the embedded " +
			"store its cap is --embedded-max-memory, by default --memory-budget): try a shorter window, or again later"})
		return
	}
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
		if slices.ContainsFunc(args, func(a any) bool { err, ok := a.(error); return ok && schema.Damaged(err) }) {
			msg = "the store has a damaged part, which fails the reads that touch it until it is recovered " +
				"(see docs/operations.md: a damaged part); the server log names it under request id " + id
		}
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
	since, until, err := params.TimeRange(sinceArg, untilArg, now)
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
	if d := until.Sub(since); d > h.opts.MaxQueryRange {
		fail(c, http.StatusBadRequest, "since %s to until %s covers %s, more than the longest range served, %s (--max-query-range)",
			since.Format(time.RFC3339), until.Format(time.RFC3339), params.FormatDuration(d), params.FormatDuration(h.opts.MaxQueryRange))
		return
	}
	c.Set(sinceKey, since)
}

// sinceKey is the gin context key of the request's since, once checkRange
// has parsed it.
const sinceKey = "tally.api.since"

// noteRetention runs before each route that reads spans (Register says
// which): when the request's since is older than what retention keeps of
// the project's spans, the answer gets a Tally-Retention header saying it
// holds what exists. Routes over the hourly rollups (costs, kept longer)
// and over tally's own state (alerts) do without it.
func (h *Handler) noteRetention(c *gin.Context) {
	since, ok := c.Value(sinceKey).(time.Time)
	if !ok || h.opts.KeptFrom == nil {
		return
	}
	if from, d := h.opts.KeptFrom(Project(c), h.now()); !from.IsZero() && since.Before(from) {
		c.Header(RetentionHeader, fmt.Sprintf("this project's spans are kept %s (retention): the answer holds what exists since %s, not since %s",
			params.FormatDuration(d), from.UTC().Format(time.RFC3339), since.UTC().Format(time.RFC3339)))
	}
}

// RetentionHeader says that a read's range starts before what retention
// keeps: the answer holds the data that exists.
const RetentionHeader = "Tally-Retention"

// Storage answers GET /api/v1/storage: the tables' bytes on disk, free
// space and the floor, the retention policy, the last run and what the
// next would drop. It spans every project, so the server mounts it behind
// the metrics scope, like /metrics, not in Register.
func (h *Handler) Storage(c *gin.Context) {
	if h.opts.Storage == nil {
		fail(c, http.StatusNotImplemented, "storage status is not available in this build")
		return
	}
	rep, err := h.opts.Storage.Storage(c.Request.Context())
	if err != nil {
		fail(c, http.StatusInternalServerError, "storage: %v", err)
		return
	}
	c.JSON(http.StatusOK, rep)
}

// getExplain answers how a run's (or one span's) tokens and cost were
// derived: the instrumentation reading, each step, the price entry and the
// arithmetic, and whether each span counts in the run's totals.
func (h *Handler) getExplain(c *gin.Context) {
	id, ok := h.traceParam(c)
	if !ok {
		return
	}
	spanID := c.Param("span_id")
	if spanID != "" {
		var err error
		if spanID, err = params.SpanID(spanID); err != nil {
			fail(c, http.StatusBadRequest, "%v", err)
			return
		}
	}
	if h.opts.Explain == nil {
		fail(c, http.StatusNotImplemented, "explanations need a price catalog")
		return
	}
	out, err := h.opts.Explain.Explain(c.Request.Context(), Project(c), id, spanID)
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
	c.JSON(http.StatusOK, gin.H{"trace_id": id, "spans": out})
}

func (h *Handler) listRuns(c *gin.Context) {
	f, err := query.ParseRunFilter(c.Request.URL.Query(), h.now())
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	f.Project = Project(c)
	page, err := h.opts.Runs.Runs(c.Request.Context(), f)
	if err != nil {
		failList(c, "list runs", err)
		return
	}
	c.JSON(http.StatusOK, page)
}

// queryRange parses the request's since and until (see TimeRange); on a bad
// value it answers 400 and returns ok false.
func queryRange(c *gin.Context, now time.Time) (since, until time.Time, ok bool) {
	since, until, err := params.TimeRange(c.Query("since"), c.Query("until"), now)
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
	limit, err := params.Limit(c.Query("limit"))
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return time.Time{}, time.Time{}, 0, false
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
