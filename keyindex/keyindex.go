// Package keyindex keeps the search keys index (schema.TableSearchKeys):
// per hour, the attribute keys the hour's spans carried and their most
// frequent values, which search autocomplete (package query) reads instead
// of scanning every span of its window.
//
// Why a job rather than materialized views: views on the spans table run
// inside every INSERT — on ClickHouse 18.16 a keys view halved the INSERT
// rate, and on the embedded engine an aggregating view hung a refused
// INSERT. The job indexes an hour, the open one included, in one INSERT …
// SELECT per part the server computes, off the ingest path, the way the
// cost rollup (package rollup) notices change: each hour's mark records
// the span fingerprint (rows and sum of versions of span_facts) it saw, and
// an hour whose fingerprint differs — new or late spans, a reprice, a
// merge — is indexed again at the next refresh. Reads answer the hours not
// indexed yet, and the spans newer than the newest computation, from the
// spans, so autocomplete is always complete and the open hour costs a read
// of a minute's spans, not an hour's.
package keyindex

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/schedule"
)

// Index keeps the search keys index up to date.
type Index struct {
	store  *schema.Store
	reader *query.Reader
	cfg    Config

	mu       sync.Mutex          // serializes refreshes
	versions schema.VersionClock // the versions of its computations
}

// Config tunes Index. Zero fields take the defaults.
type Config struct {
	// Periods: the hours Refresh checks (Lookback, 48h) and those of the
	// periodic full check (FullLookback, 35 days), and how often Run does
	// each (Interval, 1 min; FullEvery, 1 h).
	schedule.Periods
	// ChunkHours is how many consecutive hours one computation indexes
	// (at most 24, the most schema.Store.IndexSearchKeys takes); default 24.
	ChunkHours int
	Logger     *slog.Logger // Run: where failed refreshes are logged; default slog.Default()
	// KeptFrom is, at now, the oldest span start every project's spans are
	// kept from (retention); hours before it are not indexed again: their
	// spans may be gone. Nil or zero: all are kept.
	KeptFrom func(now time.Time) time.Time
}

func (c Config) withDefaults() Config {
	c.Periods = c.Periods.WithDefaults()
	if c.ChunkHours <= 0 || c.ChunkHours > 24 {
		c.ChunkHours = 24
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// New returns an Index over the store's spans and keys index.
func New(store *schema.Store, cfg Config) *Index {
	return &Index{store: store, reader: query.NewReader(store), cfg: cfg.withDefaults()}
}

// Stats says what a refresh did.
type Stats struct {
	HoursChecked int `json:"hours_checked"`
	HoursIndexed int `json:"hours_indexed"`
	Computations int `json:"computations"`
}

// Run refreshes the index every Interval, and checks the whole
// FullLookback every FullEvery (first at start), until ctx ends. Failures
// are logged and retried at the next tick.
func (x *Index) Run(ctx context.Context) {
	x.cfg.Periods.Run(ctx, x.cfg.Logger, "search keys index", func(ctx context.Context, since, until time.Time) error {
		_, err := x.RefreshRange(ctx, since, until)
		return err
	})
}

// Refresh indexes the hours of the last Lookback before now, the open one
// included, whose spans changed since they were last indexed, or that never
// were.
func (x *Index) Refresh(ctx context.Context, now time.Time) (Stats, error) {
	return x.RefreshRange(ctx, now.Add(-x.cfg.Lookback), now)
}

// RefreshRange indexes the hours that start in [since, until) — the hour
// since falls in to the one until falls in — whose spans changed since they
// were last indexed, or that never were.
func (x *Index) RefreshRange(ctx context.Context, since, until time.Time) (Stats, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var stats Stats
	from, to := since.UTC().Truncate(time.Hour), until.UTC().Add(time.Hour-1).Truncate(time.Hour)
	if x.cfg.KeptFrom != nil {
		if kept := x.cfg.KeptFrom(time.Now()); !kept.IsZero() {
			if floor := kept.UTC().Truncate(time.Hour).Add(time.Hour); from.Before(floor) {
				from = floor
			}
		}
	}
	if !to.After(from) {
		return stats, nil
	}
	// Fingerprints first, marks second: a span arriving after the
	// fingerprint was read changes it again, so it is never missed. An
	// hour is stale when its spans differ from what its latest computation
	// read.
	raw, err := x.reader.SpanFingerprints(ctx, from, to)
	if err != nil {
		return stats, err
	}
	marks, err := x.reader.SearchKeyMarks(ctx, from, to)
	if err != nil {
		return stats, err
	}
	var stale []time.Time
	for h := from; h.Before(to); h = h.Add(time.Hour) {
		stats.HoursChecked++
		fp := raw[h]
		if m, ok := marks[h]; ok && m.Spans == fp.Rows && m.VersionSum == fp.VersionSum {
			continue
		}
		stale = append(stale, h)
	}
	for len(stale) > 0 {
		n := 1
		for n < len(stale) && n < x.cfg.ChunkHours && stale[n].Equal(stale[n-1].Add(time.Hour)) {
			n++
		}
		// The computation reads the spans of versions up to
		// SearchKeysUpTo(version); its marks record what it reads of them,
		// so an hour with newer spans differs from its mark at the next
		// refresh, and is indexed again until none is that new.
		version := x.versions.Next()
		seen, err := x.reader.SpanFingerprintsUpTo(ctx, stale[0], stale[n-1].Add(time.Hour), schema.SearchKeysUpTo(version))
		if err != nil {
			return stats, err
		}
		marks := make([]schema.SearchKeyHour, n)
		for i, h := range stale[:n] {
			marks[i] = schema.SearchKeyHour{Hour: h, Version: version, Spans: seen[h].Rows, VersionSum: seen[h].VersionSum}
		}
		stale = stale[n:]
		if err := x.store.IndexSearchKeys(ctx, marks); err != nil {
			return stats, err
		}
		stats.HoursIndexed += n
		stats.Computations++
	}
	return stats, nil
}
