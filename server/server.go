// Package server is tally's HTTP layer on one listener: the OTLP receiver
// at /v1/traces, the JSON API under /api/v1, the dead-letter routes, the UI
// at /, /metrics, /healthz and /readyz, with authentication and the Host
// guard in front; and it runs the background jobs it is given (writer,
// durable log, rollups, alert evaluation) for as long as it serves. It
// builds none of those parts: cmd/tally/assemble.go does, and hands them
// in through Options.
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
	"github.com/tallyhq/tally/ingest/receiver"
	"github.com/tallyhq/tally/ingest/wire"
	"github.com/tallyhq/tally/support/access"
	"github.com/tallyhq/tally/support/procmem"
)

// ReadinessCheck reports why a component is not ready (nil when it is).
type ReadinessCheck func(ctx context.Context) error

// Authenticator resolves a request's credentials (Authorization: Bearer, or
// a UI session cookie) to the caller's project. Errors wrapping
// access.ErrUnauthenticated are answered 401, access.ErrForbidden 403.
// Ingest is asked for /v1/traces (a key with the ingest scope); Read for the
// API, UI and CLI (a key with the read scope). package auth implements it.
type Authenticator interface {
	AuthenticateIngest(r *http.Request) (project string, err error)
	AuthenticateRead(r *http.Request) (project string, err error)
}

// MetricsAuthenticator is implemented by an Authenticator that guards
// /metrics, which spans every project: AuthenticateMetrics returns nil when
// the caller may scrape, else an error wrapping access.ErrUnauthenticated
// (401) or access.ErrForbidden (403). With an Authenticator that does not
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

// Options are the parts a Server serves, built by its assembler
// (cmd/tally/assemble.go): the server builds only its HTTP layer (the
// receiver's handler, the routes, authentication middleware and health)
// over them. API and Ingest are required; zero fields take defaults.
type Options struct {
	// Ingest takes the batches /v1/traces accepts: the durable log (a 200
	// then means fsynced) or the writer (a 200 after the INSERT).
	Ingest receiver.Sink
	// Receiver bounds /v1/traces (its SinkCopies says whether Ingest copies
	// a batch before Accept returns, as the durable log does).
	Receiver receiver.Config
	// Normalize turns OTLP into rows; Project is ignored: it comes from
	// authentication.
	Normalize ingest.Options
	// API serves /api/v1.
	API *api.Handler
	// DeadLetters serves /api/v1/deadletter (*durable.Sink with a
	// dead-letter directory); nil: those routes answer 404.
	DeadLetters DeadLetterQueue
	// Registry receives the receiver's metrics and is served at /metrics;
	// nil makes a fresh one (NewRegistry).
	Registry *prometheus.Registry
	Logger   *slog.Logger
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
	// Jobs run in the background for as long as the server serves (the
	// writer, the durable log's drain, rollups, key refresh, alert
	// evaluation, metrics export, late migrations); Serve cancels their
	// context after the last request and waits for every one to return.
	Jobs []func(ctx context.Context)
	// Checks are reported by /readyz (ClickHouse, schema, durable log…);
	// those named in IngestChecks, and the write guard's, by /readyz/ingest
	// too (with none named, /readyz/ingest reports every check).
	Checks       map[string]ReadinessCheck
	IngestChecks []string
	// Degraded are reported by /readyz under "degraded" without failing
	// it: something operators must know that does not stop serving (a
	// part the store set aside: its rows are missing, the rest is served).
	Degraded map[string]ReadinessCheck
	// WriteGuard, when set, refuses writes (/v1/traces, the API's writes)
	// with 503 and its Retry-After while it has an error (the free-space
	// floor: *diskguard.Guard), and fails /readyz and /readyz/ingest.
	WriteGuard WriteGuard
}

// DeadLetterQueue is the durable log's dead-letter directory and the way
// back into the log for a record replayed from it; *durable.Sink
// implements it.
type DeadLetterQueue interface {
	DeadLetters() *deadletter.Dir
	Requeue(ctx context.Context, record []byte) error
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

// NewRegistry returns a metrics registry with the Go and process collectors
// and the resident memory by kind (procmem), for Options.Registry (build it
// first when other components register on it).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), procmem.Collector())
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
	opts    Options
	log     *slog.Logger
	handler http.Handler
	checks  map[string]ReadinessCheck
	// ingestChecks name the checks /readyz/ingest reports.
	ingestChecks map[string]bool
}

