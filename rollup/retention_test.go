package rollup_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/rollup"
	"github.com/tallyhq/tally/schema"
)

// TestRollupOutlivesItsSpans: the golden corpus (2026-01-10) rolled up
// (summed over the model grain),
// then its day of spans and facts dropped as retention does. A full check
// with KeptFrom after that day leaves the rollup as it was; one without
// it replaces the hours with zeros (what the rollup did before retention
// knew of it: the regression this guards against).
func TestRollupOutlivesItsSpans(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	insert(t, store, loadCorpus(t, "../query/testdata/golden.json", "golden", builtin(t)), 1)
	since, until := mustTime(t, "2026-01-09T00:00:00Z"), mustTime(t, "2026-01-12T00:00:00Z")
	if _, err := rollup.New(store, rollup.Config{}).RefreshRange(ctx, since, until); err != nil {
		t.Fatal(err)
	}
	total := func() float64 {
		t.Helper()
		var v float64
		if err := store.Conn().QueryRow(ctx, "SELECT sum(cost_total) FROM "+store.Table(schema.TableCostRollup)+" FINAL WHERE grain = 2").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := total()
	if before <= 0 {
		t.Fatalf("rolled-up cost %v, want > 0", before)
	}
	for _, table := range []string{schema.TableSpans, schema.TableSpanFacts, schema.TableContent} {
		if err := store.DropPartition(ctx, table, "20260110"); err != nil {
			t.Fatal(err)
		}
	}
	kept := mustTime(t, "2026-01-11T00:00:00Z")
	stats, err := rollup.New(store, rollup.Config{KeptFrom: func(time.Time) time.Time { return kept }}).RefreshRange(ctx, since, until)
	if err != nil {
		t.Fatal(err)
	}
	if got := total(); got != before || stats.HoursRecomputed != 0 {
		t.Fatalf("with KeptFrom: cost %v (was %v), %d hours recomputed; want it untouched", got, before, stats.HoursRecomputed)
	}
	if _, err := rollup.New(store, rollup.Config{}).RefreshRange(ctx, since, until); err != nil {
		t.Fatal(err)
	}
	if got := total(); got != 0 {
		t.Errorf("without KeptFrom the hours are recomputed from no spans: cost %v, want 0", got)
	}
}

// TestFullCheckLoadsOnlyHoursWithSpans: a full check of 35 days on a store
// whose only spans are the golden corpus's four hours records all 840
// hours (and the margin before them) in two writes, loading spans once
// (the chunk that holds them) instead of once for each six hours, and a
// second check finds nothing to do. The load is made in a turn of the
// job's Gate, given back.
func TestFullCheckLoadsOnlyHoursWithSpans(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	insert(t, store, loadCorpus(t, "../query/testdata/golden.json", "golden", builtin(t)), 1)
	until := mustTime(t, "2026-01-12T00:00:00Z")
	since := until.Add(-35 * 24 * time.Hour)
	gate := &turns{}
	job := rollup.New(store, rollup.Config{Gate: gate})
	stats, err := job.RefreshRange(ctx, since, until)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"rollup"}; !slices.Equal(gate.entered, want) || !slices.Equal(gate.closed, want) {
		t.Errorf("turns taken %v, given back %v; want one for the one load, given back", gate.entered, gate.closed)
	}
	// The 840 hours, and before them the hours a run of the first may
	// reach back into (the trace window, in whole hours).
	margin := int((query.DefaultTraceWindow + time.Hour - 1) / time.Hour)
	// Two chunks: the empty hours up to the corpus's first, and six hours
	// from there (ChunkHours) with the empty ones after them.
	if want := 35*24 + margin; stats.HoursRecomputed != want || stats.Chunks != 2 || stats.SpanLoads != 1 {
		t.Fatalf("full check: %d hours recomputed in %d chunks with %d span loads, want %d in 2 with 1",
			stats.HoursRecomputed, stats.Chunks, stats.SpanLoads, want)
	}
	var cost float64
	if err := store.Conn().QueryRow(ctx, "SELECT sum(cost_total) FROM "+store.Table(schema.TableCostRollup)+" FINAL WHERE grain = 2").Scan(&cost); err != nil {
		t.Fatal(err)
	}
	if cost <= 0 {
		t.Fatalf("rolled-up cost %v after the full check, want the corpus's", cost)
	}
	if stats, err = job.RefreshRange(ctx, since, until); err != nil {
		t.Fatal(err)
	}
	if stats.HoursRecomputed != 0 || stats.SpanLoads != 0 {
		t.Fatalf("second full check: %d hours recomputed, %d span loads; want none", stats.HoursRecomputed, stats.SpanLoads)
	}
}

// TestLateSpansForARecentEmptyHourCountAtOnce: a full check leaves the
// recent hours that have no spans unrecorded, so spans that arrive later
// for one of them (a run sent after its hour closed) are in the costs at
// once rather than after the next refresh; older empty hours are recorded.
func TestLateSpansForARecentEmptyHourCountAtOnce(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	now := time.Now().UTC()
	job := rollup.New(store, rollup.Config{})
	if _, err := job.RefreshRange(ctx, now.Add(-35*24*time.Hour), now); err != nil {
		t.Fatal(err)
	}
	// The golden corpus (2026-01-10, four hours from 09:00) moved to start
	// five hours before this hour: closed hours within the rollup's 48 h
	// lookback.
	spans := loadCorpus(t, "../query/testdata/golden.json", "golden", builtin(t))
	first := spans[0].Start
	for _, s := range spans {
		if s.Start.Before(first) {
			first = s.Start
		}
	}
	shift := now.Truncate(time.Hour).Add(-5 * time.Hour).Sub(first.Truncate(time.Hour))
	for i := range spans {
		s := &spans[i]
		s.Start = s.Start.Add(shift)
		s.StartNs += uint64(shift.Nanoseconds())
		s.EndNs += uint64(shift.Nanoseconds())
		s.IngestedAt = s.IngestedAt.Add(shift)
	}
	insert(t, store, spans, 1)
	// What the same read answers from the spans alone: a store the rollup
	// never ran on.
	fresh := openStore(t)
	insert(t, fresh, spans, 1)
	costs := func(s *schema.Store) query.CostTotals {
		t.Helper()
		report, err := query.NewReader(s).Costs(ctx, query.CostFilter{Project: "golden", By: "model",
			Since: now.Truncate(time.Hour).Add(-6 * time.Hour), Until: now.Truncate(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return report.Total
	}
	got, want := costs(store), costs(fresh)
	if want.Spans == 0 || want.Cost.Total <= 0 || got.Spans != want.Spans || !near(got.Cost.Total, want.Cost.Total) {
		t.Fatalf("the late spans right after they arrived: %d spans, $%v; want what the spans alone give, %d spans, $%v",
			got.Spans, got.Cost.Total, want.Spans, want.Cost.Total)
	}
	var recorded, recent uint64
	if err := store.Conn().QueryRow(ctx, "SELECT count(), countIf(hour >= ?) FROM "+store.Table(schema.TableCostRollupHours),
		now.Add(-48*time.Hour).Truncate(time.Hour)).Scan(&recorded, &recent); err != nil {
		t.Fatal(err)
	}
	if recent != 0 || recorded == 0 {
		t.Fatalf("%d hours recorded, %d of them in the last 48 h; want the older empty hours recorded, no recent one", recorded, recent)
	}
}
