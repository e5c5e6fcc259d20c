// Package server assembles tally's HTTP surface on one listener: the OTLP
// receiver at /v1/traces, the JSON API under /api/v1, the UI at /,
// /metrics, /healthz and /readyz, and runs the background work (writer,
// rollups, alert evaluation) for as long as the server runs.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/deadletter"
	"github.com/tallyhq/tally/ingest/durable"
	"github.com/tallyhq/tally/ingest/receiver"
	"github.com/tallyhq/tally/ingest/wire"
	"github.com/tallyhq/tally/ingest/writer"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/rollup"
	"github.com/tallyhq/tally/schema"
)

// ReadinessCheck reports why a component is not ready (nil when it is).
type ReadinessCheck func(ctx context.Context) error

// Authenticator resolves a request's credentials (Authorization: Bearer, or
// a UI session cookie) to the caller's project. Errors wrapping
// receiver.ErrUnauthenticated are answered 401, receiver.ErrForbidden 403.
// Ingest is asked for /v1/traces (a key with the ingest scope); Read for the
// API, UI and CLI (a key with the read scope). package auth implements it.
type Authenticator interface {
	AuthenticateIngest(r *http.Request) (project string, err error)
	AuthenticateRead(r *http.Request) (project string, err error)
}

// MetricsAuthenticator is implemented by an Authenticator that guards
// /metrics, which spans every project: AuthenticateMetrics returns nil when
// the caller may scrape, else an error wrapping receiver.ErrUnauthenticated
// (401) or receiver.ErrForbidden (403). With an Authenticator that does not
// implement it, /metrics is refused; with no Authenticator it is open.
type MetricsAuthenticator interface {
	AuthenticateMetrics(r *http.Request) error
}

// HTTPLimits bound every connection, whatever the route.
type HTTPLimits struct {
	ReadHeaderTimeout time.Duration // to read a request's headers
	ReadTimeout       time.Duration // to read a whole request, body included
	WriteTimeout      time.Duration // to write the answer
	IdleTimeout       time.Duration // keep-alive connections
	MaxHeaderBytes    int           // request line and headers; over it: 431 (Go allows 4 KiB of slack)
}

