package consistency

import (
	"math"
	"slices"
)

// Significance is the p-value below which a difference counts as beyond
// noise: the conventional 5%.
const Significance = 0.05

// FisherExact is the two-sided p-value of Fisher's exact test on the 2×2
// table [[a, b], [c, d]] — e.g. passes and failures of version A (a, b)
// against those of version B (c, d): the probability, with the margins
// fixed, of a table at most as likely as the one observed. Exact for any
// sample size, which small evaluation sets need. 1 for an empty table.
func FisherExact(a, b, c, d int) float64 {
	if a < 0 || b < 0 || c < 0 || d < 0 {
		return math.NaN()
	}
	row1, col1, n := a+b, a+c, a+b+c+d
	if n == 0 {
		return 1
	}
	lo, hi := max(0, col1-(n-row1)), min(row1, col1)
	pObs := hypergeom(a, row1, col1, n)
	p := 0.0
	for k := lo; k <= hi; k++ {
		// A relative tolerance: tables as likely as the observed one
		// differ from it only by rounding.
		if pk := hypergeom(k, row1, col1, n); pk <= pObs*(1+1e-7) {
			p += pk
		}
	}
	return min(p, 1)
}

// hypergeom is P(X = k) for the count in the table's top-left cell, with
// row1 in the first row, col1 in the first column, n in all.
func hypergeom(k, row1, col1, n int) float64 {
	return math.Exp(lchoose(row1, k) + lchoose(n-row1, col1-k) - lchoose(n, col1))
}

// lchoose is ln C(n, k).
func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// MannWhitney is the two-sided p-value of the Mann–Whitney U test that x
// and y come from the same distribution — e.g. the costs or durations of
// runs of two versions — by the normal approximation with tie correction
// and continuity correction (adequate from about 8 values a side; with
// fewer it is conservative only roughly). 1 when either side is empty or
// every value is tied.
func MannWhitney(x, y []float64) float64 {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return 1
	}
	type obs struct {
		v    float64
		inX  bool
		rank float64
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range x {
		all = append(all, obs{v: v, inX: true})
	}
	for _, v := range y {
		all = append(all, obs{v: v})
	}
	slices.SortFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	n := float64(n1 + n2)
	ties := 0.0
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		mid := float64(i+j+1) / 2 // ranks i+1 … j, averaged
		for k := i; k < j; k++ {
			all[k].rank = mid
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	r1 := 0.0
	for _, o := range all {
		if o.inX {
			r1 += o.rank
		}
	}
	u := r1 - float64(n1*(n1+1))/2
	mean := float64(n1*n2) / 2
	variance := float64(n1*n2) / 12 * ((n + 1) - ties/(n*(n-1)))
	if variance <= 0 {
		return 1
	}
	z := (math.Abs(u-mean) - 0.5) / math.Sqrt(variance)
	if z <= 0 {
		return 1
	}
	return math.Erfc(z / math.Sqrt2)
}
