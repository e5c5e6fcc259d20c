package backoff

import (
	"math"
	"testing"
	"time"
)

// low and high draw the ends of the jitter's range [0, n).
func low(time.Duration) time.Duration    { return 0 }
func high(n time.Duration) time.Duration { return n - 1 }

// TestCeilings: the ceiling starts at min and doubles up to max; with the
// jitter fixed at its ends, each wait is exactly half its ceiling or the
// whole of it (an odd ceiling of 5 ns: 2 to 4 ns, by integer halves), and
// Reset starts over.
func TestCeilings(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name     string
		min, max time.Duration
		ceilings []time.Duration // of the first waits, in order
	}{
		{"doubling to the cap", 100 * ms, 1000 * ms, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1000 * ms, 1000 * ms}},
		{"writer defaults", 100 * ms, 5 * time.Second, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5000 * ms, 5000 * ms}},
		{"min equals max", 50 * ms, 50 * ms, []time.Duration{50 * ms, 50 * ms, 50 * ms}},
		{"min above max", 300 * ms, 100 * ms, []time.Duration{300 * ms, 100 * ms, 100 * ms}},
		{"odd ceiling", 5, 20, []time.Duration{5, 10, 20}},
		{"zero", 0, 0, []time.Duration{0, 0, 0}},
		{"negative is zero", -4 * ms, -1, []time.Duration{0, 0}},
		{"near the largest duration", time.Duration(math.MaxInt64 / 3), time.Duration(math.MaxInt64),
			[]time.Duration{time.Duration(math.MaxInt64 / 3), time.Duration(math.MaxInt64/3) * 2, time.Duration(math.MaxInt64)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, end := range []struct {
				name   string
				jitter func(time.Duration) time.Duration
				want   func(c time.Duration) time.Duration
			}{
				{"low", low, func(c time.Duration) time.Duration { return c / 2 }},
				{"high", high, func(c time.Duration) time.Duration { return c / 2 * 2 }},
			} {
				b := New(tc.min, tc.max)
				b.jitter = end.jitter
				for round := range 2 { // the second after Reset
					for i, c := range tc.ceilings {
						if got := b.Next(); got != end.want(c) {
							t.Errorf("%s jitter, round %d, wait %d: %v, want %v (ceiling %v)", end.name, round, i+1, got, end.want(c), c)
						}
					}
					b.Reset()
				}
			}
		})
	}
}

// TestBounds: with the real jitter every wait lies within [ceiling/2,
// ceiling], so within [min/2, max]; the waits grow while the ceiling
// does (the largest of many draws at 100 ms is at most the smallest at
// 400 ms), and after Reset they are back within [min/2, min].
func TestBounds(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name     string
		min, max time.Duration
		waits    int
	}{
		{"writer", 100 * ms, 5 * time.Second, 10},
		{"durable log", 100 * ms, 10 * time.Second, 10},
		{"tiny", 1, 3, 5},
		{"min equals max", time.Second, time.Second, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const draws = 500
			lo, hi := make([]time.Duration, tc.waits), make([]time.Duration, tc.waits)
			for d := range draws {
				b := New(tc.min, tc.max)
				c := tc.min
				for i := range tc.waits {
					w := b.Next()
					if w < c/2 || w > c || w < tc.min/2 || w > tc.max {
						t.Fatalf("draw %d, wait %d: %v, want within [%v, %v] and [%v, %v]", d, i+1, w, c/2, c, tc.min/2, tc.max)
					}
					if d == 0 || w < lo[i] {
						lo[i] = w
					}
					hi[i] = max(hi[i], w)
					c = min(2*c, tc.max)
				}
				b.Reset()
				if w := b.Next(); w < tc.min/2 || w > tc.min {
					t.Fatalf("draw %d, after Reset: %v, want within [%v, %v]", d, w, tc.min/2, tc.min)
				}
			}
			// Growth: two doublings apart, the ranges [c/2, c] and [2c, 4c]
			// do not overlap until the ceiling reaches max.
			for i := 0; i+2 < tc.waits; i++ {
				if tc.min<<(i+2) <= tc.max && hi[i] > lo[i+2] {
					t.Errorf("wait %d reached %v, above the least wait %d, %v: the waits do not grow", i+1, hi[i], i+3, lo[i+2])
				}
			}
			// The jitter spreads the waits: 500 draws from a range of 50 ms
			// or more never all land on one value.
			if tc.min >= 100*ms && lo[0] == hi[0] {
				t.Errorf("500 first waits all %v: no jitter", lo[0])
			}
		})
	}
}
