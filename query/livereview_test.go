package query_test

import (
	"cmp"
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/tools/demo"
)

// TestLiveReviewInParts: the safety review of runs in flight, read in
// parts by trace id when they are many (after a restart under load), is
// the review read at once. The demo's 40 runs, none settled, are reviewed
// once with no settled mark (every run live, one part) and once under a
// mark below all of them, by a reader that takes 7 runs a part (6 parts):
// the reports, by tool, task and agent and filtered by a kind and a tool,
// are the same.
func TestLiveReviewInParts(t *testing.T) {
	in := tallytest.Start(t)
	ctx := context.Background()
	start := time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
	sum, err := demo.Send(ctx, demo.Config{Endpoint: in.URL, Runs: 40, Seed: 1, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	since, until := start.Add(-time.Hour), time.Now().Add(time.Hour)
	reports := func(r *query.Reader) map[string]*query.SignalsReport {
		t.Helper()
		out := map[string]*query.SignalsReport{}
		read := func(name string, f query.SignalFilter) *query.SignalsReport {
			f.Project, f.Since, f.Until = "default", since, until
			rep, err := r.Signals(ctx, f)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// PerMinute is built from a map: in no order.
			slices.SortFunc(rep.PerMinute, func(a, b query.SignalMinute) int {
				return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Tool, b.Tool), a.Minute.Compare(b.Minute))
			})
			out[name] = rep
			return rep
		}
		all := read("by tool", query.SignalFilter{})
		read("by task", query.SignalFilter{By: "task"})
		read("by agent", query.SignalFilter{By: "agent"})
		if len(all.Groups) > 0 {
			g := all.Groups[0]
			read("of kind", query.SignalFilter{Kind: g.Kind})
			read("of tool", query.SignalFilter{Tool: g.Tool})
		}
		return out
	}
	whole := reports(query.NewReader(in.Store))
	if rep := whole["by tool"]; rep.Signals == 0 || rep.RunsRead != sum.Runs {
		t.Fatalf("review of the demo: %d signals over %d runs, want some over the %d sent", rep.Signals, rep.RunsRead, sum.Runs)
	}
	// A settled mark below every span: the runs are live, named by id.
	if err := in.Store.InsertRunMark(ctx, schema.RunMarkRow{Name: schema.RunMarkSettled, Value: 1, Version: uint64(time.Now().UnixNano())}); err != nil {
		t.Fatal(err)
	}
	parts := reports(query.NewReader(in.Store, query.WithLiveShardRuns(7)))
	for name, want := range whole {
		if got := parts[name]; !reflect.DeepEqual(got, want) {
			t.Errorf("review %s in parts:\n%+v\nwant (at once):\n%+v", name, got, want)
		}
	}
}
