package retention_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/goldentest"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/retention"
	"github.com/tallyhq/tally/schema"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const day = 24 * time.Hour

// TestRetentionOnClickHouse: on a real ClickHouse, spans of two projects
// at 40, 20 and 5 days old, their content, and rollup rows at 100 and 500
// days old, under --retention 30d, --content-retention 7d,
// --rollup-retention 400d and project short kept 10 days. A run drops the
// 40-day-old day partitions of spans and facts and every content day older
// than 7 days, and the 500-day-old rollup month; it deletes short's
// 20-day-old spans. What is newer stays: main's 20- and 5-day-old spans,
// short's 5-day-old ones, the 5-day-old content, the 100-day-old rollups.
// A second run has nothing left to do.
func TestRetentionOnClickHouse(t *testing.T) {
	store := goldentest.OpenStore(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	var spans []schema.Span
	var contents []schema.Content
	n := 0
	for _, project := range []string{"main", "short"} {
		for _, age := range []int{40, 20, 5} {
			start := now.Add(-time.Duration(age) * day)
			n++
			tr := fmt.Sprintf("%032x", n)
			sp := fmt.Sprintf("%016x", n)
			spans = append(spans, schema.Span{Project: project, TraceID: tr, SpanID: sp, Start: start, StartNs: uint64(start.UnixNano()),
				EndNs: uint64(start.UnixNano()) + 1e6, DurationNs: 1e6, Name: "s", SpanType: schema.TypeOther})
			contents = append(contents, schema.Content{Project: project, TraceID: tr, SpanID: sp, Start: start,
				Kind: schema.ContentToolArguments, SourceKey: "gen_ai.tool.call.arguments", Value: "{}"})
		}
	}
	if err := store.InsertSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	if err := store.InsertContents(ctx, contents); err != nil {
		t.Fatal(err)
	}
	var rollups []schema.CostRollupRow
	for _, age := range []int{100, 500} {
		rollups = append(rollups, schema.CostRollupRow{Project: "main", Hour: now.Add(-time.Duration(age) * day).Truncate(time.Hour)})
	}
	if err := store.InsertCostRollup(ctx, rollups); err != nil {
		t.Fatal(err)
	}
	count := func(table, cond string) uint64 {
		t.Helper()
		var c uint64
		if err := store.Conn().QueryRow(ctx, "SELECT count() FROM "+store.Table(table)+" WHERE "+cond).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	policy := retention.Policy{Spans: 30 * day, Content: 7 * day, Rollups: 400 * day,
		Projects: map[string]retention.Override{"short": {Spans: 10 * day}}}
	job, err := retention.NewJob(store, retention.Config{Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	preview, err := job.Preview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The preview changes nothing.
	if got := count(schema.TableSpans, "1"); got != 6 {
		t.Fatalf("after preview %d spans, want 6", got)
	}
	drops, deletes := 0, 0
	for _, a := range preview.Actions {
		switch a.Kind {
		case "drop":
			drops++
		case "delete":
			deletes++
			// short's 20-day-old span (the 40-day-old one is in a dropped partition).
			if a.Table == schema.TableSpans && a.Rows != 1 {
				t.Errorf("delete %+v: want 1 row", a)
			}
		}
	}
	// Drops: the 40-day partition of spans, of facts (if the facts table
	// holds them) and of content; the 20-day content partition; the
	// 500-day rollup month.
	rep, err := job.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// By hand: the 40-day day partition of spans, of span_facts (filled
	// with spans) and of content (one partition each, both projects' rows
	// share the day), the 20-day content day, the 500-day rollup month: 5.
	if rep.Dropped != 5 || drops != 5 || deletes == 0 {
		t.Errorf("run dropped %d (preview %d), preview deletes %d: %+v", rep.Dropped, drops, deletes, rep)
	}
	// Mutations apply in the background: wait for short's old span to go.
	deadline := time.Now().Add(30 * time.Second)
	for count(schema.TableSpans, "project = 'short' AND start < now() - INTERVAL 10 DAY") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("short's 20-day-old span was never deleted")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range []struct {
		table, cond string
		want        uint64
	}{
		{schema.TableSpans, "start < now() - INTERVAL 30 DAY", 0},
		{schema.TableSpans, "project = 'main'", 2},
		{schema.TableSpans, "project = 'short'", 1},
		{schema.TableContent, "start < now() - INTERVAL 7 DAY", 0},
		{schema.TableContent, "1", 2},
		{schema.TableCostRollup, "1", 1},
		{schema.TableCostRollup, "hour > now() - INTERVAL 400 DAY", 1},
	} {
		if got := count(c.table, c.cond); got != c.want {
			t.Errorf("%s where %s: %d rows, want %d", c.table, c.cond, got, c.want)
		}
	}
	again, err := job.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.Dropped != 0 || len(again.Actions) != 0 {
		t.Errorf("second run %+v, want nothing to do", again)
	}
}
