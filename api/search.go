package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/query/traceql"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/params"
)

// Searcher answers TraceQL queries; query.SearchReader implements it.
type Searcher interface {
	Search(ctx context.Context, req query.SearchRequest) (query.SearchPage, error)
	SearchMetrics(ctx context.Context, req query.SearchRequest, step time.Duration) (query.MetricsResult, error)
	SearchKeys(ctx context.Context, project string, since, until time.Time, lim query.SearchLimits) ([]query.SearchKey, error)
	SearchValues(ctx context.Context, project, field string, since, until time.Time, lim query.SearchLimits) ([]query.SearchValue, error)
}

// DefaultSearchWindow is the window of a search that gives no since.
const DefaultSearchWindow = 24 * time.Hour

// SearchError is the body of a 400 answer to a query that does not parse
// or check: Position is the byte offset of the offending text.
type SearchError struct {
	Error    string `json:"error"`
	Position int    `json:"position"`
}

// searchBody is POST /search's body: the GET parameters, for queries too
// long for a URL.
type searchBody struct {
	Query  string `json:"query"`
	Since  string `json:"since"`
	Until  string `json:"until"`
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
	Step   string `json:"step"`
	SQL    bool   `json:"sql"` // answer the compiled statement too (GET: sql=1)
}

// registerSearch mounts GET and POST /search.
func (h *Handler) registerSearch(r gin.IRoutes, spans gin.HandlerFunc) {
	r.GET("/search", spans, h.search)
	r.POST("/search", h.search)
	r.GET("/search/keys", spans, h.searchKeys)
	r.GET("/search/values", spans, h.searchValues)
	h.registerSaved(r)
}

// searchWindow reads a search request's since and until: the last
// DefaultSearchWindow when absent.
func (h *Handler) searchWindow(c *gin.Context, sinceArg, untilArg string) (time.Time, time.Time, bool) {
	now := h.now()
	since, until, err := params.TimeRange(sinceArg, untilArg, now)
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return since, until, false
	}
	if until.IsZero() {
		until = now
	}
	if since.IsZero() {
		since = until.Add(-DefaultSearchWindow)
	}
	return since, until, true
}

// searchKeys answers GET /search/keys: the intrinsics, then the attribute
// keys of the window's spans, most frequent first (autocomplete).
func (h *Handler) searchKeys(c *gin.Context) {
	if h.opts.Search == nil {
		fail(c, http.StatusNotImplemented, "this server does not search")
		return
	}
	since, until, ok := h.searchWindow(c, c.Query("since"), c.Query("until"))
	if !ok {
		return
	}
	keys, err := h.opts.Search.SearchKeys(c.Request.Context(), Project(c), since, until, h.opts.SearchLimits)
	if err != nil {
		failSearch(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"keys": keys})
}

// searchValues answers GET /search/values?key=…: the field's most
// frequent values in the window (autocomplete).
func (h *Handler) searchValues(c *gin.Context) {
	if h.opts.Search == nil {
		fail(c, http.StatusNotImplemented, "this server does not search")
		return
	}
	key := c.Query("key")
	if key == "" {
		fail(c, http.StatusBadRequest, "key: required, a field such as tool or span.gen_ai.request.model")
		return
	}
	since, until, ok := h.searchWindow(c, c.Query("since"), c.Query("until"))
	if !ok {
		return
	}
	values, err := h.opts.Search.SearchValues(c.Request.Context(), Project(c), key, since, until, h.opts.SearchLimits)
	if err != nil {
		failSearch(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"key": key, "values": values})
}

