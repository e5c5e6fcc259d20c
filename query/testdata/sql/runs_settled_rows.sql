SELECT trace_id, root_name, first_name, task, svc, agents, models, conv, usr, s_ns, e_ns,
	n_spans, n_llm, n_tool, n_err, run_err, n_usage, from_agg, in_t, cr_t, cw_t, out_t, rs_t,
	c_total, c_in, c_cr, c_cw, c_out, cf_exact, cf_upper, cf_lower, cf_corr, cf_approx, n_unpriced, n_unrec, n_retries, n_repeats, version FROM (SELECT trace_id, name AS root_name, name AS first_name, task, service AS svc, agents, models,
	conversation_id AS conv, user_id AS usr, start_ns AS s_ns, end_ns AS e_ns, spans AS n_spans, llm_calls AS n_llm,
	tool_calls AS n_tool, errors AS n_err, failed AS run_err, toUInt64(0) AS n_usage, from_aggregate AS from_agg,
	input_tokens AS in_t, cache_read_tokens AS cr_t, cache_write_tokens AS cw_t, output_tokens AS out_t,
	reasoning_tokens AS rs_t, cost_total AS c_total, cost_input AS c_in, cost_cache_read AS c_cr,
	cost_cache_write AS c_cw, cost_output AS c_out, cost_exact AS cf_exact, cost_upper_bound AS cf_upper,
	cost_lower_bound AS cf_lower, cost_corrected AS cf_corr, cost_approximate AS cf_approx,
	unpriced_spans AS n_unpriced, unreconciled_spans AS n_unrec,
	tool_retries AS n_retries, tool_repeats AS n_repeats, deleted, start, version FROM `tally`.`runs` PREWHERE project = ? AND start IN (1796083200, 1796083260) AND trace_id IN ?
ORDER BY version DESC LIMIT 1 BY start, trace_id)
WHERE deleted = 0
-- parameters:
-- string p
-- clickhouse.GroupSet {[t1 t2]}
