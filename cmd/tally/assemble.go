package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/deadletter"
	"github.com/tallyhq/tally/ingest/durable"
	"github.com/tallyhq/tally/ingest/receiver"
	"github.com/tallyhq/tally/ingest/wal"
	"github.com/tallyhq/tally/ingest/writer"
	"github.com/tallyhq/tally/keyindex"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/retention"
	"github.com/tallyhq/tally/rollup"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/server"
	"github.com/tallyhq/tally/settle"
	"github.com/tallyhq/tally/support/auth"
	"github.com/tallyhq/tally/support/diskguard"
	"github.com/tallyhq/tally/support/lease"
	"github.com/tallyhq/tally/support/loadgate"
	"github.com/tallyhq/tally/support/params"
	"github.com/tallyhq/tally/ui"
)

// Files in the data dir.
const (
	alertStateFile = "alerts-state.json" // alert state across restarts
	keyCacheFile   = "keys-cache.json"   // the last loaded API key hashes
)

// alertsEvaluatorLease is the lease the alert evaluator runs under.
const alertsEvaluatorLease = "alerts-evaluator"

// assemble builds tally serve from its configuration, in data-flow order:
// normalization rules and prices, the store (and its migrations), then the
// parts that read it — authentication, the metrics exporter, the alert
// evaluator under its lease, the UI — and the server that wires the
// receiver, durable log, writer, readers and API around them. It is the one
// place that decides what runs; the caller closes the store.
func assemble(ctx context.Context, cfg *serveConfig, log *slog.Logger) (*server.Server, *schema.Store, error) {
	// Ingest: what a span becomes.
	if cfg.Ingest.Limits.MaxSpanAge == 0 {
		age, err := spanAgeFromRetention(cfg.Storage)
		if err != nil {
			return nil, nil, err
		}
		cfg.Ingest.Limits.MaxSpanAge = age
	}
	normalize, catalog, err := normalizeOptions(cfg.Ingest)
	if err != nil {
		return nil, nil, err
	}

	// The store: reachable now, or later (the durable log takes spans in
	// the meantime and the migrations wait).
	store, reachable, err := openForServe(ctx, &cfg.Store, log)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*server.Server, *schema.Store, error) { store.Close(); return nil, nil, err }
	var jobs []func(context.Context)
	if !cfg.NoMigrate {
		if reachable {
			if err := store.Migrate(ctx); err != nil {
				return fail(err)
			}
		} else {
			jobs = append(jobs, func(ctx context.Context) { migrateWhenReachable(ctx, store, log) })
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fail(fmt.Errorf("data dir: %w", err))
	}
	externalURL := cfg.ExternalURL
	if externalURL == "" {
		externalURL = "http://" + cfg.Listen
	}

	// Readers and metrics, shared by what follows.
	registry := server.NewRegistry()
	review, err := reviewOptions(cfg.API)
	if err != nil {
		return fail(err)
	}
	// The cost reports' edge hour holds at most the spans of one load.
	reader := query.NewReader(store, append(review, query.WithEdgeHourSpans(cfg.MaxLoadSpans),
		query.WithWindowExactRuns(cfg.API.WindowExactRuns))...)

	// Authentication.
	keyring, err := buildAuth(ctx, cfg, store, log)
	if err != nil {
		return fail(err)
	}
	jobs = append(jobs, keyring.Run)

	// The background jobs that load spans into memory take turns.
	gate := loadgate.New(cfg.BackgroundLoads)
	if err := gate.Register(registry); err != nil {
		return fail(err)
	}

	// The /metrics figures, on every replica, alerting or not.
	exporter, err := alerts.NewExporter(alerts.ExporterConfig{Source: reader, Registerer: registry, Gate: gate,
		Window: cfg.Alerts.MetricsWindow, Interval: cfg.Alerts.Interval, MaxLabelValues: cfg.Alerts.MaxLabelValues,
		Logger: log.With("component", "metrics")})
	if err != nil {
		return fail(err)
	}
	jobs = append(jobs, background(exporter.Run))

	// Alert evaluation, under the lease. This process holds the leases it
	// takes under one name (--replica-id, or one made up once).
	holder := cfg.Alerts.ReplicaID
	if holder == "" {
		if holder, err = defaultReplicaID(); err != nil {
			return fail(err)
		}
	}
	evaluator, evaluate, err := buildAlerts(cfg, store, holder, reader, catalog, gate, registry, externalURL, log)
	if err != nil {
		return fail(err)
	}
	// Ingest: receiver → durable log → writer → ClickHouse.
	rcfg := receiver.Config{Limits: cfg.Ingest.Limits, MaxInFlightBytes: cfg.Ingest.MaxInFlight,
		MinBodyRate: cfg.Ingest.MinBodyRate, BodyRateGrace: cfg.Ingest.BodyRateGrace}
	if cfg.Ingest.MinBodyRate == 0 {
		rcfg.MinBodyRate = -1 // receiver.Config: negative is none, zero the default
	}
	w := writer.New(store, cfg.Writer, log)
	if err := w.Register(registry); err != nil {
		return fail(err)
	}
	jobs = append(jobs, w.Run)
	checks := map[string]server.ReadinessCheck{"clickhouse": store.Ping, "schema": store.Migrated}
	var (
		ingestChecks []string
		sink         receiver.Sink = w
		deadLetters  server.DeadLetterQueue
	)
	if dl, err := openDurable(cfg, store, w, log); err != nil {
		return fail(err)
	} else if dl != nil {
		if err := dl.Register(registry); err != nil {
			return fail(err)
		}
		sink, deadLetters, rcfg.SinkCopies = dl, dl, true // the log encodes a batch before Accept returns
		jobs = append(jobs, func(ctx context.Context) { drain(ctx, dl, log) })
		checks["durable_log"] = func(context.Context) error { return dl.Ready() }
		// Not an ingest check: while the drain is stuck the log still
		// takes spans, up to its cap.
		checks["durable_drain"] = func(context.Context) error { return dl.Draining() }
		ingestChecks = append(ingestChecks, "durable_log")
	}

	// Retention, under its lease like alert evaluation, and the disk floor
	// on every replica, which keeps room for what the durable log holds.
	logged := func() uint64 { return 0 }
	if dl, ok := sink.(*durable.Sink); ok {
		logged = func() uint64 { return uint64(dl.Stats().WALBytes) }
	}
	storage, retain, err := buildStorage(cfg, store, holder, logged, registry, log)
	if err != nil {
		return fail(err)
	}
	jobs = append(jobs, retain, storage.Guard.Run, storage.Parts.Run)
	policy := storage.Job.Policy()

	// Reads: with a price catalog, costs, cache health and the hourly
	// cost rollup too.
	explainer := query.NewExplainer(reader, normalize)
	apiOpts := api.Options{
		Runs: reader.RunReader, Trees: reader.TreeReader, Traces: reader.RunReader,
		Content: reader.ContentReader, Chat: reader.ContentReader, Conversations: reader.RunReader,
		Tools: reader.ToolReader, Signals: reader.ReviewReader, Caps: reader.ReviewReader,
		Outcomes: reader.OutcomeReader, OutcomeStore: store, Fixtures: reader.FixtureReader,
		Explain: explainer, Storage: storage, KeptFrom: policy.KeptFrom,
		Search: reader.SearchReader, SearchLimits: cfg.API.Search, Saved: api.SavedQueries{SearchReader: reader.SearchReader, Store: store},
		MaxQueryRange: cfg.API.MaxQueryRange, RunReads: cfg.API.RunReads, Logger: log,
	}
	// The run table: runs settled once quiet, under a lease like retention.
	settleRun, err := buildSettler(cfg.Settle, cfg.MaxLoadSpans, gate, store, reader, holder, policy.SpansKeptFrom, registry, log)
	if err != nil {
		return fail(err)
	}
	jobs = append(jobs, background(settleRun))
	// The run rollup, for the window reports (tasks, caps).
	jobs = append(jobs, background(rollup.NewRunRollup(store, rollup.RunRollupConfig{Logger: log, Gate: gate}).Run))
	// The search keys index, for autocomplete.
	jobs = append(jobs, background(keyindex.New(store, keyindex.Config{Logger: log, KeptFrom: policy.SpansKeptFrom}).Run))
	if catalog != nil {
		apiOpts.Costs = query.NewCostReader(reader, catalog)
		jobs = append(jobs, background(rollup.New(store, rollup.Config{Logger: log, KeptFrom: policy.SpansKeptFrom, MaxLoadSpans: cfg.MaxLoadSpans, Gate: gate}).Run))
	}
	if evaluator != nil {
		jobs = append(jobs, background(evaluate))
		apiOpts.Alerts = evaluator
	}

	// The HTTP layer over all of it.
	srv, err := server.New(server.Options{
		Ingest:       sink,
		Receiver:     rcfg,
		Normalize:    normalize,
		API:          api.New(apiOpts),
		DeadLetters:  deadLetters,
		Registry:     registry,
		Logger:       log,
		UI:           ui.Handler(ui.WithRuns(reader, api.RequestProject), ui.WithLogger(log)),
		HTTP:         cfg.HTTP,
		Auth:         keyring,
		Public:       keyring.Public(),
		AllowedHosts: cfg.Auth.AllowedHosts,
		Jobs:         jobs,
		Checks:       checks,
		IngestChecks: ingestChecks,
		Degraded:     map[string]server.ReadinessCheck{"store_parts": storage.Parts.Degraded},
		WriteGuard:   storage.Guard,
	})
	if err != nil {
		return fail(err)
	}
	return srv, store, nil
}

