package consistency

import (
	"math"
	"slices"
)

// A Sketch is a log-bucket histogram of non-negative values (DDSketch's
// logarithmic mapping): a value v > 0 falls in bucket ⌈log_γ v⌉, γ =
// (1+SketchAccuracy)/(1−SketchAccuracy), and a bucket stands for
// 2γ^k/(γ+1), within SketchAccuracy of every value in it. Zeros (and
// negative values, which the measures it holds never have) count in
// SketchZero. Sketches add up bucket by bucket, so hours' sketches merge
// into a window's without their values: the run rollup stores each as
// its keys and counts, and ClickHouse's sumMap merges them by key.
//
// The mapping is a storage contract (the keys are stored): changing
// SketchAccuracy needs the rollup recomputed.
type Sketch struct {
	Keys   []int16 // sorted, distinct
	Counts []uint64
}

// SketchAccuracy is a Sketch's relative accuracy: a quantile it answers
// is within 1% of a value of that rank.
const SketchAccuracy = 0.01

// SketchZero is the key of the bucket of zeros.
const SketchZero int16 = math.MinInt16

var (
	sketchGamma    = (1 + SketchAccuracy) / (1 - SketchAccuracy)
	sketchLogGamma = math.Log(sketchGamma)
)

// SketchKey is the bucket of v. Values beyond the keys' range (below
// about 1e-174 or above 1e174) fall in the first or last bucket.
func SketchKey(v float64) int16 {
	if !(v > 0) {
		return SketchZero
	}
	k := math.Ceil(math.Log(v) / sketchLogGamma)
	return int16(max(min(k, math.MaxInt16), math.MinInt16+1))
}

// SketchValue is the value bucket k stands for.
func SketchValue(k int16) float64 {
	if k == SketchZero {
		return 0
	}
	return 2 * math.Pow(sketchGamma, float64(k)) / (sketchGamma + 1)
}

// SketchBuilder collects values into a Sketch.
type SketchBuilder map[int16]uint64

// Add counts v.
func (b SketchBuilder) Add(v float64) { b[SketchKey(v)]++ }

// Sketch is the builder's values as a Sketch.
func (b SketchBuilder) Sketch() Sketch {
	s := Sketch{Keys: make([]int16, 0, len(b)), Counts: make([]uint64, 0, len(b))}
	for k := range b {
		s.Keys = append(s.Keys, k)
	}
	slices.Sort(s.Keys)
	for _, k := range s.Keys {
		s.Counts = append(s.Counts, b[k])
	}
	return s
}

// Merge adds o's counts to s (both sorted by key).
func (s *Sketch) Merge(o Sketch) {
	if len(o.Keys) == 0 {
		return
	}
	if len(s.Keys) == 0 {
		s.Keys, s.Counts = slices.Clone(o.Keys), slices.Clone(o.Counts)
		return
	}
	keys := make([]int16, 0, len(s.Keys)+len(o.Keys))
	counts := make([]uint64, 0, len(s.Keys)+len(o.Keys))
	i, j := 0, 0
	for i < len(s.Keys) || j < len(o.Keys) {
		switch {
		case j == len(o.Keys) || i < len(s.Keys) && s.Keys[i] < o.Keys[j]:
			keys, counts = append(keys, s.Keys[i]), append(counts, s.Counts[i])
			i++
		case i == len(s.Keys) || o.Keys[j] < s.Keys[i]:
			keys, counts = append(keys, o.Keys[j]), append(counts, o.Counts[j])
			j++
		default:
			keys, counts = append(keys, s.Keys[i]), append(counts, s.Counts[i]+o.Counts[j])
			i, j = i+1, j+1
		}
	}
	s.Keys, s.Counts = keys, counts
}

// WithoutZeros is s less its bucket of zeros.
func (s Sketch) WithoutZeros() Sketch {
	if len(s.Keys) > 0 && s.Keys[0] == SketchZero {
		return Sketch{Keys: s.Keys[1:], Counts: s.Counts[1:]}
	}
	return s
}

