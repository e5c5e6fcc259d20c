SELECT trace_id, root_name, first_name, task, svc, agents, models, conv, usr, s_ns, e_ns,
	n_spans, n_llm, n_tool, n_err, run_err, n_usage, from_agg, in_t, cr_t, cw_t, out_t, rs_t,
	c_total, c_in, c_cr, c_cw, c_out, cf_exact, cf_upper, cf_lower, cf_corr, cf_approx, n_unpriced, n_unrec, sort_key FROM (SELECT 
	trace_id,
	argMinIf(name, start_ns, parent_span_id = '') AS root_name,
	argMin(name, start_ns) AS first_name,
	anyIf(task_name, task_name != '') AS task,
	argMin(service, start_ns) AS svc,
	arraySort(groupUniqArrayIf(agent_name, agent_name != '')) AS agents,
	arraySort(groupUniqArrayIf(model, model != '' AND span_type = 'inference')) AS models,
	anyIf(conversation_id, conversation_id != '') AS conv,
	anyIf(user_id, user_id != '') AS usr,
	min(start_ns) AS s_ns,
	max(end_ns) AS e_ns,
	count() AS n_spans,
	toUInt64(countIf(span_type = 'inference') - length(_sup) - least(countIf(span_type = 'inference' AND usage_record = 1),
		countIf(span_type = 'inference' AND usage_record = 0 AND usage_mode = ''))) AS n_llm,
	countIf(span_type = 'tool') AS n_tool,
	countIf(status = 'error') AS n_err,
	toUInt8(if(countIf(parent_span_id = '') > 0, argMinIf(status, start_ns, parent_span_id = '') = 'error',
		n_err > 0 AND maxIf(end_ns, status = 'error') = e_ns)) AS run_err,
	
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
	toFloat64(sumIf(cost_output, usage_mode != 'aggregated') - arraySum(arrayMap(x -> tupleElement(x, 14), _sup)) + if(from_agg = 1, tupleElement(_agg, 10), 0)) AS c_out,
	toFloat64(sumIf(cost_total, usage_mode != 'aggregated' AND cost_confidence = 'exact') - arraySum(arrayMap(x -> if(tupleElement(x, 15) = 'exact', tupleElement(x, 10), 0), _sup)) + if(from_agg = 1 AND tupleElement(_agg, 11) = 'exact', tupleElement(_agg, 6), 0)) AS cf_exact,
	toFloat64(sumIf(cost_total, usage_mode != 'aggregated' AND cost_confidence = 'upper_bound') - arraySum(arrayMap(x -> if(tupleElement(x, 15) = 'upper_bound', tupleElement(x, 10), 0), _sup)) + if(from_agg = 1 AND tupleElement(_agg, 11) = 'upper_bound', tupleElement(_agg, 6), 0)) AS cf_upper,
	toFloat64(sumIf(cost_total, usage_mode != 'aggregated' AND cost_confidence = 'lower_bound') - arraySum(arrayMap(x -> if(tupleElement(x, 15) = 'lower_bound', tupleElement(x, 10), 0), _sup)) + if(from_agg = 1 AND tupleElement(_agg, 11) = 'lower_bound', tupleElement(_agg, 6), 0)) AS cf_lower,
	toFloat64(sumIf(cost_total, usage_mode != 'aggregated' AND cost_confidence = 'corrected') - arraySum(arrayMap(x -> if(tupleElement(x, 15) = 'corrected', tupleElement(x, 10), 0), _sup)) + if(from_agg = 1 AND tupleElement(_agg, 11) = 'corrected', tupleElement(_agg, 6), 0)) AS cf_corr,
	toFloat64(sumIf(cost_total, usage_mode != 'aggregated' AND cost_confidence = 'approximate') - arraySum(arrayMap(x -> if(tupleElement(x, 15) = 'approximate', tupleElement(x, 10), 0), _sup)) + if(from_agg = 1 AND tupleElement(_agg, 11) = 'approximate', tupleElement(_agg, 6), 0)) AS cf_approx,
	countIf(cost_source = 'unpriced' AND usage_mode != 'aggregated') AS n_unpriced,
	countIf(usage_unreconciled = 1) AS n_unrec,
	toUInt64(s_ns) AS sort_key
FROM `tally`.`spans` FINAL
PREWHERE project = ? AND trace_id IN (SELECT trace_id FROM `tally`.`span_facts` WHERE project = ? AND start >= ? GROUP BY trace_id HAVING min(start_ns) >= ?) AND trace_id IN (SELECT trace_id FROM `tally`.`span_facts` WHERE project = ? AND version > ? AND start >= ? GROUP BY trace_id)
GROUP BY trace_id
HAVING s_ns >= ? AND has(agents, ?) AND (startsWith(trace_id, ?) OR conv = ? OR positionCaseInsensitive(arrayStringConcat(groupUniqArray(name), '\n'), ?) > 0)
ORDER BY sort_key DESC, trace_id DESC
LIMIT 51)
ORDER BY sort_key DESC, trace_id DESC
-- parameters:
-- string p
-- string p
-- time.Time 2026-11-30 23:00:00 +0000 UTC
-- uint64 1796083200000000000
-- string p
-- uint64 1234
-- time.Time 2026-11-30 23:00:00 +0000 UTC
-- uint64 1796083200000000000
-- string planner
-- string abc
-- string ABC
-- string ABC