// background is job run with the settings of background statements
// (schema.Background): one thread and small blocks each, since no user
// waits on them while ingest shares the machine with them.
func background(job func(context.Context)) func(context.Context) {
	return func(ctx context.Context) { job(schema.Background(ctx)) }
}

// openDurable opens the durable log in front of the writer (its batch
// bounds follow the writer's; streaming into held-open INSERTs on the
// server store), with its dead-letter directory; nil with --no-wal.
func openDurable(cfg *serveConfig, store *schema.Store, w *writer.Writer, log *slog.Logger) (*durable.Sink, error) {
	d := cfg.Durable
	if d.CommitSpans < 1 || d.CommitBytes < 1 || d.CommitEvery <= 0 || d.StreamBatch < 1 {
		return nil, fmt.Errorf("--wal-commit-spans, --wal-commit-bytes and --wal-stream-batch-bytes must be ≥ 1, --wal-commit-interval > 0")
	}
	if d.DeadLetterAttempts < 1 || d.StuckAfter <= 0 {
		return nil, fmt.Errorf("--wal-dead-letter-attempts must be ≥ 1, --wal-stuck-after > 0")
	}
	if d.Disabled {
		log.Warn("durable log disabled (--no-wal): spans are acknowledged only once in ClickHouse, and refused while it is down")
		return nil, nil
	}
	if d.NoSync {
		log.Warn("durable log without fsync (--wal-no-sync): acknowledged spans can be lost if the machine crashes")
	}
	dc := durable.DefaultConfig()
	dc.WAL = wal.Options{MaxBytes: d.MaxBytes, SegmentBytes: d.SegmentBytes, NoSync: d.NoSync, Logger: log}
	dc.PaceBytes, dc.PaceWait = d.PaceBytes, d.PaceWait
	dc.CommitSpans, dc.CommitBytes, dc.CommitInterval = d.CommitSpans, d.CommitBytes, d.CommitEvery
	dc.DeadLetterAttempts, dc.StuckAfter = d.DeadLetterAttempts, d.StuckAfter
	dc.MaxBatchSpans, dc.MaxBatchBytes = w.MaxBatchSpans(), w.MaxBatchBytes()
	// The embedded store's HTTP client would hold a whole streamed INSERT
	// in memory: it is written batch by batch.
	if !d.NoStream && !store.Embedded() {
		var err error
		if dc, err = dc.Streaming(func(ctx context.Context) (durable.Stream, error) { return w.Begin(ctx) },
			w.InsertTimeout(), d.StreamBatch); err != nil {
			return nil, err
		}
	}
	letters, err := deadletter.Open(filepath.Join(cfg.DataDir, "deadletter"))
	if err != nil {
		return nil, fmt.Errorf("durable log: %w", err)
	}
	dc.DeadLetter, dc.Unstorable = letters, schema.Unstorable
	if n, err := letters.Count(); err == nil && n > 0 {
		log.Warn("dead-letter directory holds records the store refused; inspect them with `tally deadletter list`",
			"entries", n, "dir", letters.Path())
	}
	sink, err := durable.Open(filepath.Join(cfg.DataDir, "wal"), w, dc, log)
	if err != nil {
		return nil, fmt.Errorf("open durable log: %w", err)
	}
	return sink, nil
}