// Count is how many values s holds.
func (s Sketch) Count() uint64 {
	var n uint64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Quantiles2 is, as Quantiles2 of the values themselves, s's p1 and p2
// quantiles (p1 ≤ p2): the ranks (n−1)·p interpolated between the values
// of the ranks either side. A rank's value is its bucket's, at most
// max, and max itself for the greatest rank (max is kept exactly beside
// the sketch). With ints (the values are whole numbers: counts of calls
// or tokens) a bucket holding a single whole number stands for it: below
// about 50 every bucket does, so small counts' quantiles are exact.
func (s Sketch) Quantiles2(p1, p2, max float64, ints bool) (q1, q2 float64) {
	n := s.Count()
	if n == 0 {
		return 0, 0
	}
	value := func(r uint64) float64 {
		if r == n-1 {
			return max
		}
		return math.Min(s.rank(r, ints), max)
	}
	at := func(p float64) float64 {
		r := p * float64(n-1)
		lo := uint64(math.Floor(r))
		x := value(lo)
		if lo >= n-1 {
			return x
		}
		return x + (r-float64(lo))*(value(lo+1)-x)
	}
	return at(p1), at(p2)
}

// rank is the value of the bucket holding the value of rank r (0-based,
// ascending); with ints, the bucket's one whole number if it holds one.
func (s Sketch) rank(r uint64, ints bool) float64 {
	var seen uint64
	for i, c := range s.Counts {
		seen += c
		if r < seen {
			return bucketValue(s.Keys[i], ints)
		}
	}
	return bucketValue(s.Keys[len(s.Keys)-1], ints)
}

// bucketValue is the value bucket k stands for; with ints, the one whole
// number in (γ^(k−1), γ^k] when there is exactly one.
func bucketValue(k int16, ints bool) float64 {
	if ints && k != SketchZero {
		hi := math.Floor(math.Pow(sketchGamma, float64(k)) * (1 + 1e-12))
		lo := math.Floor(math.Pow(sketchGamma, float64(k-1)) * (1 + 1e-12))
		if hi-lo == 1 {
			return hi
		}
	}
	return SketchValue(k)
}

// CountAbove is how many of s's values are above v, as their buckets
// tell: values in v's own bucket count by the bucket's value, so a value
// within SketchAccuracy of v may be counted on the wrong side of it.
func (s Sketch) CountAbove(v float64) uint64 {
	var n uint64
	for i, k := range s.Keys {
		if SketchValue(k) > v {
			n += s.Counts[i]
		}
	}
	return n
}

// Moments are a measure's exact figures over values that a Sketch holds
// approximately: how many, their sum, their sum of squares and their
// greatest, for a Spread of values the sketch summarizes.
type Moments struct {
	N          uint64
	Sum, SumSq float64
	Max        float64
}

// Add counts v.
func (m *Moments) Add(v float64) {
	if m.N == 0 || v > m.Max {
		m.Max = v
	}
	m.N++
	m.Sum += v
	m.SumSq += v * v
}

// Merge adds o.
func (m *Moments) Merge(o Moments) {
	if o.N == 0 {
		return
	}
	if m.N == 0 || o.Max > m.Max {
		m.Max = o.Max
	}
	m.N += o.N
	m.Sum += o.Sum
	m.SumSq += o.SumSq
}

// SketchSpread is the Spread of values with moments m and sketch s: N,
// mean, maximum and coefficient of variation exact (up to floating-point
// rounding: the variance is from the sums), p50 and p99 from the sketch
// (Quantiles2; ints: the values are whole numbers).
func SketchSpread(m Moments, s Sketch, ints bool) Spread {
	sp := Spread{N: int(m.N)}
	if m.N == 0 {
		return sp
	}
	n := float64(m.N)
	sp.Mean, sp.Max = m.Sum/n, m.Max
	if m.N > 1 && sp.Mean != 0 {
		v := (m.SumSq - m.Sum*m.Sum/n) / (n - 1)
		sp.CV = math.Sqrt(math.Max(v, 0)) / sp.Mean
	}
	sp.P50, sp.P99 = s.Quantiles2(0.5, 0.99, m.Max, ints)
	return sp
}
