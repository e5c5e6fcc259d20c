package consistency

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// TestPassEstimators: hand-computed from the binomial coefficients.
//
//	n=10, c=7: C(10,3) = 120, C(3,3) = 1, C(7,3) = 35
//	  pass@3 = 1 − 1/120, pass^3 = 35/120
//	  pass@1 = pass^1 = 7/10
//	  pass@4 = 1 − C(3,4)/C(10,4) = 1 (3 failures cannot fill 4 draws)
//	  pass^10 = C(7,10)/C(10,10) = 0
//	n=4, c=4: pass^4 = 1; n=4, c=0: pass@4 = 0
func TestPassEstimators(t *testing.T) {
	for _, c := range []struct {
		n, c, k int
		at, hat float64
		ok      bool
	}{
		{10, 7, 3, 1 - 1.0/120, 35.0 / 120, true},
		{10, 7, 1, 0.7, 0.7, true},
		{10, 7, 4, 1, 35.0 / 210, true}, // C(7,4) = 35, C(10,4) = 210
		{10, 7, 10, 1, 0, true},
		{4, 4, 4, 1, 1, true},
		{4, 0, 4, 0, 0, true},
		{4, 2, 5, 0, 0, false}, // k > n: no estimate
		{4, 2, 0, 0, 0, false},
	} {
		at, ok1 := PassAtK(c.n, c.c, c.k)
		hat, ok2 := PassHatK(c.n, c.c, c.k)
		if ok1 != c.ok || ok2 != c.ok || (c.ok && (!near(at, c.at) || !near(hat, c.hat))) {
			t.Errorf("n=%d c=%d k=%d: pass@k %v (%v), pass^k %v (%v); want %v, %v (%v)", c.n, c.c, c.k, at, ok1, hat, ok2, c.at, c.hat, c.ok)
		}
	}
}

// TestSpread: values 1..10 → p50 at rank 4.5 = 5.5, p99 at rank 8.91 =
// 9.91, mean 5.5, sample sd √(82.5/9) = 3.02765…, cv = 0.55048….
func TestSpread(t *testing.T) {
	s := SpreadOf([]float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1})
	if s.N != 10 || !near(s.P50, 5.5) || !near(s.P99, 9.91) || !near(s.Mean, 5.5) || !near(s.CV, math.Sqrt(82.5/9)/5.5) || s.Max != 10 {
		t.Errorf("spread %+v", s)
	}
	if s := SpreadOf([]float64{4}); s.P50 != 4 || s.P99 != 4 || s.CV != 0 {
		t.Errorf("one value: %+v", s)
	}
	if s := SpreadOf(nil); s.N != 0 || s.P50 != 0 {
		t.Errorf("no values: %+v", s)
	}
}

// TestFisherExact: the textbook table [[1, 9], [11, 3]] (Fisher's tea
// tasting layout as in Wikipedia's worked example) has two-sided p =
// 0.002759 (tables 0/10, 1/9 on one tail and 10/0… on the other, summed by
// hand there); identical proportions [[5, 5], [5, 5]] give 1; an empty
// table 1.
func TestFisherExact(t *testing.T) {
	if p := FisherExact(1, 9, 11, 3); math.Abs(p-0.002759) > 5e-6 {
		t.Errorf("FisherExact(1, 9, 11, 3) = %v, want 0.002759", p)
	}
	if p := FisherExact(5, 5, 5, 5); math.Abs(p-1) > 1e-9 {
		t.Errorf("FisherExact(5, 5, 5, 5) = %v, want 1", p)
	}
	if p := FisherExact(0, 0, 0, 0); p != 1 {
		t.Errorf("empty table: %v", p)
	}
	// 10 of 10 against 0 of 10: one table that extreme each way,
	// 2 / C(20, 10) = 2 / 184756.
	if p := FisherExact(10, 0, 0, 10); math.Abs(p-2.0/184756) > 1e-12 {
		t.Errorf("FisherExact(10, 0, 0, 10) = %v, want %v", p, 2.0/184756)
	}
}