// drain runs the durable log's drain until ctx ends, then closes the log.
func drain(ctx context.Context, sink *durable.Sink, log *slog.Logger) {
	if err := sink.Run(ctx); err != nil {
		log.Error("durable log stopped delivering; spans stay in the log until this is fixed", "err", err)
	}
	if err := sink.Close(); err != nil {
		log.Error("close durable log", "err", err)
	}
}

// normalizeOptions turns the ingest settings into Normalize's options and
// the price catalog.
func normalizeOptions(in ingestConfig) (ingest.Options, *pricing.Catalog, error) {
	privacy := ingest.Privacy{NoContent: in.NoContent, Rules: map[string]ingest.Action{}}
	for _, r := range in.PrivacyRules {
		k, a, ok := strings.Cut(r, "=")
		if !ok || !ingest.Action(a).Valid() {
			return ingest.Options{}, nil, fmt.Errorf("--privacy-rule %q: want KEY=drop|redact|hash", r)
		}
		privacy.Rules[k] = ingest.Action(a)
	}
	usage, err := ingest.ParseUsagePolicy(in.UsageReading, in.UsageProvider)
	if err != nil {
		return ingest.Options{}, nil, err
	}
	catalog, err := loadCatalog(in.Prices, in.LiteLLMPrices)
	if err != nil {
		return ingest.Options{}, nil, err
	}
	return ingest.Options{Limits: in.Limits, Pricer: catalog, Usage: usage, Privacy: privacy}, catalog, nil
}

