package consistency

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestSketchKeysAreWithinTheAccuracy(t *testing.T) {
	for _, v := range []float64{1e-9, 0.0001, 0.37, 1, 2, 999.5, 1e6, 3.3e12} {
		got := SketchValue(SketchKey(v))
		if math.Abs(got-v)/v > SketchAccuracy {
			t.Errorf("%g: bucket value %g, more than 1%% off", v, got)
		}
	}
	if SketchKey(0) != SketchZero || SketchKey(-1) != SketchZero || SketchValue(SketchZero) != 0 {
		t.Errorf("zero: key %d, value %g", SketchKey(0), SketchValue(SketchZero))
	}
	// Neighbouring buckets split at γ^k: 1 is the top of bucket 0.
	if SketchKey(1) != 0 || SketchKey(1.0000001) != 1 {
		t.Errorf("keys of 1 and just above: %d %d", SketchKey(1), SketchKey(1.0000001))
	}
}

// The sketch's quantiles are those of the values, within the
// accuracy, however the values were split into merged sketches; the
// moments give the exact spread's other figures.
func TestSketchSpreadIsTheSpreadWithinOnePercent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string]struct {
		gen  func() float64
		ints bool
	}{
		"lognormal cost": {func() float64 { return math.Exp(rng.NormFloat64()*1.5 - 4) }, false},
		// Small whole numbers: each bucket holds one, the percentiles are
		// exact.
		"steps":  {func() float64 { return float64(1 + rng.IntN(40)) }, true},
		"tokens": {func() float64 { return float64(200 + rng.IntN(40_000)) }, true},
		"with zeros": {func() float64 {
			if rng.IntN(3) == 0 {
				return 0
			}
			return rng.ExpFloat64() * 5000
		}, false},
	}
	for name, c := range cases {
		gen := c.gen
		t.Run(name, func(t *testing.T) {
			var values []float64
			var merged Sketch
			var m Moments
			for part := range 7 {
				b := SketchBuilder{}
				var pm Moments
				for range 500 + part*311 {
					v := gen()
					values = append(values, v)
					b.Add(v)
					pm.Add(v)
				}
				merged.Merge(b.Sketch())
				m.Merge(pm)
			}
			exact := SpreadOf(append([]float64(nil), values...))
			got := SketchSpread(m, merged, c.ints)
			if got.N != exact.N || merged.Count() != uint64(len(values)) {
				t.Fatalf("n %d, sketch holds %d; want %d", got.N, merged.Count(), exact.N)
			}
			near := func(what string, got, want, tol float64) {
				t.Helper()
				if math.Abs(got-want) > tol*math.Abs(want)+1e-12 {
					t.Errorf("%s %g, want %g (±%g%%)", what, got, want, tol*100)
				}
			}
			if name == "steps" && (got.P50 != exact.P50 || got.P99 != exact.P99) {
				t.Errorf("steps: p50 %g p99 %g, want exactly %g %g", got.P50, got.P99, exact.P50, exact.P99)
			}
			near("p50", got.P50, exact.P50, SketchAccuracy)
			near("p99", got.P99, exact.P99, SketchAccuracy)
			near("mean", got.Mean, exact.Mean, 1e-12)
			near("cv", got.CV, exact.CV, 1e-9)
			if got.Max != exact.Max {
				t.Errorf("max %g, want %g", got.Max, exact.Max)
			}
		})
	}
}

func TestSketchMergeAddsByKey(t *testing.T) {
	a := Sketch{Keys: []int16{SketchZero, 3, 9}, Counts: []uint64{2, 1, 4}}
	a.Merge(Sketch{Keys: []int16{1, 3, 12}, Counts: []uint64{5, 6, 7}})
	wantKeys, wantCounts := []int16{SketchZero, 1, 3, 9, 12}, []uint64{2, 5, 7, 4, 7}
	if len(a.Keys) != len(wantKeys) {
		t.Fatalf("merged %v %v", a.Keys, a.Counts)
	}
	for i := range wantKeys {
		if a.Keys[i] != wantKeys[i] || a.Counts[i] != wantCounts[i] {
			t.Fatalf("merged %v %v, want %v %v", a.Keys, a.Counts, wantKeys, wantCounts)
		}
	}
	if nz := a.WithoutZeros(); nz.Count() != 23 || nz.Keys[0] != 1 {
		t.Errorf("without zeros: %v %v", nz.Keys, nz.Counts)
	}
	// Two values: the median halfway between them, p99 near the greater.
	two := Sketch{Keys: []int16{SketchKey(1), SketchKey(100)}, Counts: []uint64{1, 1}}
	if p50, p99 := two.Quantiles2(0.5, 0.99, 100, false); math.Abs(p50-50.5) > 0.51 || math.Abs(p99-99.01) > 1 {
		t.Errorf("two values: p50 %g p99 %g, want 50.5 and 99.01 within 1%%", p50, p99)
	}
	// One value: every quantile is it, the maximum kept beside.
	one := Sketch{Keys: []int16{SketchKey(7.3)}, Counts: []uint64{1}}
	if p50, p99 := one.Quantiles2(0.5, 0.99, 7.3, false); p50 != 7.3 || p99 != 7.3 {
		t.Errorf("one value: %g %g", p50, p99)
	}
}