// search answers a query: GET /search?q=…&since=…&until=…&limit=…&cursor=…,
// or POST /search with a searchBody.
func (h *Handler) search(c *gin.Context) {
	if h.opts.Search == nil {
		fail(c, http.StatusNotImplemented, "this server does not search")
		return
	}
	b := searchBody{Query: c.Query("q"), Since: c.Query("since"), Until: c.Query("until"), Cursor: c.Query("cursor"), Step: c.Query("step")}
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			fail(c, http.StatusBadRequest, "limit %q: want a positive number", l)
			return
		}
		b.Limit = n
	}
	if c.Request.Method == http.MethodPost {
		if err := c.ShouldBindJSON(&b); err != nil {
			fail(c, http.StatusBadRequest, "body: %v", err)
			return
		}
	}
	if b.Limit > 1000 {
		fail(c, http.StatusBadRequest, "limit %d: at most 1000", b.Limit)
		return
	}
	since, until, ok := h.searchWindow(c, b.Since, b.Until)
	if !ok {
		return
	}
	req := query.SearchRequest{Project: Project(c), Query: b.Query, Since: since, Until: until,
		Limit: b.Limit, Cursor: b.Cursor, Limits: h.opts.SearchLimits, WithSQL: c.Query("sql") == "1" || b.SQL}
	parsed, err := query.ParseSearch(b.Query, h.opts.SearchLimits)
	if err != nil {
		failSearch(c, err)
		return
	}
	if parsed.Metrics != nil {
		var step time.Duration
		if b.Step != "" {
			if step, err = params.ParseDuration(b.Step); err != nil || step <= 0 {
				fail(c, http.StatusBadRequest, "step %q: want a duration such as 5m", b.Step)
				return
			}
		}
		res, err := h.opts.Search.SearchMetrics(c.Request.Context(), req, step)
		if err != nil {
			failSearch(c, err)
			return
		}
		c.JSON(http.StatusOK, query.MetricsAnswer{Kind: "metrics", MetricsResult: res})
		return
	}
	page, err := h.opts.Search.Search(c.Request.Context(), req)
	if err != nil {
		failSearch(c, err)
		return
	}
	c.JSON(http.StatusOK, page)
}

// The ClickHouse error codes of a statement that hit a bound.
const (
	chTooManyRows      = 158 // TOO_MANY_ROWS: max_rows_to_read
	chTimeoutExceeded  = 159 // TIMEOUT_EXCEEDED: max_execution_time
	chTooManyRowsBytes = 396 // TOO_MANY_ROWS_OR_BYTES
)

// failSearch answers a failed search: 400 with the position for a query
// that does not parse or check, 400 for a bad window or cursor, 503
// saying which bound a query hit, 500 otherwise.
func failSearch(c *gin.Context, err error) {
	var qe *traceql.Error
	var ex *clickhouse.Exception
	switch {
	case errors.As(err, &qe):
		c.AbortWithStatusJSON(http.StatusBadRequest, SearchError{Error: qe.Msg, Position: qe.Pos})
	case errors.Is(err, query.ErrSearchRange), errors.Is(err, query.ErrInvalidCursor):
		fail(c, http.StatusBadRequest, "%v", err)
	case errors.As(err, &ex) && (ex.Code == chTooManyRows || ex.Code == chTooManyRowsBytes):
		fail(c, http.StatusServiceUnavailable, "the query would read more rows than a search may (--search-max-rows): narrow the window or the query")
	case schema.OutOfMemory(err):
		fail(c, http.StatusServiceUnavailable, "the query needs more memory than the store allows a statement: narrow the window or the query")
	case errors.As(err, &ex) && ex.Code == chTimeoutExceeded, errors.Is(err, context.DeadlineExceeded):
		fail(c, http.StatusServiceUnavailable, "the query ran longer than a search may (--search-max-time): narrow the window or the query")
	default:
		fail(c, http.StatusInternalServerError, "search: %v", err)
	}
}

// SavedQueryStore keeps the projects' saved queries: query.SearchReader
// lists them, *schema.Store writes them.
type SavedQueryStore interface {
	SavedQueries(ctx context.Context, project string) ([]query.SavedQuery, error)
	InsertSavedQueries(ctx context.Context, rows []schema.SavedQuery) error
}

// Limits of saved queries, each answered 400.
const (
	// MaxSavedQueryName is the longest name of a saved query, in bytes.
	MaxSavedQueryName = 100
	// MaxSavedQueries is how many queries a project may keep saved.
	MaxSavedQueries = 500
)

