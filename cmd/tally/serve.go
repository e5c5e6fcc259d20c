package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/config"
	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/receiver"
	"github.com/tallyhq/tally/ingest/writer"
	"github.com/tallyhq/tally/params"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/server"
	"github.com/tallyhq/tally/ui"
)

// storeFlags are the ClickHouse connection flags shared by every command
// that talks to ClickHouse directly.
type storeFlags struct {
	addr, database, username, password, cluster string
}

func (f *storeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.addr, "clickhouse-addr", "127.0.0.1:9000", "ClickHouse native protocol address (host:port); several comma-separated nodes of a cluster fail over in order")
	fs.StringVar(&f.database, "clickhouse-database", "tally", "ClickHouse database")
	fs.StringVar(&f.username, "clickhouse-username", "default", "ClickHouse user")
	fs.StringVar(&f.password, "clickhouse-password", "", "ClickHouse password")
	fs.StringVar(&f.cluster, "clickhouse-cluster", "", "ClickHouse cluster (remote_servers name) to create Replicated and Distributed tables on; empty for one server")
}

func (f *storeFlags) config() schema.Config {
	return schema.Config{Addr: f.addr, Database: f.database, Username: f.username, Password: f.password, Cluster: f.cluster}
}

func (f *storeFlags) open(ctx context.Context) (*schema.Store, error) {
	return schema.Open(ctx, f.config())
}

