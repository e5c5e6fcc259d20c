package bench

import (
	"testing"
)

// TestSpread: three runs' figures become their medians, judged against
// the goals, with the runs' values and their extremes; a figure one run
// could not measure takes the others' median; one no run measured stays
// unavailable.
func TestSpread(t *testing.T) {
	run := func(eff, rss float64, read bool) *Results {
		r := &Results{Duration: "1m0s"}
		r.add(Figure{ID: "ingest.efficiency", Value: eff, Goal: "≥ 0.75", Available: true})
		r.add(Figure{ID: "memory.rss", Value: rss, Goal: "≤ 1,024", Available: true})
		if read {
			r.add(Figure{ID: "read", Value: rss / 10, Available: true})
		} else {
			r.add(Figure{ID: "read", Reason: "not measured"})
		}
		r.add(Figure{ID: "never", Reason: "no API"})
		return r
	}
	got := Spread([]*Results{run(0.60, 900, true), run(0.82, 1100, false), run(0.77, 1000, true)})
	for _, c := range []struct {
		id        string
		available bool
		value     float64
		met       *bool
		min, max  float64
	}{
		// 0.60, 0.77, 0.82: the median 0.77 meets ≥ 0.75.
		{"ingest.efficiency", true, 0.77, ptr(true), 0.60, 0.82},
		// 900, 1000, 1100: the median 1000 meets ≤ 1,024.
		{"memory.rss", true, 1000, ptr(true), 900, 1100},
		// 90 and 100 measured (the second run could not): their mean.
		{"read", true, 95, nil, 90, 100},
		{"never", false, 0, nil, 0, 0},
	} {
		f := got.Figure(c.id)
		if f == nil {
			t.Fatalf("%s: missing", c.id)
		}
		if f.Available != c.available || f.Value != c.value || (f.Met == nil) != (c.met == nil) || (f.Met != nil && *f.Met != *c.met) {
			t.Errorf("%s: available %v value %v met %v; want %v %v %v", c.id, f.Available, f.Value, f.Met, c.available, c.value, c.met)
		}
		if c.available && (f.Detail["min"] != c.min || f.Detail["max"] != c.max) {
			t.Errorf("%s: spread %v–%v, want %v–%v", c.id, f.Detail["min"], f.Detail["max"], c.min, c.max)
		}
	}
	if got.Duration != "3m0s" {
		t.Errorf("duration %s, want the runs' 3m0s", got.Duration)
	}
	if m := judge("≥ 0.75", 0.7); m == nil || *m {
		t.Errorf("0.7 against ≥ 0.75: %v, want not met", m)
	}
	if m := judge("", 1); m != nil {
		t.Errorf("no goal: %v, want none", m)
	}
}

func ptr(b bool) *bool { return &b }
