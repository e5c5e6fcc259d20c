// Package settle keeps the run table (schema.TableRuns) current: once a run
// has been quiet for a while, its row is computed from its spans — by
// package query, with the code that answers the run's detail — and written
// with a version; a span written later makes the row stale, and the run is
// settled again.
//
// How a stale row is noticed: a row records the highest span version it
// reflects (RunRow.MaxVersion) and the digest of the safety configuration
// it was reviewed under. A run is stale when a span of it has a higher
// version (a late span, a duplicate delivery, a reprice), or the
// configuration changed, or it has no row. There is no other state: the run
// table is its own record of what is settled, so a crash or a ClickHouse
// outage mid-settlement leaves the runs stale, and the next pass settles
// them; a run settled twice (two replicas during a lease handover, a retry
// after a write whose answer was lost) has two rows of the same content,
// and readers keep the latest (FINAL). Nothing is lost or counted twice.
//
// The passes:
//   - Cycle, every Interval: the runs with a span written after the settled
//     mark (schema.RunMarkSettled), among spans starting within Lookback.
//     Quiet runs are settled; the mark then advances to just below the
//     oldest span still waiting (a run not yet quiet), and never past now −
//     Margin, the time a written span may take to become visible.
//   - Check, every RecheckEvery over Lookback and every FullEvery (first at
//     start) over FullLookback: every stale run, whatever its spans'
//     versions — spans that became visible later than Margin (a long
//     outage drained from another replica's durable log), runs the table
//     never had (an upgrade: the backfill), a changed review configuration.
//
// Readers (package query) take the runs with a span above the mark from
// the spans, live, and every other run from the run table: a run still in
// flight is never missing from a list, and the table answers the rest.
package settle

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// Config tunes a Settler. Zero fields take the defaults.
type Config struct {
	// Quiet is how long a run's last span must have ended, and been
	// written, before the run is settled (default DefaultQuiet).
	Quiet time.Duration
	// Interval is the time between cycles (default 5 s).
	Interval time.Duration
	// Lookback is how far back by start a cycle, and the frequent check,
	// look for spans (default query.LiveLookback, how far the reads look
	// for live runs).
	Lookback time.Duration
	// RecheckEvery is the time between checks over Lookback (default 10
	// min); FullEvery between checks over FullLookback (default 1 h, 35
	// days).
	RecheckEvery time.Duration
	FullEvery    time.Duration
	FullLookback time.Duration
	// Margin is how long a written span may take to become visible to
	// reads; the settled mark stays at least this far behind now (default
	// 1 min).
	Margin time.Duration
	// MaxLoadSpans bounds the spans one load holds (default
	// rollup's 50,000); MaxLoadRuns the runs (default 1,000).
	MaxLoadSpans int
	MaxLoadRuns  int
	// KeptFrom is the oldest span start retention still keeps (nil: all):
	// checks start there.
	KeptFrom func(now time.Time) time.Time
	Logger   *slog.Logger
	// Gate, when set, gives each load its turn among the background jobs
	// that load spans (the rollup's, the review of runs in flight), so
	// that a catch-up of all of them holds one load at a time.
	Gate Gate
}

// Gate admits a background load (*loadgate.Gate): Enter waits for a turn
// and returns the function that ends it.
type Gate interface {
	Enter(ctx context.Context, job string) (release func(), err error)
}

// DefaultQuiet is Config.Quiet unless set.
const DefaultQuiet = 30 * time.Second