// buildAuth builds the keyring from static and managed keys (with their
// cache in the data dir) and decides whether serving is allowed: without
// keys, loopback only unless --insecure.
func buildAuth(ctx context.Context, cfg *serveConfig, store *schema.Store, log *slog.Logger) (*auth.Keyring, error) {
	au := cfg.Auth
	proxies, err := auth.ParseTrustedProxies(au.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("--trusted-proxies: %w", err)
	}
	secret := []byte(au.SessionSecret)
	if au.SessionSecret == "" {
		if secret, err = auth.LoadOrCreateSecret(cfg.DataDir); err != nil {
			return nil, err
		}
	}
	sessions, err := auth.NewSessions(secret, au.SessionTTL)
	if err != nil {
		return nil, fmt.Errorf("--session-secret: %w", err)
	}
	keyStore := auth.NewStore(store)
	// The cache lets a tally started during a ClickHouse outage authenticate
	// as before it, and take spans into its durable log.
	cached := &auth.KeyCache{Source: keyStore, Revocations: keyStore, Path: filepath.Join(cfg.DataDir, keyCacheFile), Logger: log}
	keyring, err := auth.NewKeyring(ctx, auth.Config{
		Static: au.StaticKeys.Keys, Source: cached, Revocations: cached, Refresh: au.Refresh, Sessions: sessions,
		TrustedProxies: proxies, Logger: log, StartUnavailable: true,
	})
	if err != nil {
		return nil, err
	}
	switch {
	case keyring.Enabled():
		log.Info("authentication on: API keys required", "static_keys", len(au.StaticKeys.Keys), "refresh", au.Refresh)
	case isLoopback(cfg.Listen):
		log.Warn("authentication off: no API key configured, serving project \"default\" to anyone on this machine; create a key with `tally keys create` to turn it on", "listen", cfg.Listen)
	case !cfg.Insecure:
		return nil, fmt.Errorf("refusing to serve on non-loopback %s without API keys; configure keys (tally keys create, --auth-key) or pass --insecure", cfg.Listen)
	default:
		log.Warn("SERVING WITHOUT AUTHENTICATION ON A NON-LOOPBACK ADDRESS (--insecure): anyone who can reach it can read and write all data", "listen", cfg.Listen)
		if len(au.AllowedHosts) == 0 {
			log.Warn("authentication off: only loopback Host names are answered; list the names clients use in --allowed-hosts", "listen", cfg.Listen)
		}
	}
	return keyring, nil
}

