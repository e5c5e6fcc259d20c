package query

import (
	"context"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/ingest"
)

// SpanExplanation is how one span's stored usage and cost were derived,
// and whether they count in the run's totals.
type SpanExplanation struct {
	SpanID string `json:"span_id"`
	Name   string `json:"name"`
	Type   string `json:"type"`
	// Counted says the span's usage and cost count in the run's totals
	// (a cost on a span without usage always does).
	Counted bool `json:"counted"`
	// CountedWhy says why the span counts or not (attribution/counted.go's rule).
	CountedWhy string `json:"counted_why"`
	ingest.Explanation
}

// Explainer explains the usage and cost of a run's spans with the rules
// ingest applies (the readings and the price catalog in opts).
type Explainer struct {
	reader *Reader
	opts   ingest.Options
}

// NewExplainer returns an Explainer reading runs through r and deriving with
// opts (the server's normalization options: usage policy and pricer).
func NewExplainer(r *Reader, opts ingest.Options) *Explainer {
	return &Explainer{reader: r, opts: opts}
}

// Explain explains every span of the run that carries usage or a cost, or
// only spanID when it is not "". ErrNotFound when the run (or the span)
// does not exist in project.
func (e *Explainer) Explain(ctx context.Context, project, traceID, spanID string) ([]SpanExplanation, error) {
	spans, err := e.reader.Spans(ctx, project, traceID)
	if err != nil {
		return nil, err
	}
	if len(spans) == 0 {
		return nil, ErrNotFound
	}
	_, counted := summarize(spans)
	out := []SpanExplanation{}
	seen := map[string]bool{}
	for i := range spans {
		s := spans[i]
		if seen[s.SpanID] || (spanID != "" && s.SpanID != spanID) {
			continue
		}
		seen[s.SpanID] = true
		if spanID == "" && s.UsageMode == "" && s.CostSource == "" {
			continue
		}
		x := SpanExplanation{SpanID: s.SpanID, Name: s.Name, Type: s.SpanType,
			Counted:     attribution.CostCounts(counted[s.SpanID], s.UsageMode),
			Explanation: ingest.Explain(s, e.opts)}
		x.CountedWhy = countedWhy(x.Counted, s.SpanType, s.UsageMode)
		out = append(out, x)
	}
	if len(out) == 0 && spanID != "" {
		return nil, ErrNotFound
	}
	return out, nil
}

// countedWhy puts attribution/counted.go's rule for one span in words.
func countedWhy(counted bool, spanType, mode string) string {
	switch {
	case mode == "" && counted:
		return "a cost on a span without usage always counts"
	case mode == "":
		return "no usage and no cost"
	case mode == "aggregated" && counted:
		return "the run's inference spans carry no usage, so this span's aggregated usage is the run's"
	case mode == "aggregated":
		return "repeats its children's usage, which counts instead"
	case counted:
		return "its own usage of one call"
	case spanType == "inference":
		return "another inference span reports the same call (a child, or the same buckets within its time): that one counts"
	}
	return "not counted"
}
