package query

// runCountedSQL is the SQL twin of attribution.CountedUsage: it applies the
// counting rule of attribution/counted.go ("counted once, always") inside
// ClickHouse, so that run lists and budgets need not load spans. A change to
// one is a change to both; the conformance and golden tests hold them equal.
//
// It is the part of a per-run SELECT list (over one run's
// deduplicated spans, GROUP BY trace_id) that applies the counting rule. It
// defines n_usage (spans counted by rule 1), from_agg (1 when rule 2
// applied), in_t, cr_t, cw_t, out_t, rs_t (tokens) and c_total, c_in, c_cr,
// c_cw, c_out (USD).
//
// _inf holds the run's inference spans with usage as tuples (span_id,
// parent_span_id, start_ns, end_ns, the five buckets, the five costs, the
// cost confidence); _sup
// those that rule 1 leaves out (attribution.SameCall); _agg the largest
// aggregated span's buckets and costs.
//
// SameCall's two cases are found without comparing pairs, in time linear
// in a run's calls (n log n for one sort): a lambda that captures an array
// copies it once per element, so any pairwise test grows memory with the
// square of the calls (20,000 calls of identical usage asked for 10 GiB,
// issue #41). A wrapper (_wrapper) is a span whose id is some other call's
// parent: arrayEnumerateUniq over parents ++ ids counts, for each id, the
// parents equal to it. A contained twin needs the same buckets, so only
// calls whose buckets repeat (_dup: their count over keys ++ keys exceeds
// their rank by 2 or more; the keys hashed, _kh, which keeps the expanded
// query small, while the groups below compare the buckets themselves, so a
// collision only lets a call be looked at) are looked at (_same), the way
// attribution.repeatedCalls does. Sorted by buckets, start descending, end
// and id (_srt), and paired with the call before it, each call gets (_z):
// whether it starts its bucket group (g), its id, its end, the previous
// call's end, whether it is the first of the group's calls with its start,
// and the difference of its end from the previous one (−2^62 at a group's
// start). A call is contained when it is not the first with its start (that
// first one, of the same start and no later end, lies within it), or when a
// call of its group starting strictly later ends no later than it does: the
// minimum end of the calls before it in the group, which is the previous
// end less arrayCumSumNonNegative of the differences shifted by one (a
// running minimum: the cumulative sum restarts at 0 at each group, and the
// shift makes it cover the calls before, not the call). _inner marks the
// contained in _inf the same way as _wrapper. Each alias is used as few
// times as possible: ClickHouse 18.16 expands aliases, and a query over
// 500,000 expanded elements is refused, while a smaller one is analyzed
// faster (the ids' counts are sliced from the end, -length(_ids), so the
// array concatenated before them is used once). Lambdas refer only to their own
// arguments: 18.16 drops the columns behind an alias that is used only
// inside a lambda when an outer query does not select it.
const runCountedSQL = `
	groupArrayIf((span_id, parent_span_id, start_ns, end_ns,
		input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
		cost_total, cost_input, cost_cache_read, cost_cache_write, cost_output, cost_confidence),
		span_type = 'inference' AND usage_mode NOT IN ('', 'aggregated')) AS _inf,
	arrayMap(x -> tupleElement(x, 1), _inf) AS _ids,
	arrayMap(x -> if(tupleElement(x, 2) = tupleElement(x, 1), '', tupleElement(x, 2)), _inf) AS _parents,
	arrayMap(v -> v >= 2, arraySlice(arrayEnumerateUniq(arrayConcat(_parents, _ids)), -length(_ids))) AS _wrapper,
	arrayMap(x -> cityHash64(tupleElement(x, 5), tupleElement(x, 6), tupleElement(x, 7), tupleElement(x, 8)), _inf) AS _kh,
	arrayMap((twice, once) -> twice - once >= 2,
		arraySlice(arrayEnumerateUniq(arrayConcat(_kh, _kh)), -length(_kh)), arrayEnumerateUniq(_kh)) AS _dup,
	arrayFilter((x, d) -> d, _inf, _dup) AS _same,
	arraySort(x -> (tupleElement(x, 5), tupleElement(x, 6), tupleElement(x, 7), tupleElement(x, 8),
		-toInt64(tupleElement(x, 3)), tupleElement(x, 4), tupleElement(x, 1)), _same) AS _srt,
	arrayMap((x, p) -> ((tupleElement(x, 1) = tupleElement(p, 1) OR tupleElement(x, 5) != tupleElement(p, 5) OR
			tupleElement(x, 6) != tupleElement(p, 6) OR tupleElement(x, 7) != tupleElement(p, 7) OR tupleElement(x, 8) != tupleElement(p, 8)) AS g,
		tupleElement(x, 1), toInt64(tupleElement(x, 4)), toInt64(tupleElement(p, 4)),
		g OR tupleElement(x, 3) != tupleElement(p, 3),
		if(g, toInt64(-4611686018427387904), toInt64(tupleElement(x, 4)) - toInt64(tupleElement(p, 4)))),
		_srt, arrayPopBack(arrayPushFront(_srt, _srt[1]))) AS _z,
	arrayMap(t -> tupleElement(t, 2), arrayFilter((t, c) -> NOT tupleElement(t, 5) OR (NOT tupleElement(t, 1) AND tupleElement(t, 4) - c <= tupleElement(t, 3)),
		_z, arrayCumSumNonNegative(arrayPopBack(arrayPushFront(arrayMap(t -> tupleElement(t, 6), _z), toInt64(-4611686018427387904)))))) AS _contained,
	arrayMap(v -> v >= 2, arraySlice(arrayEnumerateUniq(arrayConcat(_contained, _ids)), -length(_ids))) AS _inner,
	arrayFilter((x, w, c) -> w OR c, _inf, _wrapper, _inner) AS _sup,
	toUInt64(countIf(usage_mode NOT IN ('', 'aggregated')) - length(_sup)) AS n_usage,
	argMaxIf((input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
		cost_total, cost_input, cost_cache_read, cost_cache_write, cost_output, cost_confidence),
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

// runConfidenceSQL follows runCountedSQL in a run's SELECT list: the counted
// cost by confidence (schema.ConfidenceSpend), cf_exact … cf_approx, taken
// like c_total (the spans that count by rules 1 and 3, less those rule 1
// leaves out, plus the aggregated span of rule 2).
const runConfidenceSQL = `
	toFloat64(sumIf(cost_total, usage_mode != 'aggregated' AND cost_confidence = 'exact') - arraySum(arrayMap(x -> if(tupleElement(x, 15) = 'exact', tupleElement(x, 10), 0), _sup)) + if(from_agg = 1 AND tupleElement(_agg, 11) = 'exact', tupleElement(_agg, 6), 0)) AS cf_exact,
	toFloat64(sumIf(cost_total, usage_mode != 'aggregated' AND cost_confidence = 'upper_bound') - arraySum(arrayMap(x -> if(tupleElement(x, 15) = 'upper_bound', tupleElement(x, 10), 0), _sup)) + if(from_agg = 1 AND tupleElement(_agg, 11) = 'upper_bound', tupleElement(_agg, 6), 0)) AS cf_upper,
	toFloat64(sumIf(cost_total, usage_mode != 'aggregated' AND cost_confidence = 'lower_bound') - arraySum(arrayMap(x -> if(tupleElement(x, 15) = 'lower_bound', tupleElement(x, 10), 0), _sup)) + if(from_agg = 1 AND tupleElement(_agg, 11) = 'lower_bound', tupleElement(_agg, 6), 0)) AS cf_lower,
	toFloat64(sumIf(cost_total, usage_mode != 'aggregated' AND cost_confidence = 'corrected') - arraySum(arrayMap(x -> if(tupleElement(x, 15) = 'corrected', tupleElement(x, 10), 0), _sup)) + if(from_agg = 1 AND tupleElement(_agg, 11) = 'corrected', tupleElement(_agg, 6), 0)) AS cf_corr,
	toFloat64(sumIf(cost_total, usage_mode != 'aggregated' AND cost_confidence = 'approximate') - arraySum(arrayMap(x -> if(tupleElement(x, 15) = 'approximate', tupleElement(x, 10), 0), _sup)) + if(from_agg = 1 AND tupleElement(_agg, 11) = 'approximate', tupleElement(_agg, 6), 0)) AS cf_approx`