// DefaultHTTPLimits are the connection limits unless configured otherwise.
func DefaultHTTPLimits() HTTPLimits {
	return HTTPLimits{
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

// Options configure a Server. Store is required; zero fields take defaults.
type Options struct {
	Store    *schema.Store
	Receiver receiver.Config
	Writer   writer.Config
	// Durable, when set, puts the durable log between the receiver and the
	// writer: a 200 from /v1/traces then means fsynced in Durable.Dir. Nil
	// acknowledges only after the ClickHouse INSERT.
	Durable   *DurableLog
	Normalize ingest.Options // Project is ignored: it comes from authentication
	// Catalog turns on costs, cache health and the cost rollup (it is also
	// Normalize's pricer); nil serves runs only.
	Catalog *pricing.Catalog
	// Reader is the query reader, shared with what is built beside the
	// server (the alert evaluator, the metrics exporter); nil builds one.
	Reader *query.Reader
	// API configures the JSON API (alerts, limits, logger); the server adds
	// the explainer.
	API    api.Options
	Logger *slog.Logger
	// Registry receives tally's metrics and is served at /metrics; nil makes
	// a fresh one (NewRegistry).
	Registry *prometheus.Registry
	// UI serves everything not otherwise routed (the web UI); nil serves a
	// placeholder page.
	UI http.Handler
	// HTTP bounds connections; zero fields take DefaultHTTPLimits.
	HTTP HTTPLimits
	// Auth authenticates every request; nil serves one project, "default",
	// without authentication (tally serve allows that only on loopback).
	Auth Authenticator
	// Public routes are served without authentication (e.g. the UI's sign-in
	// page and static assets), keyed by path; they are registered first.
	Public map[string]http.Handler
	// AllowedHosts are the Host header names (or IP addresses) served while
	// authentication is off, besides the loopback ones (localhost,
	// 127.0.0.0/8, ::1), which always are; "*" allows any. Any other Host is
	// refused with 403, so that a web page whose DNS name is rebound to this
	// address cannot use a visitor's browser to read the server. With
	// authentication on, every Host is served: the key is what protects.
	AllowedHosts []string
	// Jobs run in the background for as long as the server serves (key
	// refresh, alert evaluation, metrics export, late migrations), besides
	// the server's own (writer, durable log, rollup).
	Jobs []func(ctx context.Context)
	// Checks are reported by /readyz besides the server's own (ClickHouse,
	// schema, durable log).
	Checks map[string]ReadinessCheck
	// Degraded are reported by /readyz under "degraded" without failing
	// it: something operators must know that does not stop serving (a
	// part the store set aside: its rows are missing, the rest is served).
	Degraded map[string]ReadinessCheck
	// SpansKeptFrom is what retention keeps of every project's spans
	// (retention.Policy.SpansKeptFrom): the rollup leaves older hours as
	// they are. nil: spans are kept forever.
	SpansKeptFrom func(now time.Time) time.Time
	// WriteGuard, when set, refuses writes (/v1/traces, the API's writes)
	// with 503 and its Retry-After while it has an error (the free-space
	// floor: *diskguard.Guard), and fails /readyz and /readyz/ingest.
	WriteGuard WriteGuard
}

// diskCheck is the readiness check of the write guard, in /readyz and
// /readyz/ingest alike.
const diskCheck = "disk"

// WriteGuard says whether writes are refused for now, and for how long to
// tell clients to wait.
type WriteGuard interface {
	Err() error
	RetryAfter() time.Duration
}

// guardedSink refuses batches while the guard has an error: before the
// durable log takes them, so nothing is acknowledged that the disk may
// not hold.
type guardedSink struct {
	receiver.Sink
	guard WriteGuard
}

// Accept refuses with 503 + Retry-After while the guard objects.
func (g guardedSink) Accept(ctx context.Context, b ingest.Batch) error {
	if err := g.guard.Err(); err != nil {
		return receiver.Unavailable(g.guard.RetryAfter(), err)
	}
	return g.Sink.Accept(ctx, b)
}

// guardWrites is the API writes' middleware of the same guard.
func (s *Server) guardWrites() gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.opts.WriteGuard == nil {
			return
		}
		if err := s.opts.WriteGuard.Err(); err != nil {
			c.Header("Retry-After", strconv.Itoa(int(math.Ceil(s.opts.WriteGuard.RetryAfter().Seconds()))))
			c.AbortWithStatusJSON(http.StatusServiceUnavailable, api.Error{Error: err.Error()})
		}
	}
}

// DurableLog is where the durable log lives and how it behaves; its batch
// bounds follow the writer's (Options.Writer).
type DurableLog struct {
	Dir    string
	Config durable.Config
	// Stream has the drain hold one INSERT per table open across batches
	// (durable.Config.Begin with the writer's streams), committed per
	// Config.CommitSpans: larger parts for ClickHouse at the memory of one
	// batch. Ignored for the embedded store, whose HTTP client would hold
	// the whole INSERT in memory.
	Stream bool
	// StreamBatchBytes bounds the record bytes the drain holds at a time
	// while it streams, in place of the writer's MaxBatchBytes (which then
	// bounds nothing of the drain); 0 means durable.DefaultStreamBatchBytes.
	StreamBatchBytes int64
	// DeadLetterDir is where records the store refuses for good go
	// (durable.Config.DeadLetter), so they do not block the records behind
	// them; "" keeps retrying them forever.
	DeadLetterDir string
}

// NewRegistry returns a metrics registry with the Go and process collectors,
// for Options.Registry (build it first when other components register on it).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Switchable is implemented by an Authenticator that can be off (package
// auth's Keyring while no key exists), in which case the server guards the
// Host header as without an Authenticator (see Options.AllowedHosts).
type Switchable interface {
	Enabled() bool
}

// Server is a running tally: HTTP routes and background jobs.
type Server struct {
	opts     Options
	log      *slog.Logger
	engine   *gin.Engine
	writer   *writer.Writer
	reader   *query.Reader
	registry *prometheus.Registry

	mu     sync.Mutex
	jobs   []func(ctx context.Context)
	checks map[string]ReadinessCheck
	// ingestChecks name the checks /readyz/ingest reports.
	ingestChecks map[string]bool
	api          *api.Handler
	sink         receiver.Sink
}

