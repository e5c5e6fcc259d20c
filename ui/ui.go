// Package ui serves tally's web UI: server-rendered HTML shells per page
// (so every page answers with the right status code) and one small ES module
// that reads the same /api/v1 JSON the CLI uses and draws tables, the run
// waterfall and SVG charts. Everything is embedded; nothing is loaded from
// the network besides tally's own API.
package ui

import (
	"cmp"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/support/params"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// RunChecker tells whether a run exists in a project and finds runs by
// the short id the UI shows; *query.Reader implements it.
type RunChecker interface {
	RunExists(ctx context.Context, project, traceID string) (bool, error)
	TraceIDsWithPrefix(ctx context.Context, project, prefix string, limit int) ([]string, error)
}

// Option configures Handler.
type Option func(*config)

type config struct {
	runs    RunChecker
	project func(*http.Request) string
	log     *slog.Logger
	now     func() time.Time
}

// WithRuns makes run pages answer 404 for runs that do not exist in the
// caller's project; project reads the caller's project from a request (for
// example api.RequestProject). Without it every well-formed run id is
// served and the page itself reports a missing run.
func WithRuns(runs RunChecker, project func(*http.Request) string) Option {
	return func(c *config) { c.runs, c.project = runs, project }
}

// WithLogger logs lookups that fail (nil discards).
func WithLogger(log *slog.Logger) Option {
	return func(c *config) {
		if log != nil {
			c.log = log
		}
	}
}

// handler serves the UI.
type handler struct {
	cfg     config
	pages   map[string]*template.Template
	static  http.Handler
	version string
}

// page names, each with templates/<name>.html; every page may also use the
// shared blocks in partialTemplates.
var pageNames = []string{"runs", "run", "conversations", "conversation", "costs", "tools", "cache", "tasks", "compare", "reliability", "alerts", "explore", "error"}

// partialTemplates define blocks shared by several pages: "range", the
// time-range form of the tools and cache pages.
var partialTemplates = []string{"templates/layout.html", "templates/range.html"}

// Handler returns the UI. It serves GET and HEAD for:
//
//	/, /runs              the run list (filters in the query string)
//	/runs/{trace_id}      one run: totals, waterfall, span details
//	/conversations        conversations, most recently active first
//	/conversations/{id}   a conversation's runs in order and its transcript
//	/explore              metrics queries: a chart and a table
//	/costs, /tools, /cache, /alerts
//	/static/...           the embedded script and stylesheet
//
// Unknown paths answer a 404 page (JSON under /api/), bad query parameters
// a 400 page.
func Handler(opts ...Option) http.Handler {
	cfg := config{log: slog.New(slog.DiscardHandler), now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(fmt.Sprintf("ui: embedded static files: %v", err))
	}
	h := &handler{cfg: cfg, pages: map[string]*template.Template{}, version: assetVersion(sub)}
	funcs := template.FuncMap{"selected": selected, "runSorts": query.RunSortOptions, "sortSelected": sortSelected,
		"sortParam": sortParam}
	for _, name := range pageNames {
		h.pages[name] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(templateFS, append(partialTemplates, "templates/"+name+".html")...))
	}
	fileServer := http.FileServer(http.FS(filesOnly{sub}))
	h.static = http.StripPrefix("/static", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("v") == h.version {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			// The modules app.js imports are fetched without ?v: the
			// version as ETag lets the browser revalidate them with a 304.
			w.Header().Set("Cache-Control", "no-cache")
			w.Header().Set("ETag", `"`+h.version+`"`)
		}
		fileServer.ServeHTTP(w, r)
	}))
	return h
}

// filesOnly is a file system without directories, so that http.FileServer
// serves files and answers 404 for a directory instead of listing it.
type filesOnly struct{ fs.FS }

// Open opens a file; a directory does not exist.
func (f filesOnly) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := file.Stat()
	if err == nil && st.IsDir() {
		err = fs.ErrNotExist
	}
	if err != nil {
		file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return file, nil
}

