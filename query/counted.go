package query

import (
	"slices"

	"github.com/tallyhq/tally/schema"
)

// Which spans' usage and cost count in a run's totals — "counted once,
// always". The rule, decided the same way by countedUsage (Go, for
// attribution and single runs) and runCountedSQL (ClickHouse, for run lists):
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

// usageSpan is what the counting rule reads of a span.
type usageSpan struct {
	id, parent string
	spanType   string
	mode       string
	start, end uint64
	in, cr, cw uint64
	out        uint64
}

// size orders aggregated spans (rule 2).
func (s usageSpan) size() uint64 { return s.in + s.out }

// sameCall reports whether y reports the same call as x (rule 1), so that x
// does not count.
func sameCall(x, y usageSpan) bool {
	if y.id == x.id {
		return false
	}
	if y.parent == x.id {
		return true
	}
	return y.start >= x.start && y.end <= x.end && y.in == x.in && y.out == x.out && y.cr == x.cr && y.cw == x.cw &&
		(y.start > x.start || y.end < x.end || y.id < x.id)
}

// countedUsage returns, for each span of one run (deduplicated), whether its
// usage counts, and whether the run's usage came from an aggregated span
// (rule 2).
func countedUsage(spans []usageSpan) (counted []bool, fromAggregate bool) {
	counted = make([]bool, len(spans))
	var inference []int
	for i, s := range spans {
		if s.spanType == schema.TypeInference && hasOwnUsage(s.mode) {
			inference = append(inference, i)
		}
	}
	n, largest := 0, -1
	for i, s := range spans {
		switch {
		case s.mode == schema.UsageAggregated:
			if largest < 0 || s.size() > spans[largest].size() {
				largest = i
			}
		case hasOwnUsage(s.mode):
			if s.spanType == schema.TypeInference && slices.ContainsFunc(inference, func(j int) bool { return sameCall(s, spans[j]) }) {
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

// hasOwnUsage reports whether a usage mode is a span's own usage (not none,
// not aggregated).
func hasOwnUsage(mode string) bool {
	return mode != schema.UsageNone && mode != schema.UsageAggregated
}

// costCounts reports whether a span's cost counts: its usage counts, or it
// carries a cost without usage (rule 3).
func costCounts(usageCounted bool, mode string) bool {
	return usageCounted || mode == schema.UsageNone
}

// runCountedSQL is the part of a per-run SELECT list (over one run's
// deduplicated spans, GROUP BY trace_id) that applies the counting rule. It
// defines n_usage (spans counted by rule 1), from_agg (1 when rule 2
// applied), in_t, cr_t, cw_t, out_t, rs_t (tokens) and c_total, c_in, c_cr,
// c_cw, c_out (USD).
//
// _inf holds the run's inference spans with usage as tuples (span_id,
// parent_span_id, start_ns, end_ns, the five buckets, the five costs); _sup
// those that rule 1 leaves out (the lambda is sameCall); _agg the largest
// aggregated span's buckets and costs. Lambdas refer only to their own
// arguments: ClickHouse 18.16 drops the columns behind an alias that is used
// only inside a lambda when an outer query does not select it.
const runCountedSQL = `
	groupArrayIf((span_id, parent_span_id, start_ns, end_ns,
		input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
		cost_total, cost_input, cost_cache_read, cost_cache_write, cost_output),
		span_type = 'inference' AND usage_mode NOT IN ('', 'aggregated')) AS _inf,
	arrayFilter(x -> arrayExists(y -> tupleElement(y, 1) != tupleElement(x, 1) AND (tupleElement(y, 2) = tupleElement(x, 1) OR
		(tupleElement(y, 3) >= tupleElement(x, 3) AND tupleElement(y, 4) <= tupleElement(x, 4) AND
		 tupleElement(y, 5) = tupleElement(x, 5) AND tupleElement(y, 8) = tupleElement(x, 8) AND
		 tupleElement(y, 6) = tupleElement(x, 6) AND tupleElement(y, 7) = tupleElement(x, 7) AND
		 (tupleElement(y, 3) > tupleElement(x, 3) OR tupleElement(y, 4) < tupleElement(x, 4) OR tupleElement(y, 1) < tupleElement(x, 1)))), _inf), _inf) AS _sup,
	toUInt64(countIf(usage_mode NOT IN ('', 'aggregated')) - length(_sup)) AS n_usage,
	argMaxIf((input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
		cost_total, cost_input, cost_cache_read, cost_cache_write, cost_output),
		input_tokens + output_tokens, usage_mode = 'aggregated') AS _agg,
	toUInt8(n_usage = 0 AND countIf(usage_mode = 'aggregated') > 0) AS from_agg,
	toUInt64(sumIf(input_tokens, usage_mode NOT IN ('', 'aggregated')) - arraySum(arrayMap(x -> tupleElement(x, 5), _sup)) + if(from_agg = 1, tupleElement(_agg, 1), 0)) AS in_t,
	toUInt64(sumIf(cache_read_tokens, usage_mode NOT IN ('', 'aggregated')) - arraySum(arrayMap(x -> tupleElement(x, 6), _sup)) + if(from_agg = 1, tupleElement(_agg, 2), 0)) AS cr_t,
	toUInt64(sumIf(cache_write_tokens, usage_mode NOT IN ('', 'aggregated')) - arraySum(arrayMap(x -> tupleElement(x, 7), _sup)) + if(from_agg = 1, tupleElement(_agg, 3), 0)) AS cw_t,
	toUInt64(sumIf(output_tokens, usage_mode NOT IN ('', 'aggregated')) - arraySum(arrayMap(x -> tupleElement(x, 8), _sup)) + if(from_agg = 1, tupleElement(_agg, 4), 0)) AS out_t,
	toUInt64(sumIf(reasoning_tokens, usage_mode NOT IN ('', 'aggregated')) - arraySum(arrayMap(x -> tupleElement(x, 9), _sup)) + if(from_agg = 1, tupleElement(_agg, 5), 0)) AS rs_t,
	toFloat64(sumIf(cost_total, usage_mode != 'aggregated') - arraySum(arrayMap(x -> tupleElement(x, 10), _sup)) + if(from_agg = 1, tupleElement(_agg, 6), 0)) AS c_total,
	toFloat64(sumIf(cost_input, usage_mode != 'aggregated') - arraySum(arrayMap(x -> tupleElement(x, 11), _sup)) + if(from_agg = 1, tupleElement(_agg, 7), 0)) AS c_in,
	toFloat64(sumIf(cost_cache_read, usage_mode != 'aggregated') - arraySum(arrayMap(x -> tupleElement(x, 12), _sup)) + if(from_agg = 1, tupleElement(_agg, 8), 0)) AS c_cr,
	toFloat64(sumIf(cost_cache_write, usage_mode != 'aggregated') - arraySum(arrayMap(x -> tupleElement(x, 13), _sup)) + if(from_agg = 1, tupleElement(_agg, 9), 0)) AS c_cw,
	toFloat64(sumIf(cost_output, usage_mode != 'aggregated') - arraySum(arrayMap(x -> tupleElement(x, 14), _sup)) + if(from_agg = 1, tupleElement(_agg, 10), 0)) AS c_out`