// TestMannWhitney: x = {1, 2, 3}, y = {4, 5, 6}: rank sum of x 6, U = 6 −
// 6 = 0, mean 4.5, variance 3·3/12 · 7 = 5.25 (no ties), z = (4.5 − 0.5) /
// √5.25, p = erfc(z/√2) ≈ 0.0809. Identical samples: p 1.
func TestMannWhitney(t *testing.T) {
	z := 4.0 / math.Sqrt(5.25)
	if p := MannWhitney([]float64{1, 2, 3}, []float64{4, 5, 6}); math.Abs(p-math.Erfc(z/math.Sqrt2)) > 1e-12 || math.Abs(p-0.0809) > 5e-4 {
		t.Errorf("MannWhitney = %v, want %v", p, math.Erfc(z/math.Sqrt2))
	}
	if p := MannWhitney([]float64{2, 2, 2}, []float64{2, 2}); p != 1 {
		t.Errorf("all tied: %v", p)
	}
	// With ties: x = {1, 1, 2}, y = {2, 3, 3}. Ranks: 1,1 → 1.5; 2,2 → 3.5;
	// 3,3 → 5.5. R1 = 1.5 + 1.5 + 3.5 = 6.5, U = 0.5; ties Σ(t³−t) = 18;
	// variance = 9/12 · (7 − 18/30) = 4.8; z = (4 − 0.5) / √4.8.
	zt := 3.5 / math.Sqrt(4.8)
	if p := MannWhitney([]float64{1, 1, 2}, []float64{2, 3, 3}); math.Abs(p-math.Erfc(zt/math.Sqrt2)) > 1e-12 {
		t.Errorf("with ties: %v, want %v", p, math.Erfc(zt/math.Sqrt2))
	}
}

// TestSelectedQuantilesAreTheSorted: the quantiles Spread selects are
// Quantile's of the sorted values, exactly, for sizes around the small
// parts quickselect sorts, with many equal values, and at the ranks' ends;
// the mean and variation do not depend on the values' order.
func TestSelectedQuantilesAreTheSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 16, 17, 18, 33, 100, 101, 1000, 4099} {
		for _, distinct := range []int{1, 3, 1 << 30} {
			values := make([]float64, n)
			for i := range values {
				values[i] = float64(rng.IntN(distinct)) * 0.37
			}
			sorted := slices.Clone(values)
			slices.Sort(sorted)
			for _, ps := range [][2]float64{{0.5, 0.99}, {0, 1}, {0.5, 0.5}, {0.95, 0.95}, {0.01, 0.02}} {
				a := slices.Clone(values)
				q1, q2 := Quantiles2(a, ps[0], ps[1])
				if w1, w2 := Quantile(sorted, ps[0]), Quantile(sorted, ps[1]); q1 != w1 || q2 != w2 {
					t.Errorf("n %d, %d distinct, p %v: %v, %v; sorted %v, %v", n, distinct, ps, q1, q2, w1, w2)
				}
				slices.Sort(a)
				if !slices.Equal(a, sorted) {
					t.Fatalf("n %d: the values changed, not only their order", n)
				}
			}
			s := SpreadOf(slices.Clone(values))
			if s.P50 != Quantile(sorted, 0.5) || s.P99 != Quantile(sorted, 0.99) || s.Max != sorted[n-1] || s.N != n {
				t.Errorf("n %d, %d distinct: spread %+v", n, distinct, s)
			}
			// The mean and variation of the same values in another order.
			reversed := slices.Clone(values)
			slices.Reverse(reversed)
			if r := SpreadOf(reversed); r.Mean != s.Mean || r.CV != s.CV {
				t.Errorf("n %d, %d distinct: mean %v, cv %v reversed; %v, %v", n, distinct, r.Mean, r.CV, s.Mean, s.CV)
			}
		}
	}
}