// New builds a server in data-flow order: writer, durable log, receiver,
// readers, API; every component comes from opts, none is switched on later.
func New(opts Options) (*Server, error) {
	if opts.Store == nil {
		return nil, errors.New("server: a store is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Registry == nil {
		opts.Registry = NewRegistry()
	}
	if opts.Reader == nil {
		opts.Reader = query.NewReader(opts.Store)
	}
	def := DefaultHTTPLimits()
	if opts.HTTP.ReadHeaderTimeout <= 0 {
		opts.HTTP.ReadHeaderTimeout = def.ReadHeaderTimeout
	}
	if opts.HTTP.ReadTimeout <= 0 {
		opts.HTTP.ReadTimeout = def.ReadTimeout
	}
	if opts.HTTP.WriteTimeout <= 0 {
		opts.HTTP.WriteTimeout = def.WriteTimeout
	}
	if opts.HTTP.IdleTimeout <= 0 {
		opts.HTTP.IdleTimeout = def.IdleTimeout
	}
	if opts.HTTP.MaxHeaderBytes <= 0 {
		opts.HTTP.MaxHeaderBytes = def.MaxHeaderBytes
	}
	gin.SetMode(gin.ReleaseMode)
	s := &Server{
		opts:     opts,
		log:      opts.Logger,
		engine:   gin.New(),
		reader:   opts.Reader,
		registry: opts.Registry,
		jobs:     append([]func(context.Context){}, opts.Jobs...),
		checks:   map[string]ReadinessCheck{},

		ingestChecks: map[string]bool{},
	}
	for name, check := range opts.Checks {
		s.checks[name] = check
	}

	// Writer, then the durable log in front of it.
	s.writer = writer.New(opts.Store, opts.Writer, opts.Logger)
	s.sink = s.writer
	s.jobs = append(s.jobs, s.writer.Run)
	if err := registerWriterMetrics(opts.Registry, s.writer); err != nil {
		return nil, err
	}
	s.checks["clickhouse"] = func(ctx context.Context) error { return opts.Store.Ping(ctx) }
	s.checks["schema"] = func(ctx context.Context) error {
		v, err := opts.Store.SchemaVersion(ctx)
		if err != nil {
			return err
		}
		if v < schema.LatestVersion() {
			return fmt.Errorf("schema version %d, want %d: run tally migrate", v, schema.LatestVersion())
		}
		return nil
	}
	if opts.Durable != nil {
		if err := s.openDurable(*opts.Durable); err != nil {
			return nil, err
		}
	}

	// Readers and the API: with a price catalog, costs and cache health
	// too; the cost reader embeds the plain reader, so runs, content and
	// fixtures are served the same either way.
	var runs api.Runs = s.reader
	if opts.Catalog != nil {
		runs = query.NewCostReader(s.reader, opts.Catalog)
		s.jobs = append(s.jobs, rollup.New(opts.Store, rollup.Config{Logger: opts.Logger, KeptFrom: opts.SpansKeptFrom}).Run)
	}
	apiOpts := opts.API
	apiOpts.Explain = query.NewExplainer(s.reader, opts.Normalize)
	if apiOpts.OutcomeStore == nil {
		apiOpts.OutcomeStore = opts.Store
	}
	if apiOpts.Logger == nil {
		apiOpts.Logger = opts.Logger
	}
	s.api = api.New(runs, apiOpts)
	return s, nil
}

// openDurable opens the durable log in front of the writer and runs it.
func (s *Server) openDurable(d DurableLog) error {
	cfg := d.Config
	cfg.MaxBatchSpans = s.writer.MaxBatchSpans()
	cfg.MaxBatchBytes = s.writer.MaxBatchBytes()
	if d.Stream && !s.opts.Store.Embedded() {
		interval := cfg.CommitInterval
		if interval <= 0 {
			interval = durable.DefaultCommitInterval
		}
		if limit := s.writer.InsertTimeout() / 2; interval > limit {
			return fmt.Errorf("durable log: commit interval %s: must be at most half the INSERT timeout (%s), which bounds a stream from open to commit",
				interval, limit)
		}
		cfg.Begin = func(ctx context.Context) (durable.Stream, error) { return s.writer.Begin(ctx) }
		cfg.StreamTimeout = s.writer.InsertTimeout()
		cfg.MaxBatchBytes = d.StreamBatchBytes
		if cfg.MaxBatchBytes <= 0 {
			cfg.MaxBatchBytes = durable.DefaultStreamBatchBytes
		}
	}
	if d.DeadLetterDir != "" {
		dir, err := deadletter.Open(d.DeadLetterDir)
		if err != nil {
			return fmt.Errorf("durable log: %w", err)
		}
		cfg.DeadLetter, cfg.Unstorable = dir, schema.Unstorable
		if n, err := dir.Count(); err == nil && n > 0 {
			s.log.Warn("dead-letter directory holds records the store refused; inspect them with `tally deadletter list`",
				"entries", n, "dir", dir.Path())
		}
	}
	sink, err := durable.Open(d.Dir, s.writer, cfg, s.log)
	if err != nil {
		return fmt.Errorf("open durable log: %w", err)
	}
	s.sink = sink
	s.jobs = append(s.jobs, func(ctx context.Context) {
		if err := sink.Run(ctx); err != nil {
			s.log.Error("durable log stopped delivering; spans stay in the log until this is fixed", "err", err)
		}
		if err := sink.Close(); err != nil {
			s.log.Error("close durable log", "err", err)
		}
	})
	s.checks["durable_log"] = func(context.Context) error { return sink.Ready() }
	s.ingestChecks["durable_log"] = true
	// Not an ingest check: while the drain is stuck the log still takes
	// spans, up to its cap.
	s.checks["durable_drain"] = func(context.Context) error { return sink.Draining() }
	return registerDurableMetrics(s.registry, sink)
}

// LoginRedirector is implemented by an Authenticator that signs browsers in
// on a page of its own: for an unauthenticated request it returns where to
// redirect it (e.g. "/login?next=/runs"), or "" to answer 401.
type LoginRedirector interface {
	LoginURL(r *http.Request) string
}

// Handler builds the HTTP routes. Call once.
func (s *Server) Handler() (http.Handler, error) {
	metrics, err := receiver.NewMetrics(s.registry)
	if err != nil {
		return nil, fmt.Errorf("register receiver metrics: %w", err)
	}
	nopts := s.opts.Normalize
	normalize := func(dst ingest.Batch, tr wire.Traces, project string) (ingest.Batch, ingest.Rejected) {
		o := nopts
		o.Project = project
		return ingest.NormalizeTracesInto(dst, tr, o)
	}
	var ingestAuth receiver.Authenticator
	if s.opts.Auth != nil {
		ingestAuth = ingestAuthFunc(s.opts.Auth.AuthenticateIngest)
	}
	sink := s.sink
	if s.opts.WriteGuard != nil {
		sink = guardedSink{Sink: s.sink, guard: s.opts.WriteGuard}
		s.mu.Lock()
		s.checks[diskCheck] = func(context.Context) error { return s.opts.WriteGuard.Err() }
		s.mu.Unlock()
	}
	rcfg := s.opts.Receiver
	_, rcfg.SinkCopies = s.sink.(*durable.Sink) // the log encodes a batch before Accept returns
	recv := receiver.New(rcfg, normalize, sink, ingestAuth, s.log, metrics)

	e := s.engine
	e.Use(gin.CustomRecovery(func(c *gin.Context, err any) {
		s.log.Error("handler panic", "path", c.Request.URL.Path, "panic", err)
		c.AbortWithStatusJSON(http.StatusInternalServerError, api.Error{Error: "internal error"})
	}))
	e.Use(s.hostCheck())
	e.Any("/v1/traces", gin.WrapH(recv))
	e.GET("/metrics", s.metricsAuth(), gin.WrapH(promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry})))
	e.GET("/api/v1/storage", s.metricsAuth(), s.api.Storage)
	dl := e.Group("/api/v1/deadletter", s.metricsAuth())
	dl.GET("", s.listDeadLetters)
	dl.GET("/:id", s.showDeadLetter)
	dl.POST("/:id/replay", s.replayDeadLetter)
	dl.DELETE("/:id", s.discardDeadLetter)
	e.GET("/healthz", func(c *gin.Context) { c.String(http.StatusOK, "ok\n") })
	e.GET("/readyz", s.readyz)
	e.GET("/readyz/ingest", s.readyzIngest)
	for path, h := range s.opts.Public {
		e.Any(path, gin.WrapH(h))
	}
	// Everything below reads data: the caller's project comes from here, and
	// only from here (api.Project reads it).
	read := s.readAuth()
	s.api.Register(e.Group("/api/v1", read))
	// Writes through the API (outcomes) take the ingest scope, like
	// /v1/traces: an evaluator posts with the key it sends spans with.
	s.api.RegisterWrites(e.Group("/api/v1", s.writeAuth(), s.guardWrites()))
	if s.opts.UI != nil {
		e.NoRoute(read, func(c *gin.Context) { s.opts.UI.ServeHTTP(c.Writer, c.Request) })
	} else {
		e.GET("/", func(c *gin.Context) {
			c.Data(http.StatusOK, "text/html; charset=utf-8", []byte(placeholder))
		})
	}
	return e, nil
}

