package query_test

import (
	"context"
	"math"
	"testing"

	"github.com/tallyhq/tally/query"
)

// TestFloatArrayLiteralReadsBackExactly: the costs of runs in flight are
// written into a conversations statement as a literal of plain numbers
// (not bound, which casts each one); the store reads every float64 back
// to the same bits — shortest decimals, the extremes of the range,
// subnormals and -0, costs that are not exact in binary — and nan and
// ±inf as themselves. All zeros (an array ClickHouse types as integers) read as
// 0.
func TestFloatArrayLiteralReadsBackExactly(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	cases := []struct {
		name   string
		values []float64
		want   string // the literal, worked out by hand
	}{
		{"costs", []float64{0.0112, 0.30000000000000004, 2.5e-05, 12}, "[0.0112, 0.30000000000000004, 2.5e-05, 12]"},
		{"extremes", []float64{math.MaxFloat64, 0x1p-1022, -1.5, 1e21}, "[1.7976931348623157e+308, 2.2250738585072014e-308, -1.5, 1e+21]"},
		// Written by their bits (0x1 and 1<<63): 18.16 parses no
		// subnormal literal, and reads -0 as 0.
		{"subnormal and -0", []float64{math.SmallestNonzeroFloat64, math.Copysign(0, -1), 0.5},
			"[reinterpretAsFloat64(reinterpretAsString(toUInt64(1))), reinterpretAsFloat64(reinterpretAsString(toUInt64(9223372036854775808))), 0.5]"},
		{"not finite", []float64{math.NaN(), math.Inf(1), math.Inf(-1)}, "[nan, inf, -inf]"},
		{"zeros", []float64{0, 0}, "[0, 0]"},
		{"one", []float64{7}, "[7]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lit := query.FloatArrayLiteral(c.values)
			if lit != c.want {
				t.Fatalf("literal %s, want %s", lit, c.want)
			}
			var got []float64
			if err := store.Conn().QueryRow(ctx, "SELECT arrayMap(x -> toFloat64(x), "+lit+")").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.values) {
				t.Fatalf("read %d values %v, want %d", len(got), got, len(c.values))
			}
			for i, v := range c.values {
				same := math.Float64bits(got[i]) == math.Float64bits(v) || (math.IsNaN(v) && math.IsNaN(got[i]))
				if !same {
					t.Errorf("value %d read back as %v (%#x), want %v (%#x)", i, got[i], math.Float64bits(got[i]), v, math.Float64bits(v))
				}
			}
		})
	}
}