// buildAlerts builds the alert evaluator and the job that runs it as
// --alerts-evaluator says: under a lease in ClickHouse (auto: one replica
// evaluates and notifies), always (on) or never (off). With no rules file it
// returns nil: alerting is off, the metrics exporter still runs.
func buildAlerts(cfg *serveConfig, store *schema.Store, holder string, reader *query.Reader, catalog *pricing.Catalog,
	gate *loadgate.Gate, reg prometheus.Registerer, externalURL string, log *slog.Logger) (*alerts.Evaluator, func(context.Context), error) {
	a := cfg.Alerts
	if a.RulesPath == "" {
		log.Info("alerting off: no --alerts-rules")
		return nil, nil, nil
	}
	rules, err := alerts.LoadRules(a.RulesPath)
	if errors.Is(err, fs.ErrNotExist) && !a.RulesExplicit {
		log.Info("alerting off: no rules file", "path", a.RulesPath)
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var targets []alerts.Target
	for _, u := range a.Alertmanagers {
		targets = append(targets, alerts.NewAlertmanager(u, nil))
	}
	for _, u := range a.Webhooks {
		targets = append(targets, alerts.NewWebhook(u, nil))
	}
	ev, err := alerts.NewEvaluator(alerts.Config{
		Rules:            rules,
		Source:           reader,
		Cache:            alerts.CacheFromReports(query.NewCostReader(reader, catalog)),
		Targets:          targets,
		StatePath:        filepath.Join(cfg.DataDir, alertStateFile),
		ExternalURL:      externalURL,
		Interval:         a.Interval,
		ResendInterval:   a.ResendInterval,
		HistoryRetention: a.HistoryRetention,
		MaxHistory:       a.MaxHistory,
		Gate:             gate,
		Registerer:       reg,
		Logger:           log.With("component", "alerts"),
	})
	if err != nil {
		return nil, nil, err
	}
	run, err := underLease("--alerts-evaluator", a.Evaluator, alertsEvaluatorLease, holder, store, log,
		func(ctx context.Context) { _ = ev.Run(ctx) })
	if err != nil {
		return nil, nil, err
	}
	switch a.Evaluator {
	case "off":
		log.Info("alert evaluation off on this replica (--alerts-evaluator=off)")
	case "auto":
		log.Info("alert evaluation under a lease: one replica evaluates at a time", "lease", alertsEvaluatorLease,
			"holder", holder, "ttl", lease.DefaultTTL)
	}
	log.Info("alerting on", "rules", len(rules), "file", a.RulesPath, "alertmanagers", len(a.Alertmanagers),
		"webhooks", len(a.Webhooks), "interval", a.Interval)
	return ev, run, nil
}

// contentRetention is --content-retention, or, when it was not given, its
// default shortened to a shorter --retention: content lives on spans, so a
// default must not conflict with the limit the user set (only an explicit
// conflict is refused, by retention.Policy.Validate).
func contentRetention(st storageConfig) time.Duration {
	if !st.ContentRetentionSet && st.Retention != 0 && (st.ContentRetention == 0 || st.ContentRetention > st.Retention) {
		return st.Retention
	}
	return st.ContentRetention
}

// spanAgeFromRetention is --max-span-age's default: the longest span
// retention, global or a project's (a span older than that would be
// dropped at the next retention pass anyway), or no bound (0) when spans
// are kept forever (--retention 0).
func spanAgeFromRetention(st storageConfig) (time.Duration, error) {
	if st.Retention == 0 {
		return 0, nil
	}
	longest := st.Retention
	overrides, err := retention.ParseOverrides(st.ProjectRetention)
	if err != nil {
		return 0, fmt.Errorf("--project-retention: %w", err)
	}
	for _, o := range overrides {
		longest = max(longest, o.Spans) // 0: the project keeps spans as long as --retention
	}
	return longest, nil
}

// settleLease is the lease the settler runs under with --settle-runner
// auto: one replica settles runs at a time.
const settleLease = "settle"

// buildSettler builds the job that settles runs into the run table, run as
// --settle-runner says.
func buildSettler(sc settleConfig, maxLoadSpans int, gate *loadgate.Gate, store *schema.Store, reader *query.Reader, holder string, keptFrom func(time.Time) time.Time,
	reg prometheus.Registerer, log *slog.Logger) (func(context.Context), error) {
	if sc.Quiet <= 0 || sc.Interval <= 0 || sc.Margin <= 0 {
		return nil, fmt.Errorf("--settle-quiet, --settle-interval and --settle-margin must be > 0")
	}
	s := settle.New(reader.SettleSource, store, settle.Config{Quiet: sc.Quiet, Interval: sc.Interval, Margin: sc.Margin, MaxLoadSpans: maxLoadSpans,
		Gate: gate, KeptFrom: keptFrom, Logger: log.With("component", "settle")})
	if err := s.Register(reg); err != nil {
		return nil, err
	}
	run, err := underLease("--settle-runner", sc.Runner, settleLease, holder, store, log, s.Run)
	if err != nil {
		return nil, err
	}
	if sc.Runner == "off" {
		log.Warn("settling off on this replica (--settle-runner=off): runs are read from their spans unless another replica settles them")
	}
	return run, nil
}

// retentionLease is the lease retention runs under with --retention-runner
// auto: one replica drops partitions at a time.
const retentionLease = "retention"

// buildStorage builds retention (its job, run as --retention-runner says:
// under a lease, always or never) and the free-space guard on the data
// directory and the ClickHouse server's disks, which keeps free above the
// floor what the durable log holds (logged bytes, on their way to the
// store) and about the largest part again (what a merge needs).
func buildStorage(cfg *serveConfig, store *schema.Store, holder string, logged func() uint64, reg prometheus.Registerer, log *slog.Logger) (*retention.Storage, func(context.Context), error) {
	st := cfg.Storage
	overrides, err := retention.ParseOverrides(st.ProjectRetention)
	if err != nil {
		return nil, nil, fmt.Errorf("--project-retention: %w", err)
	}
	policy := retention.Policy{Spans: st.Retention, Content: contentRetention(st), Rollups: st.RollupRetention, Projects: overrides}
	job, err := retention.NewJob(store, retention.Config{Policy: policy, Interval: st.RetentionEvery, Registerer: reg,
		Logger: log.With("component", "retention")})
	if err != nil {
		return nil, nil, err
	}
	floor, err := diskguard.ParseFloor(st.DiskFloor)
	if err != nil {
		return nil, nil, fmt.Errorf("--disk-floor: %w", err)
	}
	guard := diskguard.New(diskguard.Config{Floor: floor, Paths: []string{cfg.DataDir}, Server: store.ServerDisk,
		Usage: func(ctx context.Context) ([]diskguard.TableUsage, error) {
			tables, err := store.DiskUsage(ctx)
			out := make([]diskguard.TableUsage, len(tables))
			for i, t := range tables {
				out[i] = diskguard.TableUsage{Table: t.Table, Bytes: t.Bytes, Rows: t.Rows}
			}
			return out, err
		},
		// What the durable log holds goes to the store, and merges need
		// about the largest part again: kept free above the floor.
		Reserve: func(ctx context.Context) (uint64, error) {
			part, err := store.LargestPart(ctx)
			return logged() + part, err
		},
		Interval: st.DiskCheckEvery, Logger: log.With("component", "disk")})
	if err := reg.Register(guard.Collector()); err != nil {
		return nil, nil, fmt.Errorf("disk metrics: %w", err)
	}
	if store.Embedded() {
		if err := registerEngineMetrics(reg, store); err != nil {
			return nil, nil, err
		}
	}
	run, err := underLease("--retention-runner", st.RetentionRunner, retentionLease, holder, store, log, job.Run)
	if err != nil {
		return nil, nil, err
	}
	if st.RetentionRunner == "off" {
		log.Warn("retention off on this replica (--retention-runner=off): nothing ages out unless another replica runs it")
	}
	log.Info("retention", "spans", params.FormatDuration(policy.Spans), "content", params.FormatDuration(policy.Of(schema.ClassContent, "")),
		"rollups", params.FormatDuration(policy.Rollups), "projects", len(overrides), "disk_floor", st.DiskFloor)
	parts := retention.NewPartWatch(store, 0, log.With("component", "store"))
	if err := reg.Register(parts.Collector()); err != nil {
		return nil, nil, fmt.Errorf("store part metrics: %w", err)
	}
	return &retention.Storage{Job: job, Guard: guard, Parts: parts}, run, nil
}

// underLease is run as a replica-runner flag (auto|on|off) says: under the
// named lease, so one replica at a time runs it (auto); on every replica
// (on); or not on this one (off).
func underLease(flag, mode, name, holder string, store *schema.Store, log *slog.Logger, run func(context.Context)) (func(context.Context), error) {
	switch mode {
	case "on":
		return run, nil
	case "off":
		return func(context.Context) {}, nil
	case "auto":
		l, err := lease.New(store, lease.Config{Name: name, Holder: holder, Logger: log.With("component", "lease")})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) { l.Run(ctx, run) }, nil
	}
	return nil, fmt.Errorf("%s %q: want auto, on or off", flag, mode)
}

