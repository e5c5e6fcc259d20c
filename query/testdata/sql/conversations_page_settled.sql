SELECT conv FROM (
SELECT conv, e_ns AS last_ns FROM (
SELECT conv, s_ns, e_ns, n_err, in_t, cr_t, cw_t, out_t, rs_t, c_total, c_in, c_cr, c_cw, c_out FROM (SELECT * FROM (SELECT trace_id, name AS root_name, name AS first_name, task, service AS svc, agents, models,
	conversation_id AS conv, user_id AS usr, start_ns AS s_ns, end_ns AS e_ns, spans AS n_spans, llm_calls AS n_llm,
	tool_calls AS n_tool, errors AS n_err, failed AS run_err, toUInt64(0) AS n_usage, from_aggregate AS from_agg,
	input_tokens AS in_t, cache_read_tokens AS cr_t, cache_write_tokens AS cw_t, output_tokens AS out_t,
	reasoning_tokens AS rs_t, cost_total AS c_total, cost_input AS c_in, cost_cache_read AS c_cr,
	cost_cache_write AS c_cw, cost_output AS c_out, cost_exact AS cf_exact, cost_upper_bound AS cf_upper,
	cost_lower_bound AS cf_lower, cost_corrected AS cf_corr, cost_approximate AS cf_approx,
	unpriced_spans AS n_unpriced, unreconciled_spans AS n_unrec,
	tool_retries AS n_retries, tool_repeats AS n_repeats, deleted FROM `tally`.`runs` FINAL WHERE project = ?
SETTINGS max_read_buffer_size = 65536)
WHERE deleted = 0)
WHERE conv != ''
)
ORDER BY last_ns DESC, conv DESC
LIMIT 1 BY conv
)
ORDER BY last_ns DESC, conv DESC
LIMIT 51
-- parameters:
-- string p
