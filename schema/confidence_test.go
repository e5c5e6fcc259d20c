package schema

import "testing"

// TestConfidenceLevel: a total's confidence from its split by confidence.
func TestConfidenceLevel(t *testing.T) {
	for _, c := range []struct {
		name     string
		spend    ConfidenceSpend
		total    float64
		unpriced int
		want     string
	}{
		{"all exact", ConfidenceSpend{CostExact: 0.5}, 0.5, 0, ConfidenceExact},
		{"exact and corrected", ConfidenceSpend{CostExact: 0.5, CostCorrected: 0.1}, 0.6, 0, ConfidenceCorrected},
		{"an upper-bound part", ConfidenceSpend{CostExact: 0.5, CostUpperBound: 0.1}, 0.6, 0, ConfidenceUpperBound},
		{"a lower-bound part", ConfidenceSpend{CostExact: 0.5, CostLowerBound: 0.1}, 0.6, 0, ConfidenceLowerBound},
		{"an unpriced span leaves cost out", ConfidenceSpend{CostExact: 0.5}, 0.5, 1, ConfidenceLowerBound},
		{"bounds both ways", ConfidenceSpend{CostUpperBound: 0.5, CostLowerBound: 0.1}, 0.6, 0, ConfidenceApproximate},
		{"upper bound and an unpriced span", ConfidenceSpend{CostUpperBound: 0.5}, 0.5, 2, ConfidenceApproximate},
		{"an approximate part", ConfidenceSpend{CostExact: 0.5, CostApproximate: 0.1}, 0.6, 0, ConfidenceApproximate},
		{"nothing priced", ConfidenceSpend{}, 0, 3, ConfidenceUnpriced},
		{"a rounding residue is nothing", ConfidenceSpend{CostExact: 0.5, CostUpperBound: 2e-20}, 0.5, 0, ConfidenceExact},
		{"nothing rated", ConfidenceSpend{}, 0.4, 0, ""},
	} {
		if got := c.spend.Level(c.total, c.unpriced); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