// configFlag adds --config and returns a function that layers the config
// file and TALLY_* environment under the command's flags.
func configFlag(cmd *cobra.Command) func() error {
	path := cmd.Flags().String("config", "tally.yaml", "config file (YAML); flags override TALLY_* environment, which overrides the file")
	return func() error {
		required := cmd.Flags().Changed("config")
		if v, ok := os.LookupEnv("TALLY_CONFIG"); ok && !required {
			*path, required = v, true
		}
		return config.Apply(cmd.Flags(), *path, required)
	}
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// loadCatalog is the built-in price catalog with the user's overrides.
func loadCatalog(priceFile, litellmFile string) (*pricing.Catalog, error) {
	cat, err := pricing.Builtin()
	if err != nil {
		return nil, err
	}
	if priceFile != "" {
		entries, err := pricing.LoadFile(priceFile)
		if err != nil {
			return nil, err
		}
		cat = cat.WithOverrides(entries)
	}
	if litellmFile != "" {
		f, err := os.Open(litellmFile)
		if err != nil {
			return nil, fmt.Errorf("open litellm prices: %w", err)
		}
		defer f.Close()
		entries, err := pricing.LoadLiteLLM(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", litellmFile, err)
		}
		cat = cat.WithOverrides(entries)
	}
	return cat, nil
}

func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newServeCmd() *cobra.Command {
	var (
		st            storeFlags
		listen        string
		dataDir       string
		logLevel      string
		insecure      bool
		priceFile     string
		litellmFile   string
		noContent     bool
		privacyRules  []string
		usageReading  []string
		usageProvider []string
		limits        = ingest.DefaultLimits()
		maxInFlight   int64
		minBodyRate   int64
		bodyRateGrace time.Duration
		wcfg          = writer.DefaultConfig()
		httpLimits    = server.DefaultHTTPLimits()
		memoryLimit   int64
		noMigrate     bool
		externalURL   string
		maxQueryRange = api.DefaultMaxQueryRange
		runReads      = api.DefaultRunReadLimits()
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve OTLP/HTTP ingest, the JSON API, the UI and /metrics on one listener",
		Long: `Serve runs tally: OTLP/HTTP on /v1/traces, the JSON API under /api/v1, the web
UI at /, Prometheus metrics at /metrics, /healthz and /readyz.

Every flag can also be set as TALLY_<FLAG> (upper case, dashes as underscores)
or in tally.yaml; flags win over the environment, which wins over the file.`,
	}
	apply := configFlag(cmd)
	fs := cmd.Flags()
	st.register(fs)
	fs.StringVar(&listen, "listen", "127.0.0.1:4318", "address for OTLP, API and UI")
	fs.StringVar(&dataDir, "data-dir", ".tally/data", "directory for tally's local state (durable log, alert state)")
	fs.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.BoolVar(&insecure, "insecure", false, "allow serving without API keys on a non-loopback address")
	fs.StringVar(&externalURL, "external-url", "", "URL users reach tally at (links in alerts); default http://<listen>")
	fs.StringVar(&priceFile, "prices", "", "YAML price file adding to or overriding the built-in catalog")
	fs.StringVar(&litellmFile, "litellm-prices", "", "LiteLLM model_prices_and_context_window.json to load as overrides")
	fs.BoolVar(&noContent, "no-content", false, "store no prompt, message or tool content at all")
	fs.StringSliceVar(&privacyRules, "privacy-rule", nil, "attribute privacy rule KEY=drop|redact|hash (repeatable)")
	fs.StringSliceVar(&usageReading, "usage-reading", nil, "override how an instrumentation reports input: READING_OR_SCOPE=inclusive|exclusive (of cache tokens; repeatable; see the README's instrumentation table)")
	fs.StringSliceVar(&usageProvider, "usage-provider", nil, "how spans of unknown instrumentations report input, by provider: PROVIDER=inclusive|exclusive (repeatable; prefix.* matches a family)")
	fs.Int64Var(&limits.MaxBodyBytes, "max-body-bytes", limits.MaxBodyBytes, "largest request body, after decompression (413 above)")
	fs.IntVar(&limits.MaxSpansPerRequest, "max-spans-per-request", limits.MaxSpansPerRequest, "most spans in one request (413 above)")
	fs.IntVar(&limits.MaxAttrValueBytes, "max-attr-value-bytes", limits.MaxAttrValueBytes, "longest attribute value kept; longer ones are truncated with a marker")
	fs.IntVar(&limits.MaxContentBytes, "max-content-bytes", limits.MaxContentBytes, "longest content value (tool arguments/results, messages) kept")
	fs.IntVar(&limits.MaxAttrsPerSpan, "max-attrs-per-span", limits.MaxAttrsPerSpan, "most attributes kept per span; the rest are counted in tally.dropped_attributes")
	fs.IntVar(&limits.MaxEventsPerSpan, "max-events-per-span", limits.MaxEventsPerSpan, "most events kept per span")
	fs.Int64Var(&maxInFlight, "max-inflight-bytes", receiver.DefaultMaxInFlightBytes, "request bytes held by all requests at once (429 above)")
	fs.Int64Var(&minBodyRate, "min-body-rate", receiver.DefaultMinBodyRate, "slowest a request body may arrive after --body-rate-grace, in bytes/s on the wire (408 below); 0 for none")
	fs.DurationVar(&bodyRateGrace, "body-rate-grace", receiver.DefaultBodyRateGrace, "time any request body may take before --min-body-rate applies")
	fs.IntVar(&wcfg.QueueSpans, "queue-spans", wcfg.QueueSpans, "rows accepted but not yet written to ClickHouse (503 above)")
	fs.IntVar(&wcfg.MaxBatchSpans, "batch-spans", wcfg.MaxBatchSpans, "rows per ClickHouse INSERT")
	fs.Int64Var(&wcfg.MaxBatchBytes, "batch-bytes", wcfg.MaxBatchBytes, "row data per ClickHouse INSERT and per batch drained from the durable log")
	fs.DurationVar(&wcfg.FlushInterval, "flush-interval", wcfg.FlushInterval, "longest a row waits before its INSERT")
	fs.DurationVar(&wcfg.AckTimeout, "ack-timeout", wcfg.AckTimeout, "longest a request waits for its rows to be stored before 503")
	fs.IntVar(&runReads.MaxRunSpans, "max-run-spans", runReads.MaxRunSpans, "most spans one run answer holds (a larger run answers its earliest spans, marked truncated; fixtures of larger runs are refused with 413)")
	fs.IntVar(&runReads.MaxConcurrent, "max-concurrent-run-reads", runReads.MaxConcurrent, "run and fixture reads served at once; others wait, then get 503 with Retry-After")
	fs.Var(dayDuration{&maxQueryRange}, "max-query-range", "longest since..until an API request may ask for, like 400d or 72h (400 above)")
	fs.BoolVar(&noMigrate, "no-migrate", false, "do not apply migrations at start-up")
	fs.Int64Var(&memoryLimit, "memory-limit", 240<<20, "soft memory limit in bytes for the Go runtime (the GC works harder near it); 0 for none; GOMEMLIMIT wins when set")
	fs.IntVar(&httpLimits.MaxHeaderBytes, "max-header-bytes", httpLimits.MaxHeaderBytes, "request line and headers (431 above, plus Go's 4 KiB slack)")
	fs.DurationVar(&httpLimits.ReadHeaderTimeout, "read-header-timeout", httpLimits.ReadHeaderTimeout, "time to read a request's headers")
	fs.DurationVar(&httpLimits.ReadTimeout, "read-timeout", httpLimits.ReadTimeout, "time to read a whole request")
	fs.DurationVar(&httpLimits.WriteTimeout, "write-timeout", httpLimits.WriteTimeout, "time to write an answer")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := apply(); err != nil {
			return err
		}
		log := newLogger(logLevel)
		ctx := cmd.Context()
		if _, set := os.LookupEnv("GOMEMLIMIT"); !set && memoryLimit > 0 {
			debug.SetMemoryLimit(memoryLimit)
		}
		// Whether a non-loopback --listen is allowed depends on whether API
		// keys exist (also in ClickHouse): the auth hook (keys.go) decides.
		privacy := ingest.Privacy{NoContent: noContent, Rules: map[string]ingest.Action{}}
		for _, r := range privacyRules {
			k, a, ok := strings.Cut(r, "=")
			if !ok || !ingest.Action(a).Valid() {
				return fmt.Errorf("--privacy-rule %q: want KEY=drop|redact|hash", r)
			}
			privacy.Rules[k] = ingest.Action(a)
		}
		usage, err := ingest.ParseUsagePolicy(usageReading, usageProvider)
		if err != nil {
			return err
		}
		catalog, err := loadCatalog(priceFile, litellmFile)
		if err != nil {
			return err
		}
		store, reachable, err := openForServe(ctx, &st, log)
		if err != nil {
			return err
		}
		defer store.Close()
		if !noMigrate && reachable {
			if err := store.Migrate(ctx); err != nil {
				return err
			}
		}
		if err := os.MkdirAll(dataDir, 0o750); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
		if externalURL == "" {
			externalURL = "http://" + listen
		}
		rcfg := receiver.Config{Limits: limits, MaxInFlightBytes: maxInFlight,
			MinBodyRate: minBodyRate, BodyRateGrace: bodyRateGrace}
		if minBodyRate == 0 {
			rcfg.MinBodyRate = -1 // receiver.Config: negative is none, zero the default
		}
		opts := server.Options{
			Store:    store,
			Receiver: rcfg,
			Writer:   wcfg,
			HTTP:     httpLimits,
			Normalize: ingest.Options{
				Limits: limits, Pricer: catalog, Usage: usage, Privacy: privacy,
			},
			Logger: log,
			UI:     ui.Handler(ui.WithRuns(query.NewReader(store), api.RequestProject), ui.WithLogger(log)),
		}
		srv, err := server.New(opts)
		if err != nil {
			return err
		}
		srv.API().SetMaxRange(maxQueryRange)
		srv.API().SetRunReadLimits(runReads)
		srv.API().SetLogger(log)
		if !noMigrate && !reachable {
			srv.AddJob(func(ctx context.Context) { migrateWhenReachable(ctx, store, log) })
		}
		env := serveEnv{ctx: ctx, srv: srv, store: store, catalog: catalog, dataDir: dataDir,
			externalURL: externalURL, log: log, flags: fs}
		for _, hook := range serveHooks {
			if err := hook(&env); err != nil {
				return err
			}
		}
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		log.Info("tally serving", "listen", ln.Addr().String(), "clickhouse", st.addr, "database", st.database,
			"ui", externalURL+"/", "otlp", externalURL+"/v1/traces")
		return srv.Serve(ctx, ln)
	}
	for _, reg := range serveFlagHooks {
		reg(fs)
	}
	return cmd
}

