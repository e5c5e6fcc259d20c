package query

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestEdgeHoursHeld: the edge hour cache keeps the hours last asked for,
// at most edgeHoursHeld of them and twice its bound of entries in all,
// the hour just loaded always.
func TestEdgeHoursHeld(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	hour := func(i int) time.Time { return base.Add(time.Duration(i) * time.Hour) }
	ask := func(c *edgeHours, i, entries int) {
		t.Helper()
		_, ok, err := c.get(ctx, "p", hour(i), 1, func(context.Context, int, int) (*edgeHour, error) {
			return &edgeHour{views: [len(edgeViews)][]edgeEntry{make([]edgeEntry, entries)}, parts: 1}, nil
		})
		if err != nil || !ok {
			t.Fatalf("hour %d: ok %v, %v", i, ok, err)
		}
	}
	held := func(c *edgeHours) []int {
		var out []int
		for _, h := range c.held {
			out = append(out, int(h.hour.Sub(base)/time.Hour))
		}
		return out
	}
	check := func(label string, c *edgeHours, want ...int) {
		t.Helper()
		if got := held(c); !slices.Equal(got, want) {
			t.Errorf("%s: held hours %v, want %v", label, got, want)
		}
	}

	// A bound of 10: two hours of 10 entries are 20, twice the bound.
	c := newEdgeHours(10)
	ask(c, 0, 10)
	ask(c, 1, 10)
	check("two hours at twice the bound", c, 1, 0)
	ask(c, 2, 1) // 1 + 10 + 10 = 21: the oldest goes
	check("one entry over twice the bound", c, 2, 1)
	ask(c, 3, 10) // 10 + 1 + 10 = 21: hour 1 goes
	check("over again", c, 3, 2)
	ask(c, 4, 0) // an empty hour (or one of too many entries, kept as such) costs nothing
	check("an empty hour", c, 4, 3, 2)

	// Hours of one entry: four at most; asking for a held hour keeps it.
	c = newEdgeHours(100)
	for i := range 4 {
		ask(c, i, 1)
	}
	check("four hours", c, 3, 2, 1, 0)
	ask(c, 0, 1) // held: not loaded again, the latest asked for now
	if c.loads != 4 {
		t.Errorf("loads %d after asking for a held hour, want 4", c.loads)
	}
	ask(c, 4, 1)
	check("a fifth hour", c, 4, 0, 3, 2)
}

// TestEdgeViewsCoverEveryReport: every view a cost report asks for (one
// per CostFilter.By, and the unmatched models') is one the edge hour cache
// adds up; one it did not would be read from the spans at every report.
func TestEdgeViewsCoverEveryReport(t *testing.T) {
	for by, d := range byDimension {
		if edgeViewOf(view{grain: d.grain, dims: []string{d.column}}) < 0 {
			t.Errorf("by %s: the edge hour cache does not add up %s", by, d.column)
		}
	}
	if edgeViewOf(unmatchedView) < 0 {
		t.Errorf("the unmatched models' view %v is not added up", unmatchedView.dims)
	}
}
