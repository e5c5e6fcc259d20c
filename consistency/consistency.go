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

// SpreadOf computes the Spread of values (which it sorts). Percentiles
// interpolate linearly between the closest ranks (the R-7 / NumPy
// default): p of n sorted values is at rank (n−1)·p.
func SpreadOf(values []float64) Spread {
	s := Spread{N: len(values)}
	if len(values) == 0 {
		return s
	}
	slices.Sort(values)
	s.P50, s.P99, s.Max = Quantile(values, 0.5), Quantile(values, 0.99), values[len(values)-1]
	sum := 0.0
	for _, v := range values {
		sum += v
	}
	s.Mean = sum / float64(len(values))
	if len(values) > 1 && s.Mean != 0 {
		ss := 0.0
		for _, v := range values {
			ss += (v - s.Mean) * (v - s.Mean)
		}
		s.CV = math.Sqrt(ss/float64(len(values)-1)) / s.Mean
	}
	return s
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
