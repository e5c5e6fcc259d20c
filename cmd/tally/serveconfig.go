package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/durable"
	"github.com/tallyhq/tally/ingest/receiver"
	"github.com/tallyhq/tally/ingest/writer"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/query/traceql"
	"github.com/tallyhq/tally/retention"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/server"
	"github.com/tallyhq/tally/settle"
	"github.com/tallyhq/tally/support/auth"
)

// serveConfig is every setting of tally serve, typed, one sub-struct per
// part of the system. bind registers them all as flags in one place (the
// environment and tally.yaml layer under the flags, see configFlag);
// assemble reads only this struct.
type serveConfig struct {
	Store       storeFlags
	Listen      string
	DataDir     string
	LogLevel    string
	Insecure    bool
	ExternalURL string
	MemoryLimit int64
	// MemoryBudget is --memory-budget; MaxLoadSpans what it allows one
	// load of the settler and of the cost rollup (applyMemoryBudget).
	MemoryBudget int64
	MaxLoadSpans int
	// BackgroundLoads is how many loads of spans the background jobs (the
	// settler, the cost rollup, the review of runs in flight for /metrics
	// and the signal rules) hold at once (package loadgate).
	BackgroundLoads int
	GCPercent       int
	NoMigrate       bool

	Ingest  ingestConfig
	Durable durableConfig
	Writer  writer.Config
	HTTP    server.HTTPLimits
	API     apiConfig
	Alerts  alertsConfig
	Auth    authConfig
	Debug   debugConfig
	Storage storageConfig
	Settle  settleConfig
}

// settleConfig is the settling of runs into the run table (package settle).
type settleConfig struct {
	Runner   string // auto, on, off
	Quiet    time.Duration
	Interval time.Duration
	Margin   time.Duration
}

// storageConfig is retention and the free-space floor.
type storageConfig struct {
	Retention        time.Duration
	ContentRetention time.Duration
	// ContentRetentionSet: --content-retention was given (flag, env or
	// file); otherwise it follows a shorter --retention.
	ContentRetentionSet bool
	RollupRetention     time.Duration
	ProjectRetention    []string
	RetentionEvery      time.Duration
	RetentionRunner     string
	DiskFloor           string
	DiskCheckEvery      time.Duration
}

// ingestConfig is how spans are received and normalized.
type ingestConfig struct {
	Limits        ingest.Limits
	MaxInFlight   int64
	MinBodyRate   int64
	BodyRateGrace time.Duration
	NoContent     bool
	PrivacyRules  []string
	UsageReading  []string
	UsageProvider []string
	Prices        string
	LiteLLMPrices string
}

// durableConfig is the durable log in front of the writer.
type durableConfig struct {
	Disabled     bool
	MaxBytes     int64
	SegmentBytes int64
	NoSync       bool
	PaceBytes    int64
	PaceWait     time.Duration
	NoStream     bool
	CommitSpans  int
	CommitBytes  int64
	CommitEvery  time.Duration
	StreamBatch  int64
	// DeadLetterAttempts and StuckAfter: see durable.Config.
	DeadLetterAttempts int
	StuckAfter         time.Duration
}

// defaultMaxSpanFuture is --max-span-future unless set: clocks a little
// ahead are common, hours ahead is a bug (or a time in the wrong unit).
const defaultMaxSpanFuture = 2 * time.Hour

// apiConfig bounds the JSON API.
type apiConfig struct {
	MaxQueryRange time.Duration
	RunReads      api.RunReadLimits
	// ToolEffects are the tool effect classes, [project:]pattern=class.
	ToolEffects []string
	// Signals are the safety signals' thresholds.
	Signals safety.Limits
	// ToolRegistry are the tools agents may call, [project:]pattern.
	ToolRegistry []string
	// RunCaps are the run budgets, "key=value …" each.
	RunCaps []string
	// Validation bounds checking tool arguments against their schemas.
	Validation safety.ValidationLimits
	// Search bounds TraceQL queries.
	Search query.SearchLimits
	// WindowExactRuns is the most runs the window reports (tasks, caps,
	// versions, the safety review) read one by one; a window of more reads
	// the run rollup (query.WithWindowExactRuns).
	WindowExactRuns int
}

