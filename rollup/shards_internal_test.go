package rollup

import (
	"testing"
	"time"

	"github.com/tallyhq/tally/query"
)

func TestLoadShards(t *testing.T) {
	from := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	raw := map[time.Time]query.HourFingerprint{
		from:                    {Rows: 60},
		from.Add(time.Hour):     {Rows: 40},
		from.Add(5 * time.Hour): {Rows: 1000}, // outside [from, from+2h)
	}
	to := from.Add(2 * time.Hour)
	for _, tc := range []struct {
		max, want int
	}{
		{100, 1}, // exactly at the bound: one load
		{99, 2},  // one over: two parts of at most 50
		{50, 2},
		{49, 3},
		{1, 100},
	} {
		if got := loadShards(spanRows(from, to, raw), tc.max); got != tc.want {
			t.Errorf("100 spans, at most %d a load: %d parts, want %d", tc.max, got, tc.want)
		}
	}
	if got := loadShards(spanRows(from, to, nil), 10); got != 0 {
		t.Errorf("no fingerprints: %d loads, want none", got)
	}
	if got := loadShards(spanRows(from.Add(2*time.Hour), from.Add(5*time.Hour), raw), 10); got != 0 {
		t.Errorf("hours without spans: %d loads, want none", got)
	}
	if got := loadShards(spanRows(from.Add(2*time.Hour), from.Add(6*time.Hour), raw), 1000); got != 1 {
		t.Errorf("one hour of 1000 spans among empty ones, at most 1000 a load: %d loads, want 1", got)
	}
}
