SELECT conv, trace_id, row_start_s, row_version, settled FROM (
SELECT conv, e_ns, trace_id, toUInt32(0) AS row_start_s, toUInt64(0) AS row_version, toUInt8(0) AS settled FROM (SELECT 
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
	countIf(usage_unreconciled = 1) AS n_unrec
FROM `tally`.`spans` FINAL
PREWHERE project = ? AND trace_id IN ?
GROUP BY trace_id
HAVING s_ns >= ? AND conv != '' AND e_ns >= 1796083260500000000)
UNION ALL
SELECT conv, e_ns, trace_id, toUInt32(row_start) AS row_start_s, row_version, toUInt8(1) AS settled FROM (SELECT trace_id, name AS root_name, name AS first_name, task, service AS svc, agents, models,
	conversation_id AS conv, user_id AS usr, start_ns AS s_ns, end_ns AS e_ns, spans AS n_spans, llm_calls AS n_llm,
	tool_calls AS n_tool, errors AS n_err, failed AS run_err, toUInt64(0) AS n_usage, from_aggregate AS from_agg,
	input_tokens AS in_t, cache_read_tokens AS cr_t, cache_write_tokens AS cw_t, output_tokens AS out_t,
	reasoning_tokens AS rs_t, cost_total AS c_total, cost_input AS c_in, cost_cache_read AS c_cr,
	cost_cache_write AS c_cw, cost_output AS c_out, cost_exact AS cf_exact, cost_upper_bound AS cf_upper,
	cost_lower_bound AS cf_lower, cost_corrected AS cf_corr, cost_approximate AS cf_approx,
	unpriced_spans AS n_unpriced, unreconciled_spans AS n_unrec,
	tool_retries AS n_retries, tool_repeats AS n_repeats, deleted, start AS row_start, version AS row_version FROM `tally`.`runs` WHERE project = ? AND start >= ? AND end_ns >= 1796083260500000000)
WHERE deleted = 0 AND conv != '' AND s_ns >= ? AND trace_id NOT IN ?
)
ORDER BY e_ns DESC, conv DESC, row_version DESC
LIMIT 1 BY conv
LIMIT 51
-- parameters:
-- string p
-- clickhouse.GroupSet {[t1]}
-- uint64 1796083200000000000
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- clickhouse.GroupSet {[t1]}