const placeholder = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>tally</title></head>
<body><h1>tally</h1><p>Runs: <a href="/api/v1/runs">/api/v1/runs</a>. Send OTLP/HTTP traces to <code>/v1/traces</code>.</p></body></html>`

// ingestAuthFunc adapts a function to receiver.Authenticator.
type ingestAuthFunc func(r *http.Request) (string, error)

func (f ingestAuthFunc) Authenticate(r *http.Request) (string, error) { return f(r) }

// writeAuth is the middleware that sets the caller's project for the
// API's writes: a key with the ingest scope (no UI session).
func (s *Server) writeAuth() gin.HandlerFunc {
	return s.authenticate(func(r *http.Request) (string, error) { return s.opts.Auth.AuthenticateIngest(r) }, false)
}

// readAuth is the middleware that sets the caller's project for every read.
func (s *Server) readAuth() gin.HandlerFunc {
	return s.authenticate(func(r *http.Request) (string, error) { return s.opts.Auth.AuthenticateRead(r) }, true)
}

// authenticate is the middleware that sets the caller's project from
// authn (every request's project is "default" without an Authenticator):
// 403 for a key without the scope, 401 (or, with login, the UI's login
// page) without a key, 503 when authentication is unavailable.
func (s *Server) authenticate(authn func(*http.Request) (string, error), login bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.opts.Auth == nil {
			c.Request = api.WithProject(c.Request, "default")
			return
		}
		project, err := authn(c.Request)
		switch {
		case err == nil:
			c.Request = api.WithProject(c.Request, project)
		case errors.Is(err, receiver.ErrForbidden):
			c.AbortWithStatusJSON(http.StatusForbidden, api.Error{Error: err.Error()})
		case errors.Is(err, receiver.ErrUnauthenticated):
			if lr, ok := s.opts.Auth.(LoginRedirector); ok && login {
				if u := lr.LoginURL(c.Request); u != "" {
					c.Redirect(http.StatusFound, u)
					c.Abort()
					return
				}
			}
			c.Header("WWW-Authenticate", `Bearer realm="tally"`)
			c.AbortWithStatusJSON(http.StatusUnauthorized, api.Error{Error: err.Error()})
		default:
			c.AbortWithStatusJSON(http.StatusServiceUnavailable, api.Error{Error: "authentication unavailable: " + err.Error()})
		}
	}
}

// hostCheck refuses, while authentication is off, a request whose Host is
// neither loopback nor in Options.AllowedHosts (DNS rebinding). Health
// probes are exempt: they arrive by address and hold no project data.
func (s *Server) hostCheck() gin.HandlerFunc {
	allowed := make(map[string]bool, len(s.opts.AllowedHosts))
	for _, h := range s.opts.AllowedHosts {
		if h = normalHost(h); h != "" {
			allowed[h] = true
		}
	}
	return func(c *gin.Context) {
		if allowed["*"] || !s.authOff() {
			return
		}
		switch c.Request.URL.Path {
		case "/healthz", "/readyz", "/readyz/ingest":
			return
		}
		host := c.Request.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = normalHost(host)
		// No Host at all (HTTP/1.0) names no DNS name that could be rebound.
		if host == "" || host == "localhost" || allowed[host] {
			return
		}
		if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
			return
		}
		c.AbortWithStatusJSON(http.StatusForbidden, api.Error{Error: fmt.Sprintf(
			"host %q is not served while authentication is off (only loopback names and --allowed-hosts are): "+
				"use http://localhost, add the name to --allowed-hosts, or configure API keys", c.Request.Host)})
	}
}

// normalHost is a Host name as compared: lower case, without IPv6 brackets
// or a trailing dot.
func normalHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(h, ".")
}

// authOff reports whether requests are served without authentication.
func (s *Server) authOff() bool {
	if s.opts.Auth == nil {
		return true
	}
	sw, ok := s.opts.Auth.(Switchable)
	return ok && !sw.Enabled()
}

// metricsAuth guards /metrics (see MetricsAuthenticator).
func (s *Server) metricsAuth() gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.opts.Auth == nil {
			return
		}
		ma, ok := s.opts.Auth.(MetricsAuthenticator)
		if !ok {
			c.AbortWithStatusJSON(http.StatusForbidden, api.Error{Error: "/metrics is not served: the authenticator has no metrics scope"})
			return
		}
		err := ma.AuthenticateMetrics(c.Request)
		switch {
		case err == nil:
		case errors.Is(err, receiver.ErrForbidden):
			c.AbortWithStatusJSON(http.StatusForbidden, api.Error{Error: err.Error()})
		case errors.Is(err, receiver.ErrUnauthenticated):
			c.Header("WWW-Authenticate", `Bearer realm="tally"`)
			c.AbortWithStatusJSON(http.StatusUnauthorized, api.Error{Error: err.Error()})
		default:
			c.AbortWithStatusJSON(http.StatusServiceUnavailable, api.Error{Error: "authentication unavailable: " + err.Error()})
		}
	}
}

// readyz answers /readyz: every check, so a load balancer takes the
// server out while anything is degraded (ClickHouse unreachable, schema
// behind, durable log full).
func (s *Server) readyz(c *gin.Context) { s.report(c, false) }

// readyzIngest answers /readyz/ingest: only whether spans are accepted, so
// that during a ClickHouse outage, while the durable log takes spans, the
// ingest path stays in the load balancer.
func (s *Server) readyzIngest(c *gin.Context) { s.report(c, true) }

func (s *Server) report(c *gin.Context, ingestOnly bool) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 3*time.Second)
	defer cancel()
	s.mu.Lock()
	checks := make(map[string]ReadinessCheck, len(s.checks))
	for k, v := range s.checks {
		if !ingestOnly || len(s.ingestChecks) == 0 || s.ingestChecks[k] || k == diskCheck {
			checks[k] = v
		}
	}
	s.mu.Unlock()
	status := map[string]string{}
	ok := true
	for name, check := range checks {
		if err := check(ctx); err != nil {
			status[name] = err.Error()
			ok = false
		} else {
			status[name] = "ok"
		}
	}
	code := http.StatusOK
	if !ok {
		code = http.StatusServiceUnavailable
	}
	body := gin.H{"ready": ok, "checks": status}
	if !ingestOnly {
		degraded := map[string]string{}
		for name, check := range s.opts.Degraded {
			if err := check(ctx); err != nil {
				degraded[name] = err.Error()
			}
		}
		if len(degraded) > 0 {
			body["degraded"] = degraded
		}
	}
	c.JSON(code, body)
}

// Serve runs the background jobs and serves HTTP on ln until ctx ends, then
// shuts down gracefully: in-flight requests finish, then the jobs (the
// writer drains what it acknowledged).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	h, err := s.Handler()
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.opts.HTTP.ReadHeaderTimeout,
		ReadTimeout:       s.opts.HTTP.ReadTimeout,
		WriteTimeout:      s.opts.HTTP.WriteTimeout,
		IdleTimeout:       s.opts.HTTP.IdleTimeout,
		MaxHeaderBytes:    s.opts.HTTP.MaxHeaderBytes,
	}
	jobCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	s.mu.Lock()
	for _, job := range s.jobs {
		wg.Add(1)
		go func() { defer wg.Done(); job(jobCtx) }()
	}
	s.mu.Unlock()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = srv.Shutdown(sctx)
		cancel()
	}
	stopJobs()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// registerWriterMetrics exports the ClickHouse writer's counters.
func registerWriterMetrics(reg prometheus.Registerer, w *writer.Writer) error {
	stat := func(f func(writer.Stats) float64) func() float64 { return func() float64 { return f(w.Stats()) } }
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tally_writer_queued_rows", Help: "Rows accepted by the writer and not yet inserted into ClickHouse."},
			stat(func(s writer.Stats) float64 { return float64(s.QueuedSpans) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tally_writer_written_spans_total", Help: "Span rows inserted into ClickHouse."},
			stat(func(s writer.Stats) float64 { return float64(s.WrittenSpans) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tally_writer_insert_errors_total", Help: "Failed ClickHouse INSERT attempts (each is retried)."},
			stat(func(s writer.Stats) float64 { return float64(s.InsertErrors) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tally_writer_batches_total", Help: "ClickHouse INSERT batches written."},
			stat(func(s writer.Stats) float64 { return float64(s.Batches) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tally_writer_healthy", Help: "1 when the last ClickHouse INSERT succeeded."},
			stat(func(s writer.Stats) float64 {
				if s.Healthy {
					return 1
				}
				return 0
			})),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register writer metrics: %w", err)
		}
	}
	return nil
}

// registerDurableMetrics exports the durable log's figures.
func registerDurableMetrics(reg prometheus.Registerer, sink *durable.Sink) error {
	gauge := func(name, help string, f func(durable.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(sink.Stats()) })
	}
	counter := func(name, help string, f func(durable.Stats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return f(sink.Stats()) })
	}
	for _, c := range []prometheus.Collector{
		gauge("tally_wal_bytes", "Bytes of acknowledged spans in the durable log not yet in ClickHouse.", func(s durable.Stats) float64 { return float64(s.WALBytes) }),
		gauge("tally_wal_max_bytes", "Durable log size cap.", func(s durable.Stats) float64 { return float64(s.WALMaxBytes) }),
		gauge("tally_wal_pending_records", "Durable log records not yet delivered to ClickHouse.", func(s durable.Stats) float64 { return float64(s.PendingRecords) }),
		counter("tally_wal_appended_spans_total", "Spans appended (acknowledged).", func(s durable.Stats) float64 { return float64(s.AppendedSpans) }),
		counter("tally_wal_delivered_spans_total", "Spans delivered from the durable log to ClickHouse.", func(s durable.Stats) float64 { return float64(s.DeliveredSpans) }),
		counter("tally_wal_delivery_retries_total", "Retries delivering to ClickHouse.", func(s durable.Stats) float64 { return float64(s.Retries) }),
		counter("tally_wal_refused_full_total", "Requests refused because the durable log was full.", func(s durable.Stats) float64 { return float64(s.RefusedFull) }),
		counter("tally_wal_paced_total", "Requests whose acknowledgement waited for ClickHouse to catch up (--wal-pace-bytes).", func(s durable.Stats) float64 { return float64(s.Paced) }),
		counter("tally_wal_paced_seconds_total", "Time requests waited for ClickHouse to catch up, summed.", func(s durable.Stats) float64 { return s.PacedSeconds }),
		counter("tally_wal_dead_lettered_total", "Records the store refused alone again and again, moved to the dead-letter directory (since start).", func(s durable.Stats) float64 { return float64(s.DeadLettered) }),
		gauge("tally_wal_drain_failing_seconds", "How long the durable log's writes to the store have failed without one succeeding (0 while they succeed).", func(s durable.Stats) float64 { return s.FailingFor.Seconds() }),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register durable log metrics: %w", err)
		}
	}
	if dir := sink.DeadLetters(); dir != nil {
		entries := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tally_dead_letter_entries",
			Help: "Entries in the dead-letter directory: acknowledged records the store refused, waiting for an operator (tally deadletter)."},
			func() float64 {
				n, err := dir.Count()
				if err != nil {
					return -1
				}
				return float64(n)
			})
		if err := reg.Register(entries); err != nil {
			return fmt.Errorf("register dead-letter metrics: %w", err)
		}
	}
	return nil
}