// assetVersion hashes the static files, for cache-busting asset URLs.
func assetVersion(files fs.FS) string {
	sum := sha256.New()
	_ = fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, path)
		if err != nil {
			return err
		}
		sum.Write([]byte(path))
		sum.Write(b)
		return nil
	})
	return hex.EncodeToString(sum.Sum(nil))[:12]
}

// view is what a page template renders.
type view struct {
	Title   string
	Nav     string // the active navigation entry
	Page    string // data-page: which renderer the script runs
	ID      string // the trace or conversation id of the page
	Query   url.Values
	Status  int
	Message string
	Version string
	// DefaultSince is the range the page shows without a since (24h; the
	// tasks page 7d, as the API and CLI).
	DefaultSince string
}

// Since is the page's since, or its default.
func (v view) Since() string {
	if s := v.Q("since"); s != "" {
		return s
	}
	return cmp.Or(v.DefaultSince, "24h")
}

// Q returns a query parameter of the page.
func (v view) Q(key string) string { return v.Query.Get(key) }

// selected renders the selected attribute when a equals b.
func selected(a, b string) template.HTMLAttr {
	if a == b {
		return "selected"
	}
	return ""
}

// sortParam is an order as the page's sort parameter names it: the
// default order is no parameter at all, so a filtered page's URL holds only
// what the user chose.
func sortParam(s query.RunSort) string {
	if s == query.SortStart {
		return ""
	}
	return string(s)
}