// defaultReplicaID is the host name with a random suffix, unique per process.
func defaultReplicaID() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		host = "tally"
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return "", fmt.Errorf("replica id: %w", err)
	}
	return host + "-" + hex.EncodeToString(suffix), nil
}

// registerEngineMetrics exports the embedded store's engine memory: it
// lives in tally's process, so it is part of tally's RSS, and its cap is
// --embedded-max-memory; and what each of its caches holds. Each scrape
// asks the engine (a few milliseconds); a failed read reports NaN.
func registerEngineMetrics(reg prometheus.Registerer, store *schema.Store) error {
	c := engineCollector{store: store,
		used: prometheus.NewDesc("tally_store_engine_memory_bytes",
			"Memory the embedded store's engine tracks as in use (part of tally's RSS).", nil, nil),
		limit: prometheus.NewDesc("tally_store_engine_memory_limit_bytes",
			"The embedded store's engine memory cap (--embedded-max-memory; 0: none).", nil, nil),
		caches: prometheus.NewDesc("tally_store_engine_cache_bytes",
			"Memory the embedded store's engine holds in each of its caches (part of tally_store_engine_memory_bytes; sized by --memory-budget).", []string{"cache"}, nil)}
	if err := reg.Register(c); err != nil {
		return fmt.Errorf("engine metrics: %w", err)
	}
	return nil
}

