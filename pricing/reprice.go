package pricing

import "github.com/tallyhq/tally/schema"

// Reprice computes a stored span's cost again with the catalog and returns
// the repriced copy and whether any cost field changed. A span whose cost the
// client sent, a span repeating its children's usage and a span without usage
// never change (see Apply). The returned span keeps the input's Version: the
// caller gives a rewritten row a newer one.
//
// Repricing is a pure function of the span's usage, model, start time and
// the catalog, so repricing a repriced span changes nothing: twice is once.
func (c *Catalog) Reprice(s schema.Span) (schema.Span, bool) {
	before := s
	c.Apply(&s)
	changed := s.CostInput != before.CostInput || s.CostCacheRead != before.CostCacheRead ||
		s.CostCacheWrite != before.CostCacheWrite || s.CostOutput != before.CostOutput ||
		s.CostTotal != before.CostTotal || s.CostSource != before.CostSource ||
		s.PriceEntry != before.PriceEntry || s.PriceVersion != before.PriceVersion
	return s, changed
}