// New builds the HTTP layer over the parts in opts: the receiver and its
// metrics, then the routes. Nothing is started until Serve.
func New(opts Options) (*Server, error) {
	if opts.API == nil || opts.Ingest == nil {
		return nil, errors.New("server: the API and an ingest sink are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Registry == nil {
		opts.Registry = NewRegistry()
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
	s := &Server{opts: opts, log: opts.Logger, checks: map[string]ReadinessCheck{}, ingestChecks: map[string]bool{}}
	for name, check := range opts.Checks {
		s.checks[name] = check
	}
	for _, name := range opts.IngestChecks {
		s.ingestChecks[name] = true
	}
	if opts.WriteGuard != nil {
		s.checks[diskCheck] = func(context.Context) error { return opts.WriteGuard.Err() }
	}
	h, err := s.routes()
	if err != nil {
		return nil, err
	}
	s.handler = h
	return s, nil
}

// LoginRedirector is implemented by an Authenticator that signs browsers in
// on a page of its own: for an unauthenticated request it returns where to
// redirect it (e.g. "/login?next=/runs"), or "" to answer 401.
type LoginRedirector interface {
	LoginURL(r *http.Request) string
}

// Handler is the server's HTTP handler: every route.
func (s *Server) Handler() http.Handler { return s.handler }

// routes builds the receiver (registering its metrics) and every route.
func (s *Server) routes() (http.Handler, error) {
	metrics, err := receiver.NewMetrics(s.opts.Registry)
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
	sink := s.opts.Ingest
	if s.opts.WriteGuard != nil {
		sink = guardedSink{Sink: sink, guard: s.opts.WriteGuard}
	}
	recv := receiver.New(s.opts.Receiver, normalize, sink, ingestAuth, s.log, metrics)

	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.Use(gin.CustomRecovery(func(c *gin.Context, err any) {
		s.log.Error("handler panic", "path", c.Request.URL.Path, "panic", err)
		c.AbortWithStatusJSON(http.StatusInternalServerError, api.Error{Error: "internal error"})
	}))
	e.Use(s.hostCheck())
	e.Any("/v1/traces", gin.WrapH(recv))
	e.GET("/metrics", s.metricsAuth(), gin.WrapH(promhttp.HandlerFor(s.opts.Registry, promhttp.HandlerOpts{Registry: s.opts.Registry})))
	e.GET("/api/v1/storage", s.metricsAuth(), s.opts.API.Storage)
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
	s.opts.API.Register(e.Group("/api/v1", read))
	// Writes through the API (outcomes) take the ingest scope, like
	// /v1/traces: an evaluator posts with the key it sends spans with.
	s.opts.API.RegisterWrites(e.Group("/api/v1", s.writeAuth(), s.guardWrites()))
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
		if err != nil {
			s.refuse(c, err, login)
			return
		}
		c.Request = api.WithProject(c.Request, project)
	}
}

// refuse answers a request authentication refused, the one mapping of its
// errors to statuses: 403 for a key without the scope, 401 (or, with
// login, a redirect to the UI's login page) without a key, 503 when
// authentication is unavailable.
func (s *Server) refuse(c *gin.Context, err error, login bool) {
	switch {
	case errors.Is(err, access.ErrForbidden):
		c.AbortWithStatusJSON(http.StatusForbidden, api.Error{Error: err.Error()})
	case errors.Is(err, access.ErrUnauthenticated):
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
		if err := ma.AuthenticateMetrics(c.Request); err != nil {
			s.refuse(c, err, false)
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
	checks := make(map[string]ReadinessCheck, len(s.checks))
	for k, v := range s.checks {
		if !ingestOnly || len(s.ingestChecks) == 0 || s.ingestChecks[k] || k == diskCheck {
			checks[k] = v
		}
	}
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
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.opts.HTTP.ReadHeaderTimeout,
		ReadTimeout:       s.opts.HTTP.ReadTimeout,
		WriteTimeout:      s.opts.HTTP.WriteTimeout,
		IdleTimeout:       s.opts.HTTP.IdleTimeout,
		MaxHeaderBytes:    s.opts.HTTP.MaxHeaderBytes,
	}
	jobCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for _, job := range s.opts.Jobs {
		wg.Add(1)
		go func() { defer wg.Done(); job(jobCtx) }()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
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