// dayDuration is a duration flag that also takes days ("400d"), as the
// API's since and until do.
type dayDuration struct{ d *time.Duration }

func (f dayDuration) String() string {
	if f.d == nil {
		return ""
	}
	if *f.d > 0 && *f.d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", *f.d/(24*time.Hour))
	}
	return f.d.String()
}

func (f dayDuration) Set(v string) error {
	d, err := params.ParseDuration(v)
	if err != nil {
		return err
	}
	if d <= 0 {
		return fmt.Errorf("duration %q: want more than 0", v)
	}
	*f.d = d
	return nil
}

func (f dayDuration) Type() string { return "duration" }

// serveEnv is what features that plug into `tally serve` (durable log,
// rollups, alerts, UI, auth) receive to wire themselves in.
type serveEnv struct {
	ctx         context.Context
	srv         *server.Server
	store       *schema.Store
	catalog     *pricing.Catalog
	dataDir     string
	externalURL string
	log         *slog.Logger
	flags       *pflag.FlagSet
}

// serveHooks wire features into the server before it starts listening;
// serveFlagHooks add their flags. Each feature's file appends to them.
var (
	serveHooks     []func(*serveEnv) error
	serveFlagHooks []func(*pflag.FlagSet)
)

// openWithRetry connects to ClickHouse, retrying for a while: at start-up
// (make run, a container) ClickHouse may still be starting.
// openForServe opens the store for tally serve. When ClickHouse does not
// answer within a few seconds, a single server (not a cluster) starts anyway
// with a deferred store: it listens, takes spans into the durable log and
// reports the outage on /readyz, and its migrations run once ClickHouse
// answers (migrateWhenReachable). reachable says which case this is.
func openForServe(ctx context.Context, st *storeFlags, log *slog.Logger) (store *schema.Store, reachable bool, err error) {
	for attempt := 0; ; attempt++ {
		store, err = st.open(ctx)
		if err == nil {
			return store, true, nil
		}
		if attempt == 2 || ctx.Err() != nil {
			break
		}
		log.Warn("clickhouse not reachable yet, retrying", "addr", st.addr, "err", err)
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
		}
	}
	if st.cluster != "" || ctx.Err() != nil {
		return nil, false, err
	}
	log.Warn("clickhouse unreachable: serving anyway — spans are taken into the durable log and delivered when it answers; reads answer errors until then",
		"addr", st.addr, "err", err)
	store, derr := schema.OpenDeferred(st.config())
	if derr != nil {
		return nil, false, derr
	}
	return store, false, nil
}

