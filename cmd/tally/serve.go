package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/schema/chdb"
	"github.com/tallyhq/tally/settle"
	"github.com/tallyhq/tally/support/config"
	"github.com/tallyhq/tally/support/params"
)

// storeFlags are the store flags shared by every command that opens the
// store itself: the embedded engine under --data-dir (the default), or a
// ClickHouse server or cluster.
type storeFlags struct {
	kind                                        string
	chdbLib                                     string
	embeddedConns                               int
	embeddedSettings                            []string
	embeddedMaxMemory                           int64
	blockBytes                                  int64
	writeTimeout                                time.Duration
	dataDir                                     *string
	addr, database, username, password, cluster string
	fs                                          *pflag.FlagSet
	logger                                      *slog.Logger // for the embedded engine; nil: none
}

// Store kinds --store takes.
const (
	storeEmbedded   = "embedded"
	storeClickHouse = "clickhouse"
)

// register adds the flags to fs. dataDir is the command's --data-dir, or nil
// to register one.
func (f *storeFlags) register(fs *pflag.FlagSet, dataDir *string) {
	f.fs = fs
	fs.StringVar(&f.kind, "store", "", "where data lives: embedded (the ClickHouse engine in-process, data under --data-dir) or clickhouse (a server or cluster at --clickhouse-addr); default embedded, or clickhouse when --clickhouse-addr is set")
	fs.StringVar(&f.chdbLib, "chdb-lib", "", "path of libchdb.so for the embedded store; default $"+chdb.LibraryEnv+", next to the tally binary, or .tally/lib (make deps)")
	fs.IntVar(&f.embeddedConns, "embedded-conns", 4, "statements the embedded store runs at once (chDB connections)")
	fs.Int64Var(&f.embeddedMaxMemory, "embedded-max-memory", 1<<30, "bytes the embedded store's engine may use (max_server_memory_usage; a statement that would pass it fails and the writer retries it); 0 for the engine's default, 90% of the machine's memory. tally serve: --memory-budget unless given")
	fs.StringSliceVar(&f.embeddedSettings, "embedded-setting", nil, "a ClickHouse setting for every statement of the embedded store, or of its engine, NAME=VALUE (max_threads=2, mark_cache_size=268435456; repeatable, or comma-separated; tally.yaml: a list)")
	fs.StringVar(&f.addr, "clickhouse-addr", "127.0.0.1:9000", "ClickHouse native protocol address (host:port); several comma-separated nodes of a cluster fail over in order")
	fs.StringVar(&f.database, "clickhouse-database", "tally", "ClickHouse database (on either store)")
	fs.StringVar(&f.username, "clickhouse-username", "default", "ClickHouse user")
	fs.StringVar(&f.password, "clickhouse-password", "", "ClickHouse password")
	fs.Int64Var(&f.blockBytes, "insert-block-bytes", schema.DefaultBlockBytes, "row data per block of an INSERT to a ClickHouse server: a larger INSERT is sent as several blocks of one statement (one part), so the client's buffers stay this size")
	fs.DurationVar(&f.writeTimeout, "clickhouse-write-timeout", schema.DefaultWriteTimeout, "longest one write to a ClickHouse server may block while nothing else bounds it (an INSERT's blocks): a server that stops reading fails the INSERT, which is retried")
	fs.StringVar(&f.cluster, "clickhouse-cluster", "", "ClickHouse cluster (remote_servers name) to create Replicated and Distributed tables on; empty for one server")
	if dataDir == nil {
		dataDir = new(string)
		fs.StringVar(dataDir, "data-dir", ".tally/data", "tally's data directory (the embedded store lives in its store/)")
	}
	f.dataDir = dataDir
}

