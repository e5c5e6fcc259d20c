package consistency

import (
	"math"
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
