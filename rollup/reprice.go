package rollup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// RepriceFilter selects the spans to reprice.
type RepriceFilter struct {
	Project      string    // "" for every project
	Since, Until time.Time // span start in [Since, Until); both required
	// Model limits repricing to spans whose model (or response or request
	// model) equals it after pricing.Normalize; "" for all.
	Model string
}

// RepriceResult says what a reprice did.
type RepriceResult struct {
	Scanned    int          `json:"scanned"`     // spans in the range (and model)
	Changed    int          `json:"changed"`     // spans rewritten with new usage or costs
	ClientCost int          `json:"client_cost"` // spans whose cost the client sent (kept)
	Rollup     RefreshStats `json:"rollup"`      // the rollup hours recomputed afterwards
}

// repriceChunk is how much of the range one read covers, to bound memory.
const repriceChunk = 6 * time.Hour

// Reprice derives the usage and cost of the selected spans again from what
// they reported, with the current instrumentation readings and prices
// (rules: the usage policy and pricer, see ingest.Rederive), and writes the
// spans that changed again with a newer version, so that the spans table
// (ReplacingMergeTree) keeps the re-derived row. A cost the client sent is
// kept (it is re-read from the span). Running it twice is the same as once:
// the second run finds nothing to change. When rollup is not nil, the
// affected closed hours of the cost rollup are recomputed afterwards.
func Reprice(ctx context.Context, store *schema.Store, rules ingest.Options, f RepriceFilter, rollup *Rollup) (RepriceResult, error) {
	var res RepriceResult
	if f.Since.IsZero() || f.Until.IsZero() {
		return res, errors.New("reprice: since and until are required")
	}
	if !f.Until.After(f.Since) {
		return res, errors.New("reprice: until must be after since")
	}
	model := pricing.Normalize(f.Model)
	matches := func(s *schema.Span) bool {
		if f.Model == "" {
			return true
		}
		for _, m := range []string{s.Model, s.ResponseModel, s.RequestModel} {
			if m != "" && (m == f.Model || pricing.Normalize(m) == model) {
				return true
			}
		}
		return false
	}
	since, until := f.Since.UTC(), f.Until.UTC()
	reader := query.NewReader(store)
	for from := since; from.Before(until); from = from.Add(repriceChunk) {
		to := from.Add(repriceChunk)
		if to.After(until) {
			to = until
		}
		spans, err := reader.SpanRows(ctx, f.Project, from, to)
		if err != nil {
			return res, err
		}
		var changed []schema.Span
		now := uint64(time.Now().UnixNano())
		for i := range spans {
			s := &spans[i]
			if !matches(s) {
				continue
			}
			res.Scanned++
			repriced, ok := ingest.Rederive(*s, rules)
			if repriced.CostSource == schema.CostClient {
				res.ClientCost++
			}
			if !ok {
				continue
			}
			repriced.Version = max(now, s.Version+1)
			changed = append(changed, repriced)
		}
		if err := store.InsertSpans(ctx, changed); err != nil {
			return res, fmt.Errorf("reprice: %w", err)
		}
		res.Changed += len(changed)
	}
	if rollup != nil && res.Changed > 0 {
		end := until.Truncate(time.Hour)
		if end.Before(until) {
			end = end.Add(time.Hour)
		}
		if now := time.Now(); end.After(now) {
			end = now
		}
		stats, err := rollup.RefreshRange(ctx, since, end)
		if err != nil {
			return res, fmt.Errorf("reprice: refresh rollup: %w", err)
		}
		res.Rollup = stats
	}
	return res, nil
}