// store is the store kind the flags pick.
func (f *storeFlags) store() (string, error) {
	switch f.kind {
	case "":
		// A server address or cluster given anywhere (flag, TALLY_*,
		// tally.yaml) means a server; an empty one set to nothing does not.
		if f.fs != nil && ((f.fs.Changed("clickhouse-addr") && f.addr != "") || f.cluster != "") {
			return storeClickHouse, nil
		}
		return storeEmbedded, nil
	case storeEmbedded:
		if f.cluster != "" {
			return "", fmt.Errorf("--clickhouse-cluster needs --store clickhouse: the embedded store is one node")
		}
		return storeEmbedded, nil
	case storeClickHouse:
		return storeClickHouse, nil
	}
	return "", fmt.Errorf("--store %q: want embedded or clickhouse", f.kind)
}

// embeddedPath is the embedded store's data directory.
func (f *storeFlags) embeddedPath() string { return filepath.Join(*f.dataDir, "store") }

// describe names the store for logs: the server address or the embedded path.
func (f *storeFlags) describe() string {
	if kind, err := f.store(); err == nil && kind == storeEmbedded {
		return "embedded:" + f.embeddedPath()
	}
	return f.addr
}

func (f *storeFlags) config() schema.Config {
	return schema.Config{Addr: f.addr, Database: f.database, Username: f.username, Password: f.password, Cluster: f.cluster,
		BlockBytes: f.blockBytes, WriteTimeout: f.writeTimeout}
}

func (f *storeFlags) open(ctx context.Context) (*schema.Store, error) {
	kind, err := f.store()
	if err != nil {
		return nil, err
	}
	if kind == storeClickHouse {
		return schema.Open(ctx, f.config())
	}
	settings := schema.EmbeddedSettings()
	for _, kv := range f.embeddedSettings {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--embedded-setting %q: want NAME=VALUE", kv)
		}
		settings[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	engine, err := chdb.Open(ctx, chdb.Config{Library: f.chdbLib, Path: f.embeddedPath(), Conns: f.embeddedConns,
		Settings: settings, MaxMemory: f.embeddedMaxMemory, Logger: f.logger})
	if err != nil {
		return nil, fmt.Errorf("embedded store: %w", err)
	}
	store, err := schema.Open(ctx, schema.Config{Addr: "embedded:" + f.embeddedPath(), Embedded: engine.Transport(),
		Engine: engine, Database: f.database})
	if err != nil {
		engine.Close()
		return nil, err
	}
	return store, nil
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
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve OTLP/HTTP ingest, the JSON API, the UI and /metrics on one listener",
		Long: `Serve runs tally: OTLP/HTTP on /v1/traces, the JSON API under /api/v1, the web
UI at /, Prometheus metrics at /metrics, /healthz and /readyz.

Every flag can also be set as TALLY_<FLAG> (upper case, dashes as underscores)
or in tally.yaml; flags win over the environment, which wins over the file.`,
	}
	apply := configFlag(cmd)
	cfg.bind(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := apply(); err != nil {
			return err
		}
		kind, err := cfg.Store.store()
		if err != nil {
			return err
		}
		if err := cfg.applyMemoryBudget(cmd.Flags(), kind); err != nil {
			return err
		}
		if cfg.BackgroundLoads < 1 {
			return fmt.Errorf("--background-loads %d: want at least 1 (a background job with no turn would never load)", cfg.BackgroundLoads)
		}
		if cfg.API.WindowExactRuns < 0 {
			return fmt.Errorf("--window-exact-runs %d: want 0 or more", cfg.API.WindowExactRuns)
		}
		cfg.Alerts.RulesExplicit = cmd.Flags().Changed("alerts-rules")
		cfg.Storage.ContentRetentionSet = cmd.Flags().Changed("content-retention")
		log := newLogger(cfg.LogLevel)
		ctx := cmd.Context()
		if _, set := os.LookupEnv("GOMEMLIMIT"); !set && cfg.MemoryLimit > 0 {
			debug.SetMemoryLimit(cfg.MemoryLimit)
		}
		if _, set := os.LookupEnv("GOGC"); !set {
			// 0 would collect without pause; off with no limit, the heap
			// would grow without bound.
			if cfg.GCPercent == 0 || (cfg.GCPercent < 0 && cfg.MemoryLimit <= 0) {
				return fmt.Errorf("--gc-percent %d: must be ≥ 1, or negative (collector off) only with a --memory-limit", cfg.GCPercent)
			}
			debug.SetGCPercent(cfg.GCPercent)
		}
		srv, store, err := assemble(ctx, &cfg, log)
		if err != nil {
			return err
		}
		defer store.Close()
		if err := startDebugListener(ctx, cfg.Debug.Listen, cfg.Insecure, log); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		externalURL := cfg.ExternalURL
		if externalURL == "" {
			externalURL = "http://" + cfg.Listen
		}
		log.Info("tally serving", "listen", ln.Addr().String(), "store", cfg.Store.describe(), "database", cfg.Store.database,
			"ui", externalURL+"/", "otlp", externalURL+"/v1/traces")
		return srv.Serve(ctx, ln)
	}
	return cmd
}