// sortSelected renders the selected attribute on the run list's order
// the page's sort parameter names ("" is the default order).
func sortSelected(param string, opt query.RunSort) template.HTMLAttr {
	if s, err := query.ParseRunSort(param); err == nil && s == opt {
		return "selected"
	}
	return ""
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if strings.HasPrefix(path, "/static/") {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.static.ServeHTTP(w, r)
		return
	}
	if path == "/api" || strings.HasPrefix(path, "/api/") {
		// An API route this build does not have: the script shows
		// "not available in this build" for it.
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(api.Error{Error: "not available in this build: " + path}) //nolint:errcheck // the client went away
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		h.fail(w, r, http.StatusMethodNotAllowed, "This page only answers GET.")
		return
	}
	q := r.URL.Query()
	v := view{Query: q, Version: h.version}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case path == "/" || path == "/runs" || path == "/runs/":
		v.Title, v.Nav, v.Page = "Runs", "runs", "runs"
		if err := h.checkRunFilters(q); err != nil {
			h.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
	case len(parts) == 2 && parts[0] == "runs":
		id, prefix, err := params.TraceIDOrPrefix(parts[1])
		if err != nil {
			h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("%q is not a trace id: want 32 hex characters, or the first %d or more of them.", parts[1], params.MinTracePrefix))
			return
		}
		if prefix && h.cfg.runs != nil {
			// A short id (as the run list shows) opens its run when it names one.
			ids, err := h.cfg.runs.TraceIDsWithPrefix(r.Context(), h.cfg.project(r), id, 11)
			switch {
			case err != nil:
				h.fail(w, r, http.StatusServiceUnavailable, "Could not look the run up: "+err.Error())
			case len(ids) == 0:
				h.fail(w, r, http.StatusNotFound, "No trace id in this project starts with "+id+".")
			case len(ids) > 1:
				h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("%s is the start of %d or more trace ids (%s); give more characters.", id, len(ids), strings.Join(ids[:min(len(ids), 10)], ", ")))
			default:
				http.Redirect(w, r, "/runs/"+ids[0], http.StatusFound)
			}
			return
		}
		if prefix {
			h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("%q is not a trace id: want 32 hex characters.", parts[1]))
			return
		}
		if h.cfg.runs != nil {
			ok, err := h.cfg.runs.RunExists(r.Context(), h.cfg.project(r), id)
			if err != nil {
				h.cfg.log.Error("ui: look up run", "trace_id", id, "err", err)
				h.fail(w, r, http.StatusServiceUnavailable, "Could not look the run up: "+err.Error())
				return
			}
			if !ok {
				h.fail(w, r, http.StatusNotFound, "No run with trace id "+id+" in this project. It may not have been sent yet, or belong to another project.")
				return
			}
		}
		v.Title, v.Nav, v.Page, v.ID = "Run "+id[:8], "runs", "run", id
	case path == "/explore":
		v.Title, v.Nav, v.Page = "Explore", "explore", "explore"
		if err := h.checkTimes(q); err != nil {
			h.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
	case path == "/conversations":
		v.Title, v.Nav, v.Page = "Conversations", "conversations", "conversations"
		if err := h.checkTimes(q); err != nil {
			h.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
	case len(parts) == 2 && parts[0] == "conversations" && parts[1] != "":
		id, err := url.PathUnescape(parts[1])
		if err != nil {
			h.fail(w, r, http.StatusBadRequest, "Bad conversation id.")
			return
		}
		v.Title, v.Nav, v.Page, v.ID = "Conversation "+id, "conversations", "conversation", id
	case path == "/costs":
		v.Title, v.Nav, v.Page = "Costs", "costs", "costs"
		if err := h.checkCostFilters(q); err != nil {
			h.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
	case path == "/tools" || path == "/cache":
		v.Title, v.Nav, v.Page = strings.ToUpper(path[1:2])+path[2:], path[1:], path[1:]
		if err := h.checkTimes(q); err != nil {
			h.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
	case path == "/tasks":
		v.Title, v.Nav, v.Page, v.DefaultSince = "Tasks", "tasks", "tasks", "7d"
		if err := h.checkTimes(q); err != nil {
			h.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
	case path == "/reliability":
		v.Title, v.Nav, v.Page = "Reliability", "reliability", "reliability"
		if err := h.checkTimes(q); err != nil {
			h.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
	case path == "/compare":
		v.Title, v.Nav, v.Page = "Compare "+q.Get("task"), "tasks", "compare"
		if _, err := params.ParseDuration(cmp.Or(q.Get("since"), "30d")); err != nil {
			h.fail(w, r, http.StatusBadRequest, "since: "+err.Error())
			return
		}
	case path == "/alerts":
		v.Title, v.Nav, v.Page = "Alerts", "alerts", "alerts"
		if s := q.Get("state"); s != "" && s != "firing" && s != "pending" && s != "resolved" {
			h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("state %q: want firing, pending or resolved.", s))
			return
		}
	default:
		h.fail(w, r, http.StatusNotFound, "There is no page at "+path+".")
		return
	}
	h.render(w, v.Page, http.StatusOK, v)
}

// checkTimes validates since and until like the API does.
func (h *handler) checkTimes(q url.Values) error {
	_, _, err := params.TimeRange(q.Get("since"), q.Get("until"), h.cfg.now())
	return err
}

// checkRunFilters refuses the filters the API would refuse, with the same
// parser (sort and direction included).
func (h *handler) checkRunFilters(q url.Values) error {
	_, err := query.ParseRunFilter(q, h.cfg.now())
	return err
}

func (h *handler) checkCostFilters(q url.Values) error {
	if err := h.checkTimes(q); err != nil {
		return err
	}
	switch b := q.Get("bucket"); b {
	case "", "minute", "hour", "day":
	default:
		return fmt.Errorf("bucket %q: want minute, hour or day", b)
	}
	return nil
}

// fail renders the error page with its status code.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	v := view{Title: http.StatusText(status), Page: "error", Status: status, Message: msg, Query: r.URL.Query(), Version: h.version}
	h.render(w, "error", status, v)
}

func (h *handler) render(w http.ResponseWriter, name string, status int, v view) {
	var b strings.Builder
	if err := h.pages[name].Execute(&b, v); err != nil {
		h.cfg.log.Error("ui: render page", "page", name, "err", err)
		http.Error(w, "render page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, b.String())
}
