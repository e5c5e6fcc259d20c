SELECT conv FROM (
SELECT conv, e_ns AS last_ns FROM (
SELECT conv, s_ns, e_ns, n_err, in_t, cr_t, cw_t, out_t, rs_t, c_total, c_in, c_cr, c_cw, c_out FROM (SELECT trace_id, deleted, conversation_id AS conv, start_ns AS s_ns, end_ns AS e_ns,
	errors AS n_err, input_tokens AS in_t, cache_read_tokens AS cr_t, cache_write_tokens AS cw_t,
	output_tokens AS out_t, reasoning_tokens AS rs_t, cost_total AS c_total, cost_input AS c_in,
	cost_cache_read AS c_cr, cost_cache_write AS c_cw, cost_output AS c_out FROM `tally`.`runs` FINAL WHERE project = ?)
WHERE deleted = 0 AND conv != ''
)
ORDER BY last_ns DESC, conv DESC
LIMIT 1 BY conv
)
ORDER BY last_ns DESC, conv DESC
LIMIT 51
-- parameters:
-- string p