// engineCollector reads the engine's memory once a scrape for its gauges.
type engineCollector struct {
	store               *schema.Store
	used, limit, caches *prometheus.Desc
}

// Describe sends the two gauges' descriptions.
func (c engineCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.used
	ch <- c.limit
	ch <- c.caches
}

// Collect asks the engine and sends the gauges (the caches' when the
// engine answers).
func (c engineCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	used, limit := math.NaN(), math.NaN()
	if u, l, err := c.store.EngineMemory(ctx); err == nil {
		used, limit = float64(u), float64(l)
	}
	ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, used)
	ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, limit)
	if caches, err := c.store.EngineCaches(ctx); err == nil {
		for name, n := range caches {
			ch <- prometheus.MustNewConstMetric(c.caches, prometheus.GaugeValue, float64(n), name)
		}
	}
}

// reviewOptions are the readers' safety review settings (--tool-effects,
// --signal-*, --tool-registry, --run-cap, --validation-*), checked.
func reviewOptions(a apiConfig) ([]query.ReaderOption, error) {
	effects, err := safety.ParsePolicy(a.ToolEffects)
	if err != nil {
		return nil, fmt.Errorf("--tool-effects: %w", err)
	}
	if a.Signals.MinBackoff <= 0 || a.Signals.MaxRepeats < 1 || a.Signals.MaxSteps < 1 || a.Signals.Lockstep <= 0 {
		return nil, fmt.Errorf("--signal-min-backoff and --signal-lockstep must be > 0, --signal-max-repeats and --signal-max-steps ≥ 1")
	}
	toolRegistry, err := safety.ParseRegistry(a.ToolRegistry)
	if err != nil {
		return nil, fmt.Errorf("--tool-registry: %w", err)
	}
	runCaps, err := safety.ParseCaps(a.RunCaps)
	if err != nil {
		return nil, fmt.Errorf("--run-cap: %w", err)
	}
	if v := a.Validation; v.MaxSteps < 1 || v.MaxRunTime <= 0 || v.MaxSchemaBytes < 1 {
		return nil, fmt.Errorf("--validation-max-steps and --validation-max-schema-bytes must be ≥ 1, --validation-max-run-time > 0")
	}
	return []query.ReaderOption{query.WithToolEffects(effects), query.WithSignalLimits(a.Signals),
		query.WithToolRegistry(toolRegistry), query.WithRunCaps(runCaps), query.WithValidator(safety.NewValidator(a.Validation))}, nil
}