func (c Config) withDefaults() Config {
	c.Quiet = cmp.Or(c.Quiet, DefaultQuiet)
	c.Interval = cmp.Or(c.Interval, 5*time.Second)
	c.Lookback = cmp.Or(c.Lookback, query.LiveLookback)
	c.RecheckEvery = cmp.Or(c.RecheckEvery, 10*time.Minute)
	c.FullEvery = cmp.Or(c.FullEvery, time.Hour)
	c.FullLookback = cmp.Or(c.FullLookback, 35*24*time.Hour)
	c.Margin = cmp.Or(c.Margin, time.Minute)
	c.MaxLoadSpans = cmp.Or(c.MaxLoadSpans, 50_000)
	c.MaxLoadRuns = cmp.Or(c.MaxLoadRuns, 1000)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Source is what a Settler reads (query.SettleSource).
type Source interface {
	StaleRuns(ctx context.Context, from, to time.Time, after uint64) ([]query.StaleRun, error)
	Settle(ctx context.Context, project string, ids []string, quietNs uint64) ([]query.SettledRun, error)
	SettledMark(ctx context.Context) (uint64, error)
	SpanDays(ctx context.Context, from, to time.Time) (map[time.Time]uint64, error)
}

// Sink is where a Settler writes (*schema.Store).
type Sink interface {
	InsertRuns(ctx context.Context, rows []schema.RunRow) error
	InsertRunMark(ctx context.Context, row schema.RunMarkRow) error
}

// Settler settles runs into the run table.
type Settler struct {
	src  Source
	sink Sink
	cfg  Config

	mu       sync.Mutex          // one pass at a time
	versions schema.VersionClock // the versions of the rows and marks it writes

	settled, tombstones, passes, failures, busy prometheus.Counter
	lag                                         prometheus.Gauge
}

// New returns a Settler reading src and writing sink.
func New(src Source, sink Sink, cfg Config) *Settler {
	return &Settler{src: src, sink: sink, cfg: cfg.withDefaults(),
		settled: prometheus.NewCounter(prometheus.CounterOpts{Name: "tally_settle_runs_total",
			Help: "Run rows written to the run table (a run settled again after a late span counts again)."}),
		tombstones: prometheus.NewCounter(prometheus.CounterOpts{Name: "tally_settle_moved_runs_total",
			Help: "Runs whose start moved (a late span started earlier): their old row was withdrawn."}),
		passes: prometheus.NewCounter(prometheus.CounterOpts{Name: "tally_settle_passes_total",
			Help: "Settle passes (cycles and checks) completed."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "tally_settle_failures_total",
			Help: "Settle passes that failed (retried at the next one)."}),
		busy: prometheus.NewCounter(prometheus.CounterOpts{Name: "tally_settle_busy_seconds_total",
			Help: "Wall time spent in settle passes: an upper bound of the settler's CPU (one goroutine) and of the store's time serving it."}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tally_settle_lag_seconds",
			Help: "How far the settled mark is behind now: spans written since are read live from the spans table."}),
	}
}

// Register exports the settler's metrics.
func (s *Settler) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{s.settled, s.tombstones, s.passes, s.failures, s.busy, s.lag} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("settle metrics: %w", err)
		}
	}
	return nil
}

// Stats says what a pass did.
type Stats struct {
	Stale   int `json:"stale"`   // stale runs found
	Settled int `json:"settled"` // rows written
	Waiting int `json:"waiting"` // stale runs not quiet yet
	Loads   int `json:"loads"`
	// Mark is the settled mark after the pass (cycles only).
	Mark uint64 `json:"mark,omitempty"`
}

func (st *Stats) add(o Stats) {
	st.Stale += o.Stale
	st.Settled += o.Settled
	st.Waiting += o.Waiting
	st.Loads += o.Loads
}