// alertsConfig is alerting, the metrics exporter and which replica evaluates.
type alertsConfig struct {
	RulesPath string
	// RulesExplicit: the rules file was named (a missing one is then an
	// error; the default may be missing, and alerting is off).
	RulesExplicit  bool
	Alertmanagers  []string
	Webhooks       []string
	Interval       time.Duration
	ResendInterval time.Duration
	// HistoryRetention and MaxHistory bound the alert history.
	HistoryRetention time.Duration
	MaxHistory       int
	MetricsWindow    time.Duration
	MaxLabelValues   int
	Evaluator        string // auto, on, off
	ReplicaID        string
}

// authConfig is API keys, UI sessions and what is trusted.
type authConfig struct {
	StaticKeys     auth.StaticKeys
	Refresh        time.Duration
	SessionSecret  string
	SessionTTL     time.Duration
	AllowedHosts   []string
	TrustedProxies []string
}

// debugConfig is the opt-in profiling listener.
type debugConfig struct {
	Listen string
}

// defaultRulesFile is the documented default rule set, relative to the
// working directory (the repository root for make run).
const defaultRulesFile = "deploy/alerts.yaml"

// defaultGCPercent is --gc-percent unless overridden: twice Go's 100. At
// full ingest the collector took about a fifth of tally's CPU, most of it
// for a heap far under --memory-limit; at 200 tally's CPU per span fell by
// 15-20% in alternated runs (issue #18's note) while the limit, not the
// growth, still bounds the heap under overload and large content.
const defaultGCPercent = 200