// migrateWhenReachable applies the migrations as soon as ClickHouse
// answers, retrying every few seconds until it does or ctx ends.
func migrateWhenReachable(ctx context.Context, store *schema.Store, log *slog.Logger) {
	for {
		err := store.Migrate(ctx)
		if err == nil {
			log.Info("clickhouse reachable: schema migrated")
			return
		}
		log.Warn("clickhouse still unreachable: migrations wait", "err", err)
		select {
		case <-time.After(3 * time.Second):
		case <-ctx.Done():
			return
		}
	}
}

func openWithRetry(ctx context.Context, st *storeFlags, log *slog.Logger) (*schema.Store, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		store, err := st.open(ctx)
		if err == nil {
			return store, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, err
		}
		log.Warn("clickhouse not reachable yet, retrying", "addr", st.addr, "err", err)
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func newMigrateCmd() *cobra.Command {
	var st storeFlags
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade tally's ClickHouse schema (idempotent)",
	}
	apply := configFlag(cmd)
	st.register(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := apply(); err != nil {
			return err
		}
		store, err := openWithRetry(cmd.Context(), &st, newLogger("info"))
		if err != nil {
			return err
		}
		defer store.Close()
		if err := store.Migrate(cmd.Context()); err != nil {
			return err
		}
		v, err := store.SchemaVersion(cmd.Context())
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "schema at version %d (clickhouse %s, database %s)\n", v, store.Capabilities().Version, st.database)
		return nil
	}
	return cmd
}
