// Package rollup runs the jobs that write derived cost data: the hourly cost
// rollup (Rollup) and repricing (Reprice). They read through package query
// and write through schema.Store; reports read the rollup back through
// query.Reader.Costs.
package rollup

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/schedule"
)

// Rollup keeps the hourly cost rollup (schema.TableCostRollup) up to date.
//
// Why an idempotent recompute of closed hours rather than materialized views:
// a span's figures depend on its whole run — its agent may be named only on
// an enclosing agent span, its task on the root, its retry tax on a sibling
// tool call — and on deduplication, which ClickHouse's ReplacingMergeTree
// only does eventually. A materialized view sees one insert block at a time,
// so it would count a duplicate delivery twice and could not attribute a
// span whose parent arrives in another block. Recomputing an hour from the
// deduplicated spans (FINAL) of the runs touching it, in Go, gives the same
// answer as the live path (it is the same code), twice is the same as once,
// and a late span, a duplicate or a reprice is absorbed by recomputing the
// hours it touched.
//
// How staleness is noticed: for every closed hour, the rollup records the
// fingerprint of the spans table's rows in that hour (row count, sum of row
// versions: two numeric columns, no FINAL) read just before computing it. An
// hour whose fingerprint has changed since — new spans, a duplicate, a
// reprice (new versions), a background merge collapsing duplicates — is
// recomputed, with its neighbours within query.DefaultTraceWindow, whose spans'
// attribution a late span may also change. An insert of a duplicate that a
// merge collapses before the next check leaves the fingerprint unchanged,
// and indeed changes nothing.
//
// Freshness: Refresh checks the hours of the last Lookback (48 h by default)
// and Run calls it every Interval (1 min): a closed hour reflects late data
// within about one interval. Hours older than Lookback are checked every
// FullEvery (1 h) over FullLookback (35 days). Reports never wait for a
// rollup: the open hour, and every hour not rolled up yet, is read live from
// raw spans, so a report is always complete; a rolled-up hour that received
// late data shows it after the next refresh.
//
// Readers take, for each hour, only the rows of its latest computation (see
// query's latestGeneration), each a complete image of the hour, so a refresh running
// while a report reads, or two servers refreshing the same hour, never mix
// two computations.
type Rollup struct {
	store  *schema.Store
	reader *query.Reader
	cfg    Config

	mu       sync.Mutex          // serializes refreshes of this Rollup
	versions schema.VersionClock // the versions of the rows it writes
}

// Config tunes Rollup. Zero fields take the defaults.
type Config struct {
	// Periods: the hours Refresh checks (Lookback, 48h) and those of the
	// periodic full check (FullLookback, 35 days), and how often Run does
	// each (Interval, 1 min; FullEvery, 1 h).
	schedule.Periods
	ChunkHours int // hours computed per load of raw spans; default 6
	// MaxLoadSpans bounds the spans one load of raw spans holds (about
	// 0.5–1 KB of memory each): hours with more, by their fingerprint, are
	// loaded in that many parts of their runs. Default DefaultMaxLoadSpans.
	MaxLoadSpans int
	Logger       *slog.Logger // Run: where failed refreshes are logged; default slog.Default()
	// KeptFrom is, at now, the oldest span start every project's spans are
	// still kept from (retention: the shortest spans retention); zero or
	// nil: all are kept. Hours before it, and the trace window after it,
	// are final: their spans may be gone, so they are never recomputed —
	// a recomputation would replace the rollup, kept longer, with zeros.
	KeptFrom func(now time.Time) time.Time
	// Gate, when set, gives each load of raw spans its turn among the
	// background jobs that load spans (the settler's, the review of runs
	// in flight): a catch-up of all of them holds one load at a time.
	Gate Gate
}

// Gate admits a background load (*loadgate.Gate): Enter waits for a turn
// and returns the function that ends it.
type Gate interface {
	Enter(ctx context.Context, job string) (release func(), err error)
}

// DefaultMaxLoadSpans is Config.MaxLoadSpans unless overridden: tens of MiB
// per load, so the job stays a small part of serve's memory at any hour's
// volume.
const DefaultMaxLoadSpans = 50_000

