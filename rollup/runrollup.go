package rollup

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/schedule"
)

// RunRollup keeps the run rollup (schema.TableRunRollup) up to date: each
// closed hour's runs added up by task and by agent in classes of their
// grading, which the window reports (tasks, caps) read instead of every
// run of a long window.
//
// As the cost rollup, it recomputes an hour whole, with the code the
// reports read runs with (query.RollupSource.RunRollupHour), whenever the
// hour's state changes: the fingerprint of its run table rows and of the
// outcomes posted for its runs (query.RunHourState), read before the
// computation and recorded with it (schema.TableRunRollupHours). Reports
// use an hour's rows only while its state is still the one recorded, and
// read the runs of every other hour themselves, so a report is never
// stale: a run settled or re-settled, or an outcome posted, since the last
// refresh makes its hour read from its runs until the next.
//
// Each computation writes every key the hour had before (a zero row for
// those it no longer has) with one new version, so that the latest
// version's rows are the hour's whole image; its record is written after
// its rows, and readers take an hour's rows only when the record of their
// version is there.
type RunRollup struct {
	store  *schema.Store
	reader *query.Reader
	cfg    RunRollupConfig

	mu       sync.Mutex          // serializes refreshes
	versions schema.VersionClock // the versions of the rows it writes
}

// RunRollupConfig tunes RunRollup. Zero fields take the defaults.
type RunRollupConfig struct {
	// Periods: the hours a refresh checks (Lookback, 48h) and those of the
	// periodic full check (FullLookback, 35 days), and how often Run does
	// each (Interval, 1 min; FullEvery, 1 h).
	schedule.Periods
	Logger *slog.Logger // Run: where failed refreshes are logged; default slog.Default()
	// Gate, when set, gives each hour's read of its runs its turn among
	// the background jobs that load spans (its runs in flight are read
	// from their spans).
	Gate Gate
}

// NewRunRollup returns a RunRollup over the store's runs.
func NewRunRollup(store *schema.Store, cfg RunRollupConfig) *RunRollup {
	cfg.Periods = cfg.Periods.WithDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &RunRollup{store: store, reader: query.NewReader(store), cfg: cfg}
}

// RunRefreshStats says what a refresh of the run rollup did.
type RunRefreshStats struct {
	HoursChecked    int `json:"hours_checked"`
	HoursRecomputed int `json:"hours_recomputed"`
	RowsWritten     int `json:"rows_written"`
}

// Run refreshes the run rollup every Interval, and checks the whole
// FullLookback every FullEvery (first at start), until ctx ends.
func (r *RunRollup) Run(ctx context.Context) {
	r.cfg.Periods.Run(ctx, r.cfg.Logger, "run rollup", func(ctx context.Context, since, until time.Time) error {
		_, err := r.RefreshRange(ctx, since, until)
		return err
	})
}

// RefreshRange recomputes every project's closed hours (ending at or
// before until) that start in [since, until) and whose state changed since
// they were last computed, or that have runs and never were.
func (r *RunRollup) RefreshRange(ctx context.Context, since, until time.Time) (RunRefreshStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var stats RunRefreshStats
	from, to := since.UTC().Truncate(time.Hour), until.UTC().Truncate(time.Hour)
	if !to.After(from) {
		return stats, nil
	}
	// States first, records second, computation last: a change after the
	// state was read changes it again, so it is never missed.
	states, err := r.reader.RunHourStates(ctx, "", from, to)
	if err != nil {
		return stats, err
	}
	records, err := r.reader.RunRollupRecords(ctx, "", from, to)
	if err != nil {
		return stats, err
	}
	var stale []query.ProjectHour
	seen := map[query.ProjectHour]bool{}
	for k := range states {
		seen[k] = true
	}
	for k := range records {
		seen[k] = true
	}
	for k := range seen {
		stats.HoursChecked++
		recs := records[k]
		state := states[k]
		switch {
		case len(recs) == 0 && state.Runs == 0:
			continue // outcomes of no run: nothing to add up
		case len(recs) > 0 && recs[len(recs)-1].State == state:
			continue
		}
		stale = append(stale, k)
	}
	slices.SortFunc(stale, func(a, b query.ProjectHour) int {
		return cmp.Or(strings.Compare(a.Project, b.Project), a.Hour.Compare(b.Hour))
	})
	for _, k := range stale {
		n, err := r.recompute(ctx, k, states[k])
		if err != nil {
			return stats, err
		}
		stats.HoursRecomputed++
		stats.RowsWritten += n
	}
	return stats, nil
}

// recompute rewrites one project's hour and records it with state, read
// before; it returns the rows written.
func (r *RunRollup) recompute(ctx context.Context, k query.ProjectHour, state query.RunHourState) (int, error) {
	rows, err := r.hourRows(ctx, k)
	if err != nil {
		return 0, err
	}
	old, err := r.reader.RunRollupKeys(ctx, k.Project, k.Hour)
	if err != nil {
		return 0, err
	}
	have := map[query.RunRollupKey]bool{}
	for _, x := range rows {
		have[query.RunRollupKey{Grain: x.Grain, Task: x.Task, Agent: x.Agent, Fingerprint: x.Fingerprint, Class: x.Class}] = true
	}
	for _, o := range old {
		if !have[o] {
			// A zero row: the key's runs are gone from the hour.
			rows = append(rows, schema.RunRollupRow{Project: k.Project, Hour: k.Hour, Grain: o.Grain, Task: o.Task,
				Agent: o.Agent, Fingerprint: o.Fingerprint, Class: o.Class})
			have[o] = true
		}
	}
	version := r.versions.Next()
	for i := range rows {
		rows[i].Version = version
	}
	if err := r.store.InsertRunRollup(ctx, rows); err != nil {
		return 0, fmt.Errorf("write run rollup %s %s: %w", k.Project, k.Hour.Format(time.RFC3339), err)
	}
	rec := schema.RunRollupHourRow{Project: k.Project, Hour: k.Hour, Version: version, Runs: state.Runs,
		RunVersionSum: state.RunVersionSum, Outcomes: state.Outcomes, OutcomeVersionSum: state.OutcomeVersionSum,
		ComputedAt: time.Now().UTC().Truncate(time.Second)}
	if err := r.store.InsertRunRollupHours(ctx, []schema.RunRollupHourRow{rec}); err != nil {
		return 0, fmt.Errorf("record run rollup hour: %w", err)
	}
	return len(rows), nil
}

// hourRows computes an hour's rows, in its turn at the gate.
func (r *RunRollup) hourRows(ctx context.Context, k query.ProjectHour) ([]schema.RunRollupRow, error) {
	if r.cfg.Gate != nil {
		release, err := r.cfg.Gate.Enter(ctx, "run rollup")
		if err != nil {
			return nil, err
		}
		defer release()
	}
	return r.reader.RunRollupHour(ctx, k.Project, k.Hour)
}
