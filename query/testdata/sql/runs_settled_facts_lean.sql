SELECT trace_id, root_name, task, s_ns, e_ns, n_err, run_err, c_total, fingerprint, arrayStringConcat(arrayMap(x -> concat(toString(length(x)), ':', x), verdicts)),
	toUInt8(deleted = 0 AND s_ns >= ? AND s_ns <= ?) AS keep, toUInt32(row_start) AS row_start_s FROM (SELECT trace_id, name AS root_name, name AS first_name, task, service AS svc, agents, models,
	conversation_id AS conv, user_id AS usr, start_ns AS s_ns, end_ns AS e_ns, spans AS n_spans, llm_calls AS n_llm,
	tool_calls AS n_tool, errors AS n_err, failed AS run_err, toUInt64(0) AS n_usage, from_aggregate AS from_agg,
	input_tokens AS in_t, cache_read_tokens AS cr_t, cache_write_tokens AS cw_t, output_tokens AS out_t,
	reasoning_tokens AS rs_t, cost_total AS c_total, cost_input AS c_in, cost_cache_read AS c_cr,
	cost_cache_write AS c_cw, cost_output AS c_out, cost_exact AS cf_exact, cost_upper_bound AS cf_upper,
	cost_lower_bound AS cf_lower, cost_corrected AS cf_corr, cost_approximate AS cf_approx,
	unpriced_spans AS n_unpriced, unreconciled_spans AS n_unrec,
	tool_retries AS n_retries, tool_repeats AS n_repeats, deleted, fingerprint, verdicts, start AS row_start, version AS row_version FROM `tally`.`runs` WHERE project = ? AND start >= ? AND start <= ?)
ORDER BY row_start_s DESC, trace_id DESC, row_version DESC
-- parameters:
-- uint64 1796083200000000000
-- uint64 1796169600000000000
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