// SavedQueries joins the reader and the store of saved queries into a
// SavedQueryStore, for the assembler.
type SavedQueries struct {
	query.SearchReader
	*schema.Store
}

// registerSaved mounts the saved-query routes.
func (h *Handler) registerSaved(r gin.IRoutes) {
	r.GET("/search/saved", h.listSaved)
	r.POST("/search/saved", h.saveQuery)
	r.DELETE("/search/saved/:name", h.deleteSaved)
}

func (h *Handler) listSaved(c *gin.Context) {
	if h.opts.Saved == nil {
		fail(c, http.StatusNotImplemented, "this server does not keep saved queries")
		return
	}
	list, err := h.opts.Saved.SavedQueries(c.Request.Context(), Project(c))
	if err != nil {
		fail(c, http.StatusInternalServerError, "%v", err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"saved": list})
}

// saveQuery answers POST /search/saved {"name", "query"}: saves the query
// under the name (replacing a query saved under it).
func (h *Handler) saveQuery(c *gin.Context) {
	if h.opts.Saved == nil {
		fail(c, http.StatusNotImplemented, "this server does not keep saved queries")
		return
	}
	var b struct{ Name, Query string }
	if err := c.ShouldBindJSON(&b); err != nil {
		fail(c, http.StatusBadRequest, "body: %v", err)
		return
	}
	b.Name = strings.TrimSpace(b.Name)
	switch {
	case b.Name == "":
		fail(c, http.StatusBadRequest, "name: required")
		return
	case len(b.Name) > MaxSavedQueryName || !utf8.ValidString(b.Name):
		fail(c, http.StatusBadRequest, "name: at most %d bytes of UTF-8", MaxSavedQueryName)
		return
	}
	if _, err := query.ParseSearch(b.Query, h.opts.SearchLimits); err != nil {
		failSearch(c, err)
		return
	}
	ctx := c.Request.Context()
	project := Project(c)
	list, err := h.opts.Saved.SavedQueries(ctx, project)
	if err != nil {
		fail(c, http.StatusInternalServerError, "%v", err)
		return
	}
	if len(list) >= MaxSavedQueries && !slices.ContainsFunc(list, func(s query.SavedQuery) bool { return s.Name == b.Name }) {
		fail(c, http.StatusBadRequest, "a project keeps at most %d saved queries: delete one first", MaxSavedQueries)
		return
	}
	now := h.now().UTC()
	row := schema.SavedQuery{Project: project, Name: b.Name, Query: b.Query, SavedAt: now, Version: uint64(now.UnixNano())}
	if err := h.opts.Saved.InsertSavedQueries(ctx, []schema.SavedQuery{row}); err != nil {
		fail(c, http.StatusInternalServerError, "save query: %v", err)
		return
	}
	c.JSON(http.StatusOK, query.SavedQuery{Name: row.Name, Query: row.Query, SavedAt: now})
}

// deleteSaved answers DELETE /search/saved/{name}.
func (h *Handler) deleteSaved(c *gin.Context) {
	if h.opts.Saved == nil {
		fail(c, http.StatusNotImplemented, "this server does not keep saved queries")
		return
	}
	name := c.Param("name")
	ctx := c.Request.Context()
	project := Project(c)
	list, err := h.opts.Saved.SavedQueries(ctx, project)
	if err != nil {
		fail(c, http.StatusInternalServerError, "%v", err)
		return
	}
	if !slices.ContainsFunc(list, func(s query.SavedQuery) bool { return s.Name == name }) {
		fail(c, http.StatusNotFound, "no saved query named %q", name)
		return
	}
	now := h.now().UTC()
	row := schema.SavedQuery{Project: project, Name: name, SavedAt: now, Deleted: 1, Version: uint64(now.UnixNano())}
	if err := h.opts.Saved.InsertSavedQueries(ctx, []schema.SavedQuery{row}); err != nil {
		fail(c, http.StatusInternalServerError, "delete saved query: %v", err)
		return
	}
	c.Status(http.StatusNoContent)
}