// bind registers every setting of tally serve as a flag of fs, with its
// default.
func (c *serveConfig) bind(fs *pflag.FlagSet) {
	c.Ingest.Limits = ingest.DefaultLimits()
	c.Ingest.Limits.MaxSpanFuture = defaultMaxSpanFuture
	c.Writer = writer.DefaultConfig()
	c.HTTP = server.DefaultHTTPLimits()
	c.API = apiConfig{MaxQueryRange: api.DefaultMaxQueryRange, RunReads: api.DefaultRunReadLimits(), WindowExactRuns: query.DefaultWindowExactRuns}

	c.Store.register(fs, &c.DataDir)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:4318", "address for OTLP, API and UI")
	fs.StringVar(&c.DataDir, "data-dir", ".tally/data", "directory for tally's local state (durable log, alert state, key cache) and the embedded store (store/)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.BoolVar(&c.Insecure, "insecure", false, "allow serving without API keys on a non-loopback address")
	fs.StringVar(&c.ExternalURL, "external-url", "", "URL users reach tally at (links in alerts); default http://<listen>")
	fs.Int64Var(&c.MemoryLimit, "memory-limit", 216<<20, "soft memory limit in bytes for the Go runtime (the GC works harder near it); 0 for none; GOMEMLIMIT wins when set. Unless given: 3/10 of --memory-budget on the embedded store, 27/64 on a server store")
	fs.IntVar(&c.BackgroundLoads, "background-loads", 1, "loads of spans the background jobs (the settler, the cost rollup, the review of runs in flight for /metrics and the signal rules) hold in memory at once, each at most the spans --memory-budget allows one load; the others wait their turn (at least 1)")
	fs.Int64Var(&c.MemoryBudget, "memory-budget", defaultMemoryBudget, "memory tally sizes its limits to stay within, the embedded store's engine included (its code pages, file-backed, on top): the defaults of --memory-limit, --embedded-max-memory, the engine's caches, --batch-bytes and --max-inflight-bytes are shares of it (a limit given itself wins), and the spans one load of the settler or the cost rollup holds (and the cost reports' edge and open hours load and keep); at least 128 MiB")
	fs.IntVar(&c.GCPercent, "gc-percent", defaultGCPercent, "the Go collector's heap growth between collections, in percent (GOGC); the memory limit still bounds the heap; negative turns the collector off until the limit; GOGC wins when set")
	fs.BoolVar(&c.NoMigrate, "no-migrate", false, "do not apply migrations at start-up")

	st := &c.Storage
	def := retention.DefaultPolicy()
	st.Retention, st.ContentRetention, st.RollupRetention = def.Spans, def.Content, def.Rollups
	fs.Var(dayDuration{d: &st.Retention, zero: true}, "retention", "how long spans (and outcomes) are kept, e.g. 30d; 0 keeps them forever")
	fs.Var(dayDuration{d: &st.ContentRetention, zero: true}, "content-retention", "how long captured prompt and tool content is kept (at most --retention; by default 7d, or --retention when that is shorter); 0: as long as spans")
	fs.Var(dayDuration{d: &st.RollupRetention, zero: true}, "rollup-retention", "how long the hourly cost rollups are kept (at least --retention); 0 forever")
	fs.StringSliceVar(&st.ProjectRetention, "project-retention", nil, "a project's own retention: project=30d, or project=spans:30d,content:7d (repeatable; tally.yaml: a list)")
	fs.DurationVar(&st.RetentionEvery, "retention-interval", time.Hour, "how often retention runs after its run at start-up")
	fs.StringVar(&st.RetentionRunner, "retention-runner", "auto", "which replica applies retention: auto (one at a time, under a lease in ClickHouse), on (this one), off (none: data is kept until you run it elsewhere)")
	fs.StringVar(&st.DiskFloor, "disk-floor", "1GiB", "least free space on the data directory's disk (and ClickHouse's, where the server reports it): below it tally refuses writes with 503 until space returns; a size (1GiB, 500MB) or a percentage (5%); 0 for none")
	fs.DurationVar(&st.DiskCheckEvery, "disk-check-interval", 10*time.Second, "how often free space is measured")

	se := &c.Settle
	fs.StringVar(&se.Runner, "settle-runner", "auto", "which replica settles runs into the run table: auto (one at a time, under a lease in ClickHouse), on (this one), off (none: runs are read from their spans until one does)")
	fs.DurationVar(&se.Quiet, "settle-quiet", settle.DefaultQuiet, "how long after a run's last span ended and was written the run is settled (its row computed once); until then it is read live from its spans")
	fs.DurationVar(&se.Interval, "settle-interval", 5*time.Second, "how often quiet runs are settled")
	fs.DurationVar(&se.Margin, "settle-margin", time.Minute, "how long a written span may take to become visible to reads: the runs with spans written within it are read live")

	in := &c.Ingest
	fs.StringVar(&in.Prices, "prices", "", "YAML price file adding to or overriding the built-in catalog")
	fs.StringVar(&in.LiteLLMPrices, "litellm-prices", "", "LiteLLM model_prices_and_context_window.json to load as overrides")
	fs.BoolVar(&in.NoContent, "no-content", false, "store no prompt, message or tool content at all")
	fs.StringSliceVar(&in.PrivacyRules, "privacy-rule", nil, "attribute privacy rule KEY=drop|redact|hash (repeatable)")
	fs.StringSliceVar(&in.UsageReading, "usage-reading", nil, "override how an instrumentation reports input: READING_OR_SCOPE=inclusive|exclusive (of cache tokens; repeatable; see docs/instrumentations.md)")
	fs.StringSliceVar(&in.UsageProvider, "usage-provider", nil, "how spans of unknown instrumentations report input, by provider: PROVIDER=inclusive|exclusive (repeatable; prefix.* matches a family)")
	fs.Int64Var(&in.Limits.MaxBodyBytes, "max-body-bytes", in.Limits.MaxBodyBytes, "largest request body, after decompression (413 above)")
	fs.IntVar(&in.Limits.MaxSpansPerRequest, "max-spans-per-request", in.Limits.MaxSpansPerRequest, "most spans in one request (413 above)")
	fs.IntVar(&in.Limits.MaxAttrValueBytes, "max-attr-value-bytes", in.Limits.MaxAttrValueBytes, "longest attribute value kept; longer ones are truncated with a marker")
	fs.IntVar(&in.Limits.MaxContentBytes, "max-content-bytes", in.Limits.MaxContentBytes, "longest content value (tool arguments/results, messages) kept")
	fs.IntVar(&in.Limits.MaxAttrsPerSpan, "max-attrs-per-span", in.Limits.MaxAttrsPerSpan, "most attributes kept per span; the rest are counted in tally.dropped_attributes")
	fs.IntVar(&in.Limits.MaxEventsPerSpan, "max-events-per-span", in.Limits.MaxEventsPerSpan, "most events kept per span")
	fs.Var(dayDuration{d: &in.Limits.MaxSpanAge, zero: true}, "max-span-age", "refuse spans (partial success) that started longer than this before they arrive, e.g. 30d; 0: the longest span retention (--retention, --project-retention), none when spans are kept forever")
	fs.Var(dayDuration{d: &in.Limits.MaxSpanFuture, zero: true}, "max-span-future", "refuse spans (partial success) that start more than this after they arrive (a clock ahead), e.g. 2h; 0: no bound")
	fs.Int64Var(&in.MaxInFlight, "max-inflight-bytes", receiver.DefaultMaxInFlightBytes, "request bytes held by all requests at once (429 above); unless given, a sixteenth of --memory-budget")
	fs.Int64Var(&in.MinBodyRate, "min-body-rate", receiver.DefaultMinBodyRate, "slowest a request body may arrive after --body-rate-grace, in bytes/s on the wire (408 below); 0 for none")
	fs.DurationVar(&in.BodyRateGrace, "body-rate-grace", receiver.DefaultBodyRateGrace, "time any request body may take before --min-body-rate applies")

	d := &c.Durable
	fs.Int64Var(&d.MaxBytes, "wal-max-bytes", 1<<30, "durable log size cap; above it ingest answers 503 with Retry-After and /readyz is not ready")
	fs.Int64Var(&d.SegmentBytes, "wal-segment-bytes", 64<<20, "durable log segment size")
	fs.Int64Var(&d.PaceBytes, "wal-pace-bytes", durable.DefaultPaceBytes, "durable log backlog above which acknowledgements wait for ClickHouse while it keeps up (-1: never wait)")
	fs.DurationVar(&d.PaceWait, "wal-pace-wait", durable.DefaultPaceWait, "longest one request waits for ClickHouse under --wal-pace-bytes before it is logged anyway")
	fs.BoolVar(&d.NoStream, "wal-no-stream", false, "write each batch drained from the durable log in INSERTs of its own instead of streaming consecutive batches into one INSERT per table (the embedded store never streams)")
	fs.IntVar(&d.CommitSpans, "wal-commit-spans", durable.DefaultCommitSpans, "spans after which a streaming INSERT from the durable log is committed and checkpointed")
	fs.Int64Var(&d.CommitBytes, "wal-commit-bytes", durable.DefaultCommitBytes, "log record bytes after which a streaming INSERT is committed; keep under --wal-pace-bytes")
	fs.Int64Var(&d.StreamBatch, "wal-stream-batch-bytes", durable.DefaultStreamBatchBytes, "log records the drain holds at a time while it streams, each counted at its size with every string written out (in place of --batch-bytes)")
	fs.DurationVar(&d.CommitEvery, "wal-commit-interval", durable.DefaultCommitInterval, "age after which a streaming INSERT is committed at its next batch (at most 15s: a stream must commit within the 30s INSERT timeout)")
	fs.IntVar(&d.DeadLetterAttempts, "wal-dead-letter-attempts", durable.DefaultDeadLetterAttempts, "refusals in a row of the same rows by ClickHouse (for the rows themselves, not an outage) before a batch is written record by record, and a record alone is moved to <data-dir>/deadletter so the records behind it go on")
	fs.DurationVar(&d.StuckAfter, "wal-stuck-after", durable.DefaultStuckAfter, "how long the durable log's writes to ClickHouse may fail without one succeeding before /readyz reports the drain stuck")
	fs.BoolVar(&d.NoSync, "wal-no-sync", false, "UNSAFE, benchmarks only: acknowledge before fsync (a machine crash can lose acknowledged spans)")
	fs.BoolVar(&d.Disabled, "no-wal", false, "acknowledge only after ClickHouse took the rows, without a local log (a ClickHouse outage then refuses ingest)")

	w := &c.Writer
	fs.IntVar(&w.QueueSpans, "queue-spans", w.QueueSpans, "rows accepted but not yet written to ClickHouse (503 above)")
	fs.IntVar(&w.MaxBatchSpans, "batch-spans", w.MaxBatchSpans, "rows per ClickHouse INSERT")
	fs.Int64Var(&w.MaxBatchBytes, "batch-bytes", w.MaxBatchBytes, "row data per ClickHouse INSERT and per batch drained from the durable log; unless given, on the embedded store, a 64th of --memory-budget")
	fs.DurationVar(&w.FlushInterval, "flush-interval", w.FlushInterval, "longest a row waits before its INSERT")
	fs.DurationVar(&w.AckTimeout, "ack-timeout", w.AckTimeout, "longest a request waits for its rows to be stored before 503")

	fs.IntVar(&c.API.RunReads.MaxRunSpans, "max-run-spans", c.API.RunReads.MaxRunSpans, "most span nodes one run answer holds (a larger run is answered in part, the rest fetched per span; fixtures of larger runs are refused with 413)")
	bindReview(fs, &c.API)
	fs.IntVar(&c.API.RunReads.MaxTreeSpans, "max-tree-spans", c.API.RunReads.MaxTreeSpans, "most spans of one run read to build its tree (about 1 KB of memory each while the read runs; a larger run is built from its earliest spans, marked truncated)")
	fs.IntVar(&c.API.RunReads.MaxConcurrent, "max-concurrent-run-reads", c.API.RunReads.MaxConcurrent, "run and fixture reads served at once; others wait, then get 503 with Retry-After")
	fs.IntVar(&c.API.WindowExactRuns, "window-exact-runs", c.API.WindowExactRuns, "most runs the tasks, caps, versions and safety-review reports read one by one; a range of more reads the hourly run rollup for its whole hours, percentiles from sketches within 1%, the rest exact (0: the rollup for every range with a whole hour)")
	fs.Var(dayDuration{d: &c.API.MaxQueryRange}, "max-query-range", "longest since..until an API request may ask for, like 400d or 72h (400 above)")
	sl := &c.API.Search
	sl.MaxRange, sl.MaxRowsToRead, sl.MaxExecution, sl.MaxExamined = query.DefaultSearchMaxRange, query.DefaultSearchMaxRowsToRead,
		query.DefaultSearchMaxExecution, query.DefaultSearchMaxExamined
	sl.Query.MaxLength, sl.Query.MaxDepth = traceql.DefaultMaxLength, traceql.DefaultMaxDepth
	fs.Var(dayDuration{d: &sl.MaxRange}, "search-max-range", "longest since..until a search may cover, like 31d or 72h (400 above)")
	fs.Uint64Var(&sl.MaxRowsToRead, "search-max-rows", sl.MaxRowsToRead, "rows one search statement may read in ClickHouse (max_rows_to_read; 503 above)")
	fs.DurationVar(&sl.MaxExecution, "search-max-time", sl.MaxExecution, "longest one search statement may run (max_execution_time; 503 above)")
	fs.IntVar(&sl.MaxExamined, "search-max-examined", sl.MaxExamined, "candidate runs one search request evaluates before it answers in part, with a cursor to go on")
	fs.IntVar(&sl.Query.MaxLength, "search-max-query-bytes", sl.Query.MaxLength, "longest query text (400 above)")
	fs.IntVar(&sl.Query.MaxDepth, "search-max-depth", sl.Query.MaxDepth, "deepest nesting of a query's braces, parentheses and operators (400 above)")

	h := &c.HTTP
	fs.IntVar(&h.MaxHeaderBytes, "max-header-bytes", h.MaxHeaderBytes, "request line and headers (431 above, plus Go's 4 KiB slack)")
	fs.DurationVar(&h.ReadHeaderTimeout, "read-header-timeout", h.ReadHeaderTimeout, "time to read a request's headers")
	fs.DurationVar(&h.ReadTimeout, "read-timeout", h.ReadTimeout, "time to read a whole request")
	fs.DurationVar(&h.WriteTimeout, "write-timeout", h.WriteTimeout, "time to write an answer")

	a := &c.Alerts
	fs.StringVar(&a.RulesPath, "alerts-rules", defaultRulesFile, "alert rules file (YAML); alerting is off when the default file is missing")
	fs.StringSliceVar(&a.Alertmanagers, "alertmanager-url", nil, "Alertmanager base URL to push alerts to (POST /api/v2/alerts); repeatable")
	fs.StringSliceVar(&a.Webhooks, "alerts-webhook-url", nil, "URL receiving alerts as a generic JSON webhook; repeatable")
	fs.DurationVar(&a.Interval, "alerts-interval", time.Minute, "how often alert rules are evaluated and the /metrics figures refreshed")
	fs.DurationVar(&a.ResendInterval, "alerts-resend-interval", time.Minute, "how often a firing alert is re-sent to Alertmanager")
	fs.DurationVar(&a.HistoryRetention, "alerts-history-retention", 30*24*time.Hour, "how long a resolved alert stays in the alert history (GET /api/v1/alerts/history)")
	fs.IntVar(&a.MaxHistory, "alerts-max-history", 10000, "most alert episodes the history keeps; the oldest go first")
	fs.DurationVar(&a.MetricsWindow, "alerts-metrics-window", 15*time.Minute, "window of the tool and model gauges on /metrics")
	fs.IntVar(&a.MaxLabelValues, "alerts-max-label-values", 200, "most distinct tool, model and agent label values on /metrics; more are counted as __other__")
	fs.StringVar(&a.Evaluator, "alerts-evaluator", "auto", "which replicas evaluate alerts: auto (the one holding a lease in ClickHouse), on (this one, always), off (never)")
	fs.StringVar(&a.ReplicaID, "replica-id", "", "this replica's name in the alert evaluator lease; default <hostname>-<random>")

	au := &c.Auth
	fs.Var(&au.StaticKeys, "auth-key", "static API key as project:scope[,scope]:sha256hex (the key's hash from `tally keys hash`, never the key); repeatable")
	fs.DurationVar(&au.Refresh, "auth-refresh", auth.DefaultRefresh, "how often managed keys are reloaded from ClickHouse: a created or revoked key takes effect within it")
	fs.StringVar(&au.SessionSecret, "session-secret", "", "secret (32+ bytes) signing UI session cookies; default: generated once into <data-dir>/"+auth.SecretFile+". Give replicas the same one")
	fs.DurationVar(&au.SessionTTL, "session-ttl", auth.DefaultSessionTTL, "how long a UI sign-in lasts")
	fs.StringSliceVar(&au.AllowedHosts, "allowed-hosts", nil, "Host names (or IPs) served while no API key exists, besides localhost, 127.0.0.1 and [::1] (DNS rebinding guard); * for any")
	fs.StringSliceVar(&au.TrustedProxies, "trusted-proxies", nil, "reverse proxies (IP addresses or CIDR prefixes, comma-separated) whose X-Forwarded-Host and X-Forwarded-Proto are believed; default none")

	fs.StringVar(&c.Debug.Listen, "debug-listen", "", "serve Go profiling (net/http/pprof under /debug/pprof/) on this separate address, e.g. 127.0.0.1:6060; off when empty")
}

// bindReview registers the safety review's settings (serve, and migrate,
// which settles runs with the same review).
func bindReview(fs *pflag.FlagSet, a *apiConfig) {
	fs.StringSliceVar(&a.ToolEffects, "tool-effects", nil, "tool effect classes for the safety review, [project:]pattern=read|idempotent|non_idempotent|irreversible (repeatable; globs; the first match wins, a project's first)")
	fs.DurationVar(&a.Signals.MinBackoff, "signal-min-backoff", safety.DefaultLimits().MinBackoff, "a retry starting sooner than this after the attempt it retried ended is a retry_storm signal")
	fs.IntVar(&a.Signals.MaxRepeats, "signal-max-repeats", safety.DefaultLimits().MaxRepeats, "more calls than this of one tool with the same arguments failing in one run is a runaway_loop signal")
	fs.IntVar(&a.Signals.MaxSteps, "signal-max-steps", safety.DefaultLimits().MaxSteps, "more tool calls than this in one run is a runaway_loop signal")
	fs.DurationVar(&a.Signals.Lockstep, "signal-lockstep", safety.DefaultLimits().Lockstep, "retries of one tool by different branches starting within this of each other are a retry_storm signal (no jitter)")
	fs.StringSliceVar(&a.ToolRegistry, "tool-registry", nil, "tools agents may call, [project:]pattern (repeatable; globs): a call of another is an unknown_tool signal; a project with no patterns has no registry")
	fs.StringSliceVar(&a.RunCaps, "run-cap", nil, `a run budget checked by budget_exceeded signals: "[project=P] [task=T|agent=A] iterations=N tokens=N cost=USD wall=DURATION" (repeatable; at least one limit; wall is active time, approval waits excluded)`)
	dv := safety.DefaultValidationLimits()
	fs.IntVar(&a.Validation.MaxSteps, "validation-max-steps", dv.MaxSteps, "most validation steps (subschema × value visits) one tool call's arguments may take against its schema; past it the call is an unchecked_arguments signal (too complex)")
	fs.DurationVar(&a.Validation.MaxRunTime, "validation-max-run-time", dv.MaxRunTime, "most time one run's review spends validating tool arguments; later calls are unchecked_arguments signals")
	fs.IntVar(&a.Validation.MaxSchemaBytes, "validation-max-schema-bytes", dv.MaxSchemaBytes, "largest tool schema compiled for validation; calls against a larger one are unchecked_arguments signals")
}
