package attribution

import (
	"cmp"
	"slices"
	"strings"

	"github.com/tallyhq/tally/schema"
)

// Which spans' usage and cost count in a run's totals — "counted once,
// always". The rule, decided the same way by CountedUsage (Go, for
// attribution and single runs) and its SQL twin query.runCountedSQL
// (ClickHouse, for run lists and budgets; query/counted.go): a change to one
// is a change to both.
//
//  1. An inference span with usage counts, unless another inference span
//     with usage reports the same call: one of its direct children (Google
//     ADK's call_llm over the google-genai span), or a span within its time
//     interval with the same input, output and cache buckets (LangChain's LLM
//     span and the OpenAI SDK's span for the same call, which OpenInference
//     makes siblings). The inner span wins: it read the provider's own usage
//     object. Of two with the same interval and buckets, the one with the
//     smaller span id counts.
//  2. Spans whose usage repeats their children's (agent, workflow and tool
//     spans, gen_ai.aggregated_usage.*: schema.UsageAggregated) count only
//     in a run where no span counts by rule 1; then the largest of them
//     (input + output tokens) counts, with its cost — so a run whose only
//     usage is one agent span (the Claude Agent SDK's) is priced.
//  3. A cost on a span without usage (a client-sent cost on a paid tool
//     call) always counts.
//
// And which inference spans are calls: all of them but those rule 1 leaves
// out, and but the usage records that have a request span to be their call
// (RecordedCalls; SQL: query.runAggregates' n_llm). A usage record
// (schema.Span.UsageRecord: Logfire's "streaming response from …" log) holds
// the usage of a streamed call whose request span, beside it, holds none:
// its usage and cost count, and the two are one call. Of a run's r records
// and q request spans (inference spans that are not records, without usage
// of their own), min(r, q) records are not calls, the earliest first.

// UsageSpan is what the counting rule reads of a span.
type UsageSpan struct {
	ID, ParentID string
	SpanType     string
	UsageMode    string // schema.Usage*
	Record       bool   // schema.Span.UsageRecord
	StartNs      uint64
	EndNs        uint64
	// Token buckets, as stored (Input includes both cache buckets).
	Input, CacheRead, CacheWrite, Output uint64
}

// size orders aggregated spans (rule 2).
func (s UsageSpan) size() uint64 { return s.Input + s.Output }

// SameCall reports whether y reports the same call as x (rule 1), so that x
// does not count.
func SameCall(x, y UsageSpan) bool {
	if y.ID == x.ID {
		return false
	}
	if y.ParentID == x.ID {
		return true
	}
	return y.StartNs >= x.StartNs && y.EndNs <= x.EndNs && y.Input == x.Input && y.Output == x.Output &&
		y.CacheRead == x.CacheRead && y.CacheWrite == x.CacheWrite &&
		(y.StartNs > x.StartNs || y.EndNs < x.EndNs || y.ID < x.ID)
}

// CountedUsage returns, for each span of one run (deduplicated), whether its
// usage counts, and whether the run's usage came from an aggregated span
// (rule 2). A span without usage (rule 3) is never counted here: whether its
// cost counts is CostCounts'.
func CountedUsage(spans []UsageSpan) (counted []bool, fromAggregate bool) {
	counted = make([]bool, len(spans))
	repeated := repeatedCalls(spans)
	n, largest := 0, -1
	for i, s := range spans {
		switch {
		case s.UsageMode == schema.UsageAggregated:
			if largest < 0 || s.size() > spans[largest].size() {
				largest = i
			}
		case HasOwnUsage(s.UsageMode):
			if repeated[i] {
				continue
			}
			counted[i] = true
			n++
		}
	}
	if n == 0 && largest >= 0 {
		counted[largest] = true
		fromAggregate = true
	}
	return counted, fromAggregate
}

// repeatedCalls marks each inference span with usage for which another
// inference span with usage reports the same call (SameCall), without
// comparing every pair: a run of 50,000 spans took 18 s that way. A span is
// repeated when one of them is its child, or when one with the same four
// buckets lies within its interval: among a bucket's spans sorted by start,
// a span is contained by a later-starting one if the smallest end of those
// is at most its own, and by an equal-starting one if that one ends earlier
// or, ending at the same time, has the smaller id (the first of the equal
// starts in (end, id) order is the only one that is not).
func repeatedCalls(spans []UsageSpan) []bool {
	out := make([]bool, len(spans))
	type buckets struct{ in, cacheRead, cacheWrite, out uint64 }
	groups := map[buckets][]int{}
	parents := map[string]bool{}
	for i, s := range spans {
		if s.SpanType != schema.TypeInference || !HasOwnUsage(s.UsageMode) {
			continue
		}
		if s.ParentID != s.ID {
			parents[s.ParentID] = true
		}
		k := buckets{s.Input, s.CacheRead, s.CacheWrite, s.Output}
		groups[k] = append(groups[k], i)
	}
	for _, g := range groups {
		for _, i := range g {
			out[i] = parents[spans[i].ID]
		}
		if len(g) < 2 {
			continue
		}
		slices.SortFunc(g, func(a, b int) int {
			x, y := spans[a], spans[b]
			return cmp.Or(cmp.Compare(x.StartNs, y.StartNs), cmp.Compare(x.EndNs, y.EndNs), strings.Compare(x.ID, y.ID))
		})
		minEnd := ^uint64(0) // the smallest end of the spans starting later
		for k := len(g) - 1; k >= 0; {
			j := k
			for j > 0 && spans[g[j-1]].StartNs == spans[g[k]].StartNs {
				j--
			}
			for m := j; m <= k; m++ {
				if m > j || minEnd <= spans[g[m]].EndNs {
					out[g[m]] = true
				}
			}
			for m := j; m <= k; m++ {
				minEnd = min(minEnd, spans[g[m]].EndNs)
			}
			k = j - 1
		}
	}
	return out
}

// HasOwnUsage reports whether a usage mode is a span's own usage (not none,
// not aggregated).
func HasOwnUsage(mode string) bool {
	return mode != schema.UsageNone && mode != schema.UsageAggregated
}

// CostCounts reports whether a span's cost counts: its usage counts, or it
// carries a cost without usage (rule 3).
func CostCounts(usageCounted bool, mode string) bool {
	return usageCounted || mode == schema.UsageNone
}

// RecordedCalls returns, for each span of one run (deduplicated, in start
// order), whether it is a usage record whose call another span is: of r
// records and q request spans, the first min(r, q) records.
func RecordedCalls(spans []UsageSpan) []bool {
	requests := 0
	for _, s := range spans {
		if s.SpanType == schema.TypeInference && !s.Record && s.UsageMode == schema.UsageNone {
			requests++
		}
	}
	out := make([]bool, len(spans))
	for i, s := range spans {
		if requests == 0 {
			break
		}
		if s.SpanType == schema.TypeInference && s.Record {
			out[i] = true
			requests--
		}
	}
	return out
}
