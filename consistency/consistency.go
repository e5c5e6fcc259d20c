// Package consistency holds the arithmetic of how consistent an agent is
// over repeated runs of one task: the unbiased pass@k and pass^k
// estimators from n trials with c successes, and the spread of a measure
// (steps, tokens, cost, wall clock) over runs. It reads no data; package
// query feeds it.
package consistency

import (
	"math"
	"slices"
)

// PassAtK is the unbiased estimate of pass@k — the chance that at least one
// of k trials drawn without replacement from the n observed succeeds —
// from n trials with c successes: 1 − C(n−c, k) / C(n, k). ok is false when
// k is not in 1..n (no estimate from fewer trials than k).
func PassAtK(n, c, k int) (p float64, ok bool) {
	if k < 1 || k > n || c < 0 || c > n {
		return 0, false
	}
	return 1 - ratio(n-c, n, k), true
}

// PassHatK is the unbiased estimate of pass^k — the chance that all k
// trials succeed — from n trials with c successes: C(c, k) / C(n, k).
func PassHatK(n, c, k int) (p float64, ok bool) {
	if k < 1 || k > n || c < 0 || c > n {
		return 0, false
	}
	return ratio(c, n, k), true
}

// ratio is C(a, k) / C(n, k) as the product of (a−i)/(n−i) for i < k,
// which stays in floating-point range for any n (0 when a < k).
func ratio(a, n, k int) float64 {
	r := 1.0
	for i := 0; i < k; i++ {
		if a-i <= 0 {
			return 0
		}
		r *= float64(a-i) / float64(n-i)
	}
	return r
}

// Spread summarizes a measure over runs: how many, its median and 99th
// percentile, mean, and coefficient of variation (sample standard
// deviation ÷ mean; 0 with fewer than two values or a zero mean).
type Spread struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
	CV   float64 `json:"cv"`
	Max  float64 `json:"max"`
}

// SpreadOf computes the Spread of values (which it reorders). Percentiles
// interpolate linearly between the closest ranks (the R-7 / NumPy
// default): p of n sorted values is at rank (n−1)·p. They are selected,
// not sorted for (a task's runs over a week are hundreds of thousands of
// values a measure), with the same answer as Quantile of the sorted
// values.
func SpreadOf(values []float64) Spread {
	s := Spread{N: len(values)}
	if len(values) == 0 {
		return s
	}
	// The sums are compensated (Neumaier's): the values come in the
	// order runs are read, and the mean and variation should not depend
	// on it beyond the last bit.
	var sum sumOf
	s.Max = values[0]
	for _, v := range values {
		sum.add(v)
		s.Max = max(s.Max, v)
	}
	s.Mean = sum.value() / float64(len(values))
	if len(values) > 1 && s.Mean != 0 {
		var ss sumOf
		for _, v := range values {
			ss.add((v - s.Mean) * (v - s.Mean))
		}
		s.CV = math.Sqrt(ss.value()/float64(len(values)-1)) / s.Mean
	}
	s.P50, s.P99 = Quantiles2(values, 0.5, 0.99)
	return s
}

// sumOf is a compensated (Neumaier) sum of float64s: the rounding error
// of each addition is kept apart and added back at the end.
type sumOf struct{ sum, c float64 }

func (s *sumOf) add(v float64) {
	t := s.sum + v
	if math.Abs(s.sum) >= math.Abs(v) {
		s.c += (s.sum - t) + v
	} else {
		s.c += (v - t) + s.sum
	}
	s.sum = t
}

func (s *sumOf) value() float64 { return s.sum + s.c }

// QuantileOf is Quantile of values once sorted, selected instead (values
// are reordered).
func QuantileOf(values []float64, p float64) float64 {
	q, _ := Quantiles2(values, p, p)
	return q
}

// Quantiles2 is Quantile of values once sorted at p1 and p2 (p1 ≤ p2),
// selected instead of sorted for: O(n) on average. values are reordered.
func Quantiles2(values []float64, p1, p2 float64) (q1, q2 float64) {
	n := len(values)
	if n == 0 {
		return 0, 0
	}
	// at is Quantile's arithmetic on the ranks lo and lo+1 (the values
	// x and next), r the fractional rank.
	at := func(r float64, lo int, x, next float64) float64 {
		if lo >= n-1 {
			return x
		}
		return x + (r-float64(lo))*(next-x)
	}
	r2 := p2 * float64(n-1)
	lo2 := min(int(math.Floor(r2)), n-1)
	selectNth(values, lo2)
	x2, next2 := values[lo2], values[lo2]
	if lo2 < n-1 {
		next2 = slices.Min(values[lo2+1:])
	}
	q2 = at(r2, lo2, x2, next2)
	r1 := p1 * float64(n-1)
	lo1 := min(int(math.Floor(r1)), lo2)
	// The lo2+1 smallest values are values[:lo2+1]: the lo1-th of them is
	// the lo1-th of all, and the next is the least of those after it.
	selectNth(values[:lo2+1], lo1)
	x1, next1 := values[lo1], next2
	if lo1 < lo2 {
		next1 = slices.Min(values[lo1+1 : lo2+1])
	}
	return at(r1, lo1, x1, next1), q2
}

// selectNth reorders a so that a[k] is the value a sorted would hold
// there, every value before it no greater and every value after it no
// less (quickselect, the middle of three as the pivot; small parts
// sorted).
func selectNth(a []float64, k int) {
	lo, hi := 0, len(a)-1
	for hi-lo > 16 {
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < pivot {
				i++
			}
			for a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return // a[j+1:i] all equal the pivot
		}
	}
	slices.Sort(a[lo : hi+1])
}

// Quantile is the p-quantile (0 ≤ p ≤ 1) of sorted values by linear
// interpolation between the closest ranks; 0 for no values.
func Quantile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	r := p * float64(len(sorted)-1)
	lo := int(math.Floor(r))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (r-float64(lo))*(sorted[lo+1]-sorted[lo])
}