// Run runs cycles every Interval and the checks on their schedules (the
// full check first) until ctx ends. A failed pass is logged and retried at
// the next.
func (s *Settler) Run(ctx context.Context) {
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	var lastFull, lastRecheck time.Time
	for {
		now := time.Now()
		var err error
		switch {
		case now.Sub(lastFull) >= s.cfg.FullEvery:
			if _, err = s.Check(ctx, now.Add(-s.cfg.FullLookback), now, now, nil); err == nil {
				lastFull, lastRecheck = now, now
			}
		case now.Sub(lastRecheck) >= s.cfg.RecheckEvery:
			if _, err = s.Check(ctx, now.Add(-s.cfg.Lookback), now, now, nil); err == nil {
				lastRecheck = now
			}
		default:
			_, err = s.Cycle(ctx, now)
		}
		if err != nil && ctx.Err() == nil {
			s.failures.Inc()
			s.cfg.Logger.Warn("settling runs failed; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// future is how far past now a span may start (a sender's clock ahead).
const future = 24 * time.Hour

// Cycle settles the quiet runs with a span written after the settled mark
// (among spans starting within Lookback of now) and advances the mark.
func (s *Settler) Cycle(ctx context.Context, now time.Time) (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.timed(time.Now())
	mark, err := s.src.SettledMark(ctx)
	if err != nil {
		return Stats{}, err
	}
	from := now.Add(-s.cfg.Lookback)
	stale, err := s.src.StaleRuns(ctx, from, now.Add(future), mark)
	if err != nil {
		return Stats{}, err
	}
	st, waiting, err := s.settle(ctx, stale, now)
	if err != nil {
		return st, err
	}
	// Every span written through next is reflected: those of the runs
	// still waiting are above it, and so is anything written too recently
	// to be surely visible.
	next := uint64(now.Add(-s.cfg.Margin).UnixNano())
	for _, w := range waiting {
		next = min(next, w.MinVersion-1)
	}
	if next > mark {
		if err := s.sink.InsertRunMark(ctx, schema.RunMarkRow{Name: schema.RunMarkSettled, Value: next, Version: s.versions.Next()}); err != nil {
			return st, fmt.Errorf("advance the settled mark: %w", err)
		}
		mark = next
	}
	st.Mark = mark
	s.lag.Set(max(0, now.Sub(time.Unix(0, int64(mark))).Seconds()))
	s.passes.Inc()
	return st, nil
}

// Check settles every stale run with a span starting in [from, to), a day
// at a time (progress, if set, hears each day done); runs not quiet at now
// are left to a later pass.
func (s *Settler) Check(ctx context.Context, from, to, now time.Time, progress func(day time.Time, st Stats)) (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.timed(time.Now())
	if s.cfg.KeptFrom != nil {
		if kept := s.cfg.KeptFrom(now); !kept.IsZero() && from.Before(kept) {
			from = kept
		}
	}
	var total Stats
	days, err := s.src.SpanDays(ctx, from, to.Add(future))
	if err != nil {
		return total, err
	}
	for day := from.UTC().Truncate(24 * time.Hour); day.Before(to); day = day.Add(24 * time.Hour) {
		if days[day] == 0 && day.Add(48*time.Hour).Before(to) {
			continue // no span starts that day (the last day also looks ahead)
		}
		lo, hi := day, day.Add(24*time.Hour)
		if lo.Before(from) {
			lo = from
		}
		if !hi.Before(to) {
			hi = to.Add(future) // the last day: spans ahead of the clock too
		}
		stale, err := s.src.StaleRuns(ctx, lo, hi, 0)
		if err != nil {
			return total, err
		}
		st, _, err := s.settle(ctx, stale, now)
		total.add(st)
		if err != nil {
			return total, err
		}
		if progress != nil {
			progress(day, total)
		}
	}
	s.passes.Inc()
	return total, nil
}

// settle loads and settles stale runs in
// loads of at most MaxLoadRuns runs and MaxLoadSpans spans of one project,
// writes the rows of the quiet ones, and returns the runs still waiting.
func (s *Settler) settle(ctx context.Context, stale []query.StaleRun, now time.Time) (Stats, []query.StaleRun, error) {
	st := Stats{Stale: len(stale)}
	quietNs := uint64(now.Add(-s.cfg.Quiet).UnixNano())
	var waiting []query.StaleRun
	var ready []query.StaleRun
	for _, run := range stale {
		if run.MaxEndNs >= quietNs || run.MaxVersion >= quietNs {
			waiting = append(waiting, run)
			continue
		}
		ready = append(ready, run)
	}
	for len(ready) > 0 {
		n, spans := 0, uint64(0)
		for n < len(ready) && n < s.cfg.MaxLoadRuns && ready[n].Project == ready[0].Project &&
			(n == 0 || spans+ready[n].Rows <= uint64(s.cfg.MaxLoadSpans)) {
			spans += ready[n].Rows
			n++
		}
		load := ready[:n]
		ready = ready[n:]
		ids := make([]string, n)
		byID := make(map[string]query.StaleRun, n)
		for i, run := range load {
			ids[i], byID[run.TraceID] = run.TraceID, run
		}
		runs, err := s.load(ctx, load[0].Project, ids, quietNs)
		if err != nil {
			return st, waiting, err
		}
		st.Loads++
		version := s.versions.Next()
		rows := make([]schema.RunRow, 0, len(runs))
		moved := 0
		for _, r := range runs {
			if !r.Quiet {
				waiting = append(waiting, byID[r.Row.TraceID])
				continue
			}
			r.Row.Version = version
			rows = append(rows, r.Row)
			for _, old := range byID[r.Row.TraceID].RowStarts {
				if !old.Equal(r.Row.Start) {
					rows = append(rows, schema.RunRow{Project: r.Row.Project, TraceID: r.Row.TraceID, Start: old,
						Deleted: 1, Version: version})
					moved++
				}
			}
		}
		if err := s.sink.InsertRuns(ctx, rows); err != nil {
			return st, waiting, fmt.Errorf("write %d run rows: %w", len(rows), err)
		}
		st.Settled += len(rows) - moved
		s.settled.Add(float64(len(rows) - moved))
		s.tombstones.Add(float64(moved))
	}
	st.Waiting = len(waiting)
	return st, waiting, nil
}

// load settles the runs ids of project in the gate's turn: their spans are
// in memory only within it.
func (s *Settler) load(ctx context.Context, project string, ids []string, quietNs uint64) ([]query.SettledRun, error) {
	if s.cfg.Gate != nil {
		release, err := s.cfg.Gate.Enter(ctx, "settle")
		if err != nil {
			return nil, err
		}
		defer release()
	}
	return s.src.Settle(ctx, project, ids, quietNs)
}

// timed adds the time since began to the busy counter.
func (s *Settler) timed(began time.Time) { s.busy.Add(time.Since(began).Seconds()) }