func (c Config) withDefaults() Config {
	c.Periods = c.Periods.WithDefaults()
	if c.MaxLoadSpans <= 0 {
		c.MaxLoadSpans = DefaultMaxLoadSpans
	}
	if c.ChunkHours <= 0 {
		c.ChunkHours = 6
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// New returns a Rollup over the store's spans and rollup tables.
func New(store *schema.Store, cfg Config) *Rollup {
	return &Rollup{store: store, reader: query.NewReader(store), cfg: cfg.withDefaults()}
}

// RefreshStats says what a refresh did.
type RefreshStats struct {
	HoursChecked    int `json:"hours_checked"`
	HoursRecomputed int `json:"hours_recomputed"`
	RowsWritten     int `json:"rows_written"`
	// Chunks counts the recomputations, each one write of rows and hours.
	Chunks int `json:"chunks"`
	// SpanLoads counts the loads of attributed spans (one per shard of a
	// chunk of hours that holds spans; hours without spans load none).
	SpanLoads int `json:"span_loads"`
}

// Run refreshes the rollup every Interval, and checks the whole FullLookback
// every FullEvery (first at start), until ctx ends. Failures are logged and
// retried at the next tick.
func (r *Rollup) Run(ctx context.Context) {
	r.cfg.Periods.Run(ctx, r.cfg.Logger, "cost rollup", func(ctx context.Context, since, until time.Time) error {
		_, err := r.RefreshRange(ctx, since, until)
		return err
	})
}

// Refresh recomputes the closed hours of the last Lookback before now whose
// spans changed since they were last computed (or that never were).
func (r *Rollup) Refresh(ctx context.Context, now time.Time) (RefreshStats, error) {
	return r.RefreshRange(ctx, now.Add(-r.cfg.Lookback), now)
}

// RefreshRange recomputes the closed hours (ending at or before until) that
// start in [since, until) and whose spans changed since they were last
// computed, or that never were.
func (r *Rollup) RefreshRange(ctx context.Context, since, until time.Time) (RefreshStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var stats RefreshStats
	from, to := since.UTC().Truncate(time.Hour), until.UTC().Truncate(time.Hour)
	if !to.After(from) {
		return stats, nil
	}
	// Neighbours whose runs may reach into a changed hour.
	margin := query.DefaultTraceWindow.Truncate(time.Hour)
	if margin < query.DefaultTraceWindow {
		margin += time.Hour
	}
	if r.cfg.KeptFrom != nil {
		if kept := r.cfg.KeptFrom(time.Now()); !kept.IsZero() {
			// The first hour whose neighbours all still have their spans.
			if floor := kept.UTC().Truncate(time.Hour).Add(time.Hour + margin); from.Before(floor) {
				from = floor
			}
			if !to.After(from) {
				return stats, nil
			}
		}
	}
	// Fingerprints first, state second, computation last: a span arriving
	// after the fingerprint was read changes it again, so it is never missed.
	raw, err := r.reader.SpanFingerprints(ctx, from.Add(-margin), to)
	if err != nil {
		return stats, err
	}
	state, err := r.reader.RollupFingerprints(ctx, from.Add(-margin), to)
	if err != nil {
		return stats, err
	}
	stale := map[time.Time]bool{}
	// A recent hour that never had spans is left unrecorded, so reads
	// answer it live: spans that arrive late for it (an agent's run sent
	// a few minutes after its hour closed) count at once, not after the
	// next refresh finds the hour's fingerprint changed. Recorded, it
	// would be a rolled-up hour of nothing until then.
	hasSpans := func(h time.Time) bool { return raw[h].Rows > 0 }
	recent := time.Now().UTC().Add(-r.cfg.Lookback).Truncate(time.Hour)
	leaveLive := func(h time.Time) bool {
		_, computed := state[h]
		return !computed && !hasSpans(h) && !h.Before(recent)
	}
	for h := from; h.Before(to); h = h.Add(time.Hour) {
		stats.HoursChecked++
		if st, ok := state[h]; ok && st == raw[h] || leaveLive(h) {
			continue
		}
		for n := h.Add(-margin); !n.After(h.Add(margin)); n = n.Add(time.Hour) {
			if n.Before(to) && !leaveLive(n) {
				stale[n] = true
			}
		}
	}
	if len(stale) == 0 {
		return stats, nil
	}
	hours := make([]time.Time, 0, len(stale))
	for h := range stale {
		hours = append(hours, h)
	}
	sort.Slice(hours, func(i, j int) bool { return hours[i].Before(hours[j]) })
	for len(hours) > 0 {
		// Up to ChunkHours consecutive hours a chunk, and past that the
		// hours without spans that follow: they cost no load, and on a
		// fresh or quiet store a full check's hundreds of them go in one
		// write instead of one each ChunkHours (there are no spans to load).
		n := 1
		for n < len(hours) && hours[n].Equal(hours[n-1].Add(time.Hour)) &&
			(n < r.cfg.ChunkHours || !hasSpans(hours[n])) {
			n++
		}
		chunk := hours[:n]
		hours = hours[n:]
		written, loads, err := r.recompute(ctx, chunk[0], chunk[n-1].Add(time.Hour), raw)
		if err != nil {
			return stats, err
		}
		stats.HoursRecomputed += n
		stats.RowsWritten += written
		stats.Chunks++
		stats.SpanLoads += loads
	}
	return stats, nil
}

// rollupKey is a rollup row's identity.
type rollupKey struct {
	project      string
	grain        uint8
	hour         int64
	agent        string
	model        string
	provider     string
	task         string
	service      string
	tool         string
	conversation string
	user         string
}

// recompute rewrites the rollup rows of the hours in [from, to), all
// projects, and records the hours with the fingerprints read before; it
// returns the rows written and the span loads made.
func (r *Rollup) recompute(ctx context.Context, from, to time.Time, raw map[time.Time]query.HourFingerprint) (int, int, error) {
	rows := map[rollupKey]*schema.CostRollupRow{}
	total := spanRows(from, to, raw)
	var shards []query.Shard
	switch loadShards(total, r.cfg.MaxLoadSpans) {
	case 0:
	case 1:
		shards = []query.Shard{{}}
	default:
		// Ranges of trace ids, not shards by hash: each load then reads
		// the hours' granules of its range only, where a shard by hash read
		// every granule of the hours (an hour of 140k spans in 6 loads
		// read it 6 times).
		var err error
		if shards, err = r.reader.SpanShards(ctx, from, to, r.cfg.MaxLoadSpans, total); err != nil {
			return 0, 0, err
		}
	}
	for i, shard := range shards {
		if err := r.aggregate(ctx, from, to, shard, rows); err != nil {
			return 0, i, err
		}
	}
	written, err := r.write(ctx, from, to, raw, rows)
	return written, len(shards), err
}

// rowOf is rows' row for k, added empty when missing.
func rowOf(rows map[rollupKey]*schema.CostRollupRow, k rollupKey) *schema.CostRollupRow {
	if x := rows[k]; x != nil {
		return x
	}
	x := &schema.CostRollupRow{Project: k.project, Grain: k.grain, Hour: time.Unix(k.hour, 0).UTC(),
		Agent: k.agent, Model: k.model, Provider: k.provider, Task: k.task, Service: k.service,
		Tool: k.tool, Conversation: k.conversation, User: k.user}
	rows[k] = x
	return x
}

// loadShards is how many parts the runs of [from, to) are loaded in so
// that one load holds at most max spans, given the range's span rows by
// the hours' fingerprints (spanRows; they count duplicates too, so it errs
// toward more, smaller loads). Hours whose fingerprints count no span need
// no load at all: the fingerprints are of span_facts, the table the load
// reads, and a load returns only the spans that start in [from, to). More
// than one part are ranges of trace ids (query.RollupSource.SpanShards),
// or this many shards by hash when the ids do not spread.
func loadShards(total, max int) int {
	switch {
	case total == 0:
		return 0
	case total <= max:
		return 1
	}
	return (total + max - 1) / max
}

// spanRows is the span rows the fingerprints count in the hours of
// [from, to).
func spanRows(from, to time.Time, raw map[time.Time]query.HourFingerprint) int {
	var total uint64
	for h := from; h.Before(to); h = h.Add(time.Hour) {
		total += raw[h].Rows
	}
	return int(total)
}

// aggregate adds the attributed spans of one shard of [from, to)'s runs to
// rows.
func (r *Rollup) aggregate(ctx context.Context, from, to time.Time, shard query.Shard, rows map[rollupKey]*schema.CostRollupRow) error {
	if r.cfg.Gate != nil {
		release, err := r.cfg.Gate.Enter(ctx, "rollup")
		if err != nil {
			return err
		}
		defer release()
	}
	spans, err := r.reader.AttributedSpans(ctx, "", from, to, query.DefaultTraceWindow, shard)
	if err != nil {
		return err
	}
	for i := range spans {
		a := &spans[i]
		hour := time.Unix(0, int64(a.StartNs)).UTC().Truncate(time.Hour).Unix()
		var t query.CostTotals
		t.AddSpan(a)
		for _, k := range []rollupKey{
			{grain: schema.GrainAgent, agent: a.Agent},
			{grain: schema.GrainModel, provider: a.Provider, model: a.Model},
			{grain: schema.GrainProvider, provider: a.Provider},
			{grain: schema.GrainTask, task: a.Task},
			{grain: schema.GrainService, service: a.Service},
			{grain: schema.GrainTool, tool: a.Tool},
			{grain: schema.GrainConversation, conversation: a.Conversation},
			{grain: schema.GrainUser, user: a.User},
		} {
			k.project, k.hour = a.Project, hour
			addTotals(rowOf(rows, k), &t)
		}
	}
	return nil
}

// write replaces the rollup rows of [from, to) with rows, zeroing the keys
// the hours had before and no longer have, and records the hours computed.
func (r *Rollup) write(ctx context.Context, from, to time.Time, raw map[time.Time]query.HourFingerprint, rows map[rollupKey]*schema.CostRollupRow) (int, error) {
	old, err := r.reader.RollupKeys(ctx, from, to)
	if err != nil {
		return 0, err
	}
	for i := range old {
		o := &old[i]
		k := rollupKey{project: o.Project, grain: o.Grain, hour: o.Hour.Unix(), agent: o.Agent, model: o.Model,
			provider: o.Provider, task: o.Task, service: o.Service, tool: o.Tool, conversation: o.Conversation, user: o.User}
		if rows[k] == nil {
			rowOf(rows, k) // a tombstone: zero measures replace the old row
		}
	}
	version := r.versions.Next()
	out := make([]schema.CostRollupRow, 0, len(rows))
	for _, x := range rows {
		x.Version = version
		out = append(out, *x)
	}
	if err := r.store.InsertCostRollup(ctx, out); err != nil {
		return 0, fmt.Errorf("write cost rollup %s–%s: %w", from.Format(time.RFC3339), to.Format(time.RFC3339), err)
	}
	computedAt := time.Now().UTC().Truncate(time.Second)
	var hours []schema.RollupHourRow
	for h := from; h.Before(to); h = h.Add(time.Hour) {
		fp := raw[h]
		hours = append(hours, schema.RollupHourRow{Hour: h, Version: version, RawRows: fp.Rows,
			RawVersionSum: fp.VersionSum, ComputedAt: computedAt})
	}
	if err := r.store.InsertRollupHours(ctx, hours); err != nil {
		return 0, fmt.Errorf("record rollup hours: %w", err)
	}
	return len(out), nil
}

func addTotals(x *schema.CostRollupRow, t *query.CostTotals) {
	x.Spans += t.Spans
	x.LLMCalls += t.LLMCalls
	x.ToolCalls += t.ToolCalls
	x.ToolRetries += t.ToolRetries
	x.ToolErrors += t.ToolErrors
	x.InputTokens += t.Usage.Input
	x.CacheReadTokens += t.Usage.CacheRead
	x.CacheWriteTokens += t.Usage.CacheWrite
	x.OutputTokens += t.Usage.Output
	x.ReasoningTokens += t.Usage.Reasoning
	x.CostTotal += t.Cost.Total
	x.CostInput += t.Cost.Input
	x.CostCacheRead += t.Cost.CacheRead
	x.CostCacheWrite += t.Cost.CacheWrite
	x.CostOutput += t.Cost.Output
	x.UnpricedSpans += t.UnpricedSpans
	in, out := t.UnpricedTokens()
	x.UnpricedInputTokens += in
	x.UnpricedOutputTokens += out
	x.ClientCostSpans += t.ClientCostSpans
	x.RetryTaxUSD += t.RetryTaxUSD
	x.RetryTaxCalls += t.RetryTaxCalls
	x.ConfidenceSpend.Merge(t.ByConfidence)
}