// dayDuration is a duration flag that also takes days ("400d"), as the
// API's since and until do. zero allows 0 (a retention of 0 keeps forever);
// otherwise it must be more than 0.
type dayDuration struct {
	d    *time.Duration
	zero bool
}

func (f dayDuration) String() string {
	if f.d == nil {
		return ""
	}
	return params.FormatDuration(*f.d)
}

func (f dayDuration) Set(v string) error {
	d, err := params.ParseDuration(v)
	if err != nil {
		return err
	}
	if d == 0 && !f.zero {
		return fmt.Errorf("duration %q: want more than 0", v)
	}
	*f.d = d
	return nil
}

func (f dayDuration) Type() string { return "duration" }

// serveEnv is what features that plug into `tally serve` (durable log,
// rollups, alerts, UI, auth) receive to wire themselves in.
// openForServe opens the store for tally serve. When ClickHouse does not
// answer within a few seconds, a single server (not a cluster) starts anyway
// with a deferred store: it listens, takes spans into the durable log and
// reports the outage on /readyz, and its migrations run once ClickHouse
// answers (migrateWhenReachable). reachable says which case this is.
func openForServe(ctx context.Context, st *storeFlags, log *slog.Logger) (store *schema.Store, reachable bool, err error) {
	if kind, err := st.store(); err != nil {
		return nil, false, err
	} else if kind == storeEmbedded {
		if st.kind == "" {
			// Builds before the embedded store used the server at
			// 127.0.0.1:9000 when given no address: say what this one does.
			log.Info("embedded store (the default): data under "+st.embeddedPath()+
				"; --store clickhouse --clickhouse-addr HOST:PORT uses a ClickHouse server", "path", st.embeddedPath())
		}
		// In-process: it opens or it cannot (no library, a bad data dir).
		st.logger = log.With("component", "chdb")
		store, err := st.open(ctx)
		return store, err == nil, err
	}
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
	if kind, err := st.store(); err != nil || kind == storeEmbedded {
		if err != nil {
			return nil, err
		}
		return st.open(ctx) // in-process: nothing to wait for
	}
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

// recompressStore rewrites the partitions of store written before its
// column codecs, printing each (schema.Store.Recompress).
func recompressStore(ctx context.Context, store *schema.Store, out io.Writer) error {
	since, ok, err := store.CodecsSince(ctx)
	if err != nil || !ok {
		return err
	}
	n, err := store.Recompress(ctx, since, func(w schema.Rewrite) {
		fmt.Fprintf(out, "recompressed %s partition %s (%d rows): %d of %d\n", w.Table, w.Partition, w.Rows, w.Done, w.Total)
	})
	if err != nil {
		return err
	}
	if n > 0 {
		fmt.Fprintf(out, "partitions recompressed: %d\n", n)
	}
	return nil
}

// waitMutations waits for the server's rewrites of tally's tables after a
// migration (schema.Store.WaitMutations), printing what is left at most
// every 10 seconds.
func waitMutations(ctx context.Context, store *schema.Store, out io.Writer) error {
	var printed time.Time
	return store.WaitMutations(ctx, time.Second, 10*time.Minute, func(ms []schema.Mutation) {
		if time.Since(printed) < 10*time.Second {
			return
		}
		printed = time.Now()
		for _, m := range ms {
			fmt.Fprintf(out, "the server is rewriting %s, %s: %d parts left\n", m.Table, strings.Trim(m.Command, "()"), m.PartsToDo)
		}
	})
}

func newMigrateCmd() *cobra.Command {
	var st storeFlags
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade tally's ClickHouse schema (idempotent), and settle the runs stored before",
		Long: `Create or upgrade tally's ClickHouse schema. Every step is idempotent.

Then, unless --wait-rewrites=false, wait while the server rewrites the
parts stored before a migration that changed a column's type (schema 19:
span names and attribute keys as dictionaries), printing the parts left
every few seconds. The server does it in the background and resumes it
after a restart; tally serve reads meanwhile, so stopping the wait loses
nothing.

Then, unless --recompress=false, rewrite the partitions written before the
column codecs (schema 15, and the row codecs of schema 18) were applied, so
the data stored before takes them too: a partition at a time, printing each
one done; resumable the same way.
Only on servers with column codecs (19.10+, the embedded store).

Then, unless --settle=false, settle every stored run not yet in the run table
(the backfill after an upgrade that added it): a day at a time, a few hundred
runs per load, printing each day done. It is resumable: a second run (or tally
serve, whose settler does the same in the background) continues where one
stopped. Give it the safety review's settings tally serve runs with
(--tool-effects, --tool-registry, --run-cap…, or the same tally.yaml), or
serve reviews the runs again under its own.`,
	}
	apply := configFlag(cmd)
	st.register(cmd.Flags(), nil)
	var review apiConfig
	bindReview(cmd.Flags(), &review)
	waitRewrites := cmd.Flags().Bool("wait-rewrites", true, "wait for the server to rewrite the parts stored before a migration that changed a column's type, printing what is left")
	recompress := cmd.Flags().Bool("recompress", true, "rewrite the partitions written before the column codecs, so they take them")
	settleRuns := cmd.Flags().Bool("settle", true, "settle the stored runs the run table does not hold yet")
	quiet := cmd.Flags().Duration("settle-quiet", settle.DefaultQuiet, "a run whose last span ended or was written more recently is left to tally serve's settler")
	margin := cmd.Flags().Duration("settle-margin", time.Minute, "as tally serve's: spans written within it stay read live")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := apply(); err != nil {
			return err
		}
		opts, err := reviewOptions(review)
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		store, err := openWithRetry(ctx, &st, newLogger("info"))
		if err != nil {
			return err
		}
		defer store.Close()
		if err := store.Migrate(ctx); err != nil {
			return err
		}
		v, err := store.SchemaVersion(ctx)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "schema at version %d (clickhouse %s, database %s)\n", v, store.Capabilities().Version, st.database)
		if *waitRewrites {
			if err := waitMutations(ctx, store, out); err != nil {
				return err
			}
		}
		if *recompress {
			if err := recompressStore(ctx, store, out); err != nil {
				return err
			}
		}
		if !*settleRuns {
			return nil
		}
		reader := query.NewReader(store, opts...)
		if *quiet <= 0 || *margin <= 0 {
			return fmt.Errorf("--settle-quiet and --settle-margin must be > 0")
		}
		s := settle.New(reader.SettleSource, store, settle.Config{Quiet: *quiet, Margin: *margin, Logger: newLogger("warn")})
		now := time.Now()
		total, err := s.Check(ctx, time.Unix(0, 0), now, now, func(day time.Time, st settle.Stats) {
			fmt.Fprintf(out, "settled through %s: %d runs (%d waiting)\n", day.Format(time.DateOnly), st.Settled, st.Waiting)
		})
		if err != nil {
			return fmt.Errorf("settle runs (run migrate again to continue): %w", err)
		}
		if _, err := s.Cycle(ctx, now); err != nil {
			return fmt.Errorf("settle runs (run migrate again to continue): %w", err)
		}
		fmt.Fprintf(out, "runs settled: %d (%d in flight, settled by tally serve once quiet)\n", total.Settled, total.Waiting)
		return nil
	}
	return cmd
}
